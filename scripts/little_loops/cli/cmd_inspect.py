"""Read-only commands: `list`, `status` and `history`'s reference lines (`cmd_history`).
None of them creates a file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from little_loops.cli import orphans
from little_loops.cli.error_list import error_lines
from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.host_text import host_lines
from little_loops.cli.liveness import Owner, describe_status, owner_of, process_alive
from little_loops.cli.loop_catalog import LoopEntry, catalog
from little_loops.cli.output import NO_PROMPT, Logger, write_line
from little_loops.cli.resolve import LOOPS_DIR, loop_name_for
from little_loops.cli.spending_text import spending_line
from little_loops.cli.status_guide import action_lines, elapsed_line, next_line, stop_reason
from little_loops.fsm.engine.spending import format_cost
from little_loops.fsm.errors import StateFileError
from little_loops.fsm.persistence import RUNNING_DIR, LoopState, StatePersistence
from little_loops.fsm.store.run_history import LIVE_STATUSES, UNFINISHED_STATUSES

STATUS_PROMPT_WIDTH = 200
# Errors `status` lists (all of them, up to 50, are in `--json`), with their stderr tails.
STATUS_ERRORS = 10
STATUS_STDERR_LINES = 20
# Saved runs `list --running` shows: live, paused, or resumable after an interruption
# or a stall.

# Not "Running loops:" (the reference's title): paused and interrupted runs are listed too.
UNFINISHED_TITLE = "Unfinished runs:"


def _state_json(state: LoopState) -> dict[str, Any]:
    return {**state.to_dict(), "process_alive": process_alive(state)}


# --- list ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListFilter:
    """`list` flags: which visibilities (None: `public`, the rest counted as hidden),
    a category, labels (any of them, case-insensitive)."""

    visibility: str | None = None
    category: str | None = None
    labels: tuple[str, ...] = ()

    def shows(self, entry: LoopEntry) -> bool:
        if self.visibility not in (None, "all") and entry.visibility != self.visibility:
            return False
        if self.category is not None and entry.category != self.category:
            return False
        wanted = {label.lower() for label in self.labels}
        return not wanted or bool(wanted & {label.lower() for label in entry.labels})

    def hides(self, entry: LoopEntry) -> bool:
        """Hidden by the default view only (not by a filter the user gave)."""
        return self.visibility is None and entry.visibility != "public"


def list_command(
    *, running: bool = False, as_json: bool = False, only: ListFilter | None = None
) -> int:
    """`ll-loop list`: loop files in `.loops/`, or (`--running`) unfinished runs."""
    if running:
        return _list_running(as_json)
    if not LOOPS_DIR.is_dir():
        write_line("[]" if as_json else "No .loops/ directory found")
        return OK
    only = only or ListFilter()
    matching = [entry for entry in catalog(LOOPS_DIR) if only.shows(entry)]
    shown = [entry for entry in matching if not only.hides(entry)]
    if as_json:
        write_line(json.dumps([entry.to_json() for entry in shown]))
    elif not shown:
        write_line("No loops defined")
    else:
        write_line("Available loops:")
        for line in _loop_lines(shown):
            write_line(line)
    hidden = len(matching) - len(shown)
    if hidden and not as_json:
        write_line(f"({hidden} hidden: internal or example; show them with --all)")
    return OK


def _loop_lines(entries: list[LoopEntry]) -> list[str]:
    """`  name` as today; a HEAD loop's description follows, names aligned."""
    width = max(len(entry.name) for entry in entries)
    return [
        f"  {entry.name.ljust(width)}  {entry.description}"
        if entry.description
        else f"  {entry.name}"
        for entry in entries
    ]


def _list_running(as_json: bool) -> int:
    shown = [state for state in _readable_states() if state.status in UNFINISHED_STATUSES]
    if as_json:
        write_line(json.dumps([_state_json(state) for state in shown]))
    elif not shown:
        write_line("No running loops")
    else:
        write_line(UNFINISHED_TITLE)
        for state in shown:
            write_line(
                f"  {state.loop_name}: {state.current_state} "
                f"(iteration {state.current_iteration()}) - {_short_status(state)}"
            )
    return OK


def _short_status(state: LoopState) -> str:
    if state.status not in LIVE_STATUSES:
        return state.status
    owner = owner_of(state)
    if owner is Owner.GONE:
        return f"interrupted (process {state.pid} gone)"
    return describe_status(state, state.loop_name)


