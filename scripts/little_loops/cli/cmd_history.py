"""`ll-loop history <loop>`: what a run did, as readable lines or as its raw events.

By default one readable line per state visit (see `history_lines`), the last `--tail` (50;
0: all) of them; `--state`, `--event` and `--since` choose events (`history_query`).
`--json` prints the chosen raw events as one array, `--jsonl` one a line, `--raw` the
reference's lines (`<ts> <event>: {dict}`). `--runs` lists the runs kept in
`.loops/.history/` and the latest; `--run N` shows run N of that list instead of the latest.
"""

from __future__ import annotations

import difflib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from little_loops.cli.cmd_inspect import history_line
from little_loops.cli.command_typos import SIMILARITY
from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.history_lines import readable_lines
from little_loops.cli.history_query import EventFilter, event_moment, states_of
from little_loops.cli.history_runs import Run, runs_of
from little_loops.cli.output import Logger, plural, write_error_line, write_line
from little_loops.cli.resolve import LOOPS_DIR, load_resolved, loop_name_for
from little_loops.fsm.engine.events import EVENT_NAMES
from little_loops.fsm.errors import LoopError
from little_loops.fsm.persistence import StatePersistence
from little_loops.fsm.store.state_files import parse_event_line, read_last_events

EVENTS_PER_LINE = 8
"""Events read per readable line asked for (a state visit is about five events), so that
`--tail 10` reads the end of a long events file only."""


def history_command(
    loop_arg: str,
    *,
    tail: int = 50,
    output: str = "lines",
    query: EventFilter | None = None,
    list_runs: bool = False,
    run: int | None = None,
) -> int:
    """`ll-loop history`; `output` is one of `HISTORY_OUTPUTS` (cli/output.py)."""
    name = loop_name_for(loop_arg)
    persistence = StatePersistence(name, LOOPS_DIR)
    if list_runs:
        runs = runs_of(LOOPS_DIR, persistence.running_dir, name)
        since = query.since if query is not None else None
        return _print_runs([run for run in runs if _active_since(run, since)], loop_arg, output)
    events_file = persistence.events_file
    if run is not None:
        chosen = _run_numbered(runs_of(LOOPS_DIR, persistence.running_dir, name), run, loop_arg)
        if chosen is None:
            return FAILED
        events_file = chosen.events_file
    query = query or EventFilter()
    events = _read(events_file, tail, output, query)
    unknown = (
        _unknown_state(loop_arg, query.state, events)
        or _unknown_events(query, events)
        or _unknown_event_names(query, events)
    )
    if unknown is not None:
        Logger().error(unknown)
        return FAILED
    if not events:
        # The reference said this and exited 0; like `status`, a loop that never ran is
        # now exit 1 (issue 23 item 14).
        write_line("[]" if output == "json" else f"No history for: {loop_arg}")
        return FAILED
    print_events(events, tail, output, query)
    return OK


def _unknown_events(query: EventFilter, events: list[dict[str, Any]]) -> str | None:
    """`--event` naming no event of the run: what to say, with the names it has."""
    if not query.events or not events:
        return None
    names = sorted({str(event.get("event")) for event in events})
    if any(name in names for name in query.events):
        return None
    asked = ", ".join(query.events)
    return f"--event {asked}: no such event in this run (its events: {', '.join(names)})"


def _unknown_event_names(query: EventFilter, events: list[dict[str, Any]]) -> str | None:
    """`--event` naming an event no run writes (`engine.events.EVENT_NAMES`) nor this run
    wrote, beside names that it did (or with no events at all): what to say, with the
    closest name when there is one."""
    written = {str(event.get("event")) for event in events}
    for asked in query.events:
        if asked in EVENT_NAMES or asked in written:
            continue
        close = difflib.get_close_matches(asked, sorted(EVENT_NAMES), n=1, cutoff=SIMILARITY)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"--event {asked}: ll-loop writes no such event{hint}"
    return None


def _unknown_state(loop_arg: str, state: str | None, events: list[dict[str, Any]]) -> str | None:
    """`--state` naming no state of the loop (when its file is found) nor of its run (a
    sub-loop's states are the child's): what to say."""
    if state is None or any(event.get("state") == state for event in events):
        return None
    try:
        _, fsm = load_resolved(loop_arg)
    except LoopError:
        return None  # a run kept under a name with no file: its events decide
    if state in fsm.states:
        return None
    return f"--state {state}: {fsm.name} has no such state (its states: {', '.join(fsm.states)})"


def _read(path: Path, tail: int, output: str, query: EventFilter) -> list[dict[str, Any]]:
    """All events when a filter needs them; else only the end the output shows."""
    if query.active or tail == 0:
        return _read_all(path)
    return read_last_events(path, tail * EVENTS_PER_LINE if output == "lines" else tail)


def _read_all(path: Path) -> list[dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except OSError:
        return []
    lines = [line for line in raw.split(b"\n") if line.strip()]
    events = [event for event in map(parse_event_line, lines) if event is not None]
    skipped = len(lines) - len(events)
    if skipped:  # said, not silently dropped (a crash mid-line, or a hand edit)
        write_error_line(f"note: {plural(skipped, 'line')} of {path} skipped: not an event")
    return events


def print_events(events: list[dict[str, Any]], tail: int, output: str, query: EventFilter) -> None:
    owners = states_of(events)
    keep = [query.keep(event, owner) for event, owner in zip(events, owners, strict=True)]
    if output == "lines":
        lines = readable_lines(events, keep.__getitem__, fold=not query.events)
    else:
        chosen = [event for event, kept in zip(events, keep, strict=True) if kept]
        if output == "json":
            write_line(json.dumps(chosen[-tail:] if tail else chosen))
            return
        lines = [
            json.dumps(event) if output == "jsonl" else history_line(event) for event in chosen
        ]
    lines = lines[-tail:] if tail else lines
    if not lines:
        write_line("No events match" if query.active else "No state visit has ended yet")
    for line in lines:
        write_line(line)


def _run_numbered(runs: list[Run], number: int, loop_arg: str) -> Run | None:
    for run in runs:
        if run.number == number:
            return run
    known = f"runs 1-{len(runs)}" if runs else "no runs kept"
    listing = f"ll-loop history {loop_arg} --runs"
    Logger().error(f"No run {number} of {loop_arg} ({known}; list them: {listing})")
    return None


def _active_since(run: Run, since: datetime | None) -> bool:
    """`--runs --since`: the runs that were under way at or after `since` (last saved then
    or later); without `since`, all."""
    if since is None:
        return True
    moment = event_moment({"ts": run.state.get("updated_at") or run.state.get("started_at")})
    return moment is not None and moment >= since


def _print_runs(runs: list[Run], loop_arg: str, output: str) -> int:
    if output in ("json", "jsonl"):
        items = [run.to_json() for run in runs]
        for line in [json.dumps(items)] if output == "json" else map(json.dumps, items):
            write_line(line)
    elif not runs:
        write_line(f"No history for: {loop_arg}")
    else:
        write_line(f"{'run':>4}  {'started':<8}  {'status':<22} {'iterations':<14} final state")
        for run in runs:
            write_line(run.line())
    return OK