def _readable_states() -> list[LoopState]:
    """Every saved state, sorted by loop name; damaged files are reported and skipped."""
    running_dir = LOOPS_DIR / RUNNING_DIR
    if not running_dir.is_dir():
        return []
    logger = Logger()
    states = []
    for path in sorted(running_dir.glob("*.state.json")):
        name = path.name.removesuffix(".state.json")
        try:
            state = StatePersistence(name, LOOPS_DIR).load_state_checked()
        except StateFileError as exc:
            # On stderr, so that `list --running --json` stays one JSON document on stdout.
            logger.warning(f"Skipping unreadable state file {exc.path}: {exc.problem}")
            continue
        if state is not None:
            states.append(state)
    return sorted(states, key=lambda state: state.loop_name)


# --- status ----------------------------------------------------------------------------


def status_command(loop_arg: str, *, as_json: bool = False) -> int:
    """`ll-loop status <loop>`: the saved state, with whether its process still runs."""
    name = loop_name_for(loop_arg)
    persistence = StatePersistence(name, LOOPS_DIR)
    state = persistence.load_state_checked()
    if state is None:
        Logger().error(f"No state found for: {loop_arg}")
        return FAILED
    if as_json:
        write_line(json.dumps(_state_json(state), indent=2))
        return OK
    for line in status_lines(state, loop_arg, persistence):
        write_line(line)
    return OK


def status_lines(
    state: LoopState, loop_arg: str, persistence: StatePersistence | None = None
) -> list[str]:
    """The reference lines, plus liveness and why the run stopped, its elapsed time, the
    action under way (with `persistence`, where its events are), the next command, the
    last verdict, the error when known and the errors seen during the run."""
    elapsed = elapsed_line(state, datetime.now(UTC))
    lines = [
        f"Loop: {state.loop_name}",
        f"Status: {describe_status(state, loop_arg)}{stop_reason(state)}",
        *_orphan_lines(state),
        f"Current state: {state.current_state}",
        f"Iteration: {state.current_iteration()}",
        f"Started: {state.started_at}",
        f"Updated: {state.updated_at}",
    ]
    if state.last_result and state.last_result.get("verdict") is not None:
        lines.append(f"Last verdict: {state.last_result['verdict']}")
    if state.error:
        lines.append(f"Error: {state.error}")
    lines += [
        *([elapsed] if elapsed else []),
        *(action_lines(state, persistence) if persistence is not None else []),
        *filter(None, [next_line(state)]),
    ]
    spent = spending_line(state.spending)
    if spent is not None:
        lines.append(spent)
    lines += host_lines((state.head or {}).get("hosts"), datetime.now(UTC).timestamp())
    if state.max_cost_usd is not None:
        lines.append(f"Budget: {format_cost(state.max_cost_usd)} (--max-cost)")
    if state.status == "awaiting_continuation" and not state.continuation_prompt:
        lines.append(f"Continuation context: {NO_PROMPT}")
    if state.continuation_prompt:
        prompt = state.continuation_prompt
        if len(prompt) > STATUS_PROMPT_WIDTH:
            prompt = prompt[:STATUS_PROMPT_WIDTH] + "..."
        lines.append(f"Continuation context: {prompt}")
    errors = error_lines(
        state.errors, loop_arg, last=STATUS_ERRORS, stderr_lines=STATUS_STDERR_LINES
    )
    return lines + errors


def _orphan_lines(state: LoopState) -> list[str]:
    """Actions left running by a runner that died (`ll-loop stop` or `resume` end them)."""
    if not state.action_groups or owner_of(state) is Owner.ALIVE:
        return []
    return [orphans.status_line(group) for group in orphans.orphaned_groups(state)]


# --- history ---------------------------------------------------------------------------


def history_line(event: dict[str, Any]) -> str:
    """`<ts to the second, with its zone> <event>: <other keys as a Python dict literal>`
    (the reference's line, plus the zone the timestamp was written in)."""
    rest = {key: value for key, value in event.items() if key not in ("event", "ts")}
    return f"{_timestamp_to_second(event.get('ts', ''))} {event.get('event', '?')}: {rest!r}"


def _timestamp_to_second(ts: object) -> str:
    """`2026-11-21T23:18:41+00:00`; a timestamp without a zone (or not one) cut as before."""
    text = str(ts)
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return text[:19]
    if stamp.tzinfo is None:
        return text[:19]
    return stamp.isoformat(timespec="seconds")
