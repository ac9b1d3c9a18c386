"""The report over a loop's runs (`ll-loop report`, issue 26 item 3): what each run did and
spent, and what a completed run and each state's `yes` cost across them.

The runs are those `history` reads: archived under `.loops/.history/<loop>/<started>/`
(oldest first), then the latest in `.loops/.running/`. A run's status, start, duration and
totals come from its state file; a run without one is read from the end of its events file
(its `loop_complete`). Per-state figures need the whole events file, read once:

- `visits`: top-level `state_enter` events of the state;
- `cost_usd` / `tokens`: what its actions spent (`action_complete`, sub-loops' included,
  as their spending rolls up into the state that ran them); tokens are input + output, the
  measure of `max_tokens`. LLM judgements are in the run's totals only (their spending is
  not in the events);
- `verdicts`: top-level `evaluate` events by verdict (`success` counts as `yes`); a visit
  with no `evaluate` of its own (a `loop:` sub-loop, a `parallel:` fan-out) counts the
  verdict its `route` names, the child's or the fan-out's.

Per run also: `actions` (actions run, runs again included), `retries` (runs again after a
limit, and Temporal activity retries) and `limit_waits` (usage-limit waits and rate-limit
backoffs).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from little_loops.fsm.engine.events import (
    ACTION_COMPLETE,
    ACTION_RETRY,
    EVALUATE,
    LIMIT_WAIT,
    LOOP_COMPLETE,
    RATE_LIMIT_BACKOFF,
    ROUTE,
    STATE_ENTER,
)
from little_loops.fsm.store.run_history import HISTORY_DIR, folder_order, history_dir
from little_loops.fsm.store.run_record import FINAL_STATUSES, final_status
from little_loops.fsm.store.state_files import RUNNING_DIR, read_last_events

__all__ = [
    "LoopTotals",
    "RunFigures",
    "StateFigures",
    "loop_totals",
    "report_document",
    "reported_loops",
    "run_started_since",
    "runs_of_loop",
    "workflow_run",
]

_YES = ("yes", "success")
_STATE_SUFFIX, _EVENTS_SUFFIX = ".state.json", ".events.jsonl"


@dataclass
class StateFigures:
    """One state's visits, spending and verdicts (in one run, or summed over runs)."""

    visits: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)

    @property
    def yes(self) -> int:
        return sum(self.verdicts.get(verdict, 0) for verdict in _YES)

    def add(self, other: StateFigures) -> None:
        self.visits += other.visits
        self.cost_usd += other.cost_usd
        self.tokens += other.tokens
        for verdict, count in other.verdicts.items():
            self.verdicts[verdict] = self.verdicts.get(verdict, 0) + count

    def to_json(self) -> dict[str, Any]:
        return {
            "visits": self.visits,
            "cost_usd": round(self.cost_usd, 6),
            "tokens": self.tokens,
            "verdicts": dict(sorted(self.verdicts.items())),
        }


@dataclass
class RunFigures:
    """One run of a loop, as the report shows it."""

    loop: str
    number: int
    latest: bool
    status: str | None = None
    started_at: str | None = None
    duration_ms: int | None = None
    actions: int = 0
    retries: int = 0
    limit_waits: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    states: dict[str, StateFigures] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "loop": self.loop,
            "run": self.number,
            "latest": self.latest,
            "status": self.status,
            "started_at": self.started_at,
            "duration_ms": self.duration_ms,
            "actions": self.actions,
            "retries": self.retries,
            "limit_waits": self.limit_waits,
            "cost_usd": round(self.cost_usd, 6),
            "tokens": self.tokens,
            "states": {name: figures.to_json() for name, figures in self.states.items()},
        }


@dataclass
class LoopTotals:
    """A loop's runs summed: what a completed run and each state's `yes` cost."""

    loop: str
    runs: int = 0
    completed: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    states: dict[str, StateFigures] = field(default_factory=dict)

    @property
    def cost_per_completed_run(self) -> float | None:
        return self.cost_usd / self.completed if self.completed else None

    def cost_per_yes(self, state: str) -> float | None:
        yes = self.states[state].yes if state in self.states else 0
        return self.cost_usd / yes if yes else None

    def to_json(self) -> dict[str, Any]:
        per_run = self.cost_per_completed_run
        states = {}
        for name, figures in self.states.items():
            per_yes = self.cost_per_yes(name)
            states[name] = {
                **figures.to_json(),
                "yes": figures.yes,
                "cost_per_yes": round(per_yes, 6) if per_yes is not None else None,
            }
        return {
            "runs": self.runs,
            "completed": self.completed,
            "cost_usd": round(self.cost_usd, 6),
            "tokens": self.tokens,
            "cost_per_completed_run": round(per_run, 6) if per_run is not None else None,
            "states": states,
        }


# --- finding the runs ----------------------------------------------------------------------


def reported_loops(loops_dir: Path) -> list[str]:
    """The names of the loops with a run kept (latest or archived), sorted."""
    names: set[str] = set()
    running = loops_dir / RUNNING_DIR
    for suffix in (_STATE_SUFFIX, _EVENTS_SUFFIX):
        names.update(path.name.removesuffix(suffix) for path in _listing(running, suffix))
    history = loops_dir / HISTORY_DIR
    names.update(path.name for path in _listing(history) if path.is_dir())
    return sorted(names)


def _listing(folder: Path, suffix: str = "") -> list[Path]:
    try:
        return [path for path in folder.iterdir() if path.name.endswith(suffix)]
    except OSError:
        return []


def runs_of_loop(loops_dir: Path, loop: str, since: datetime | None = None) -> list[RunFigures]:
    """Every run of `loop` with files, oldest first, numbered as `history --runs` does;
    with `since`, only those started then or later."""
    folders = sorted(
        (p for p in _listing(history_dir(loops_dir, loop)) if p.is_dir()), key=folder_order
    )
    running = loops_dir / RUNNING_DIR
    if any((running / f"{loop}{suffix}").exists() for suffix in (_STATE_SUFFIX, _EVENTS_SUFFIX)):
        folders.append(running)
    runs = [
        _figures(folder, loop, number, folder == running)
        for number, folder in enumerate(folders, start=1)
    ]
    return [run for run in runs if since is None or run_started_since(run, since)]


def run_started_since(run: RunFigures, since: datetime) -> bool:
    """Whether `run` started at `since` or later (a run without a start: no)."""
    try:
        started = datetime.fromisoformat(str(run.started_at))
    except ValueError:
        return False
    return (started if started.tzinfo else started.replace(tzinfo=UTC)) >= since


# --- one run ---------------------------------------------------------------------------------


def _figures(folder: Path, loop: str, number: int, latest: bool) -> RunFigures:
    run = RunFigures(loop, number, latest)
    events = folder / f"{loop}{_EVENTS_SUFFIX}"
    state = _read_state(folder / f"{loop}{_STATE_SUFFIX}")
    if state is None:
        state = _state_from_tail(events)
    _take_state(run, state)
    _read_events(run, events)
    return run


def workflow_run(
    loop: str, state: Mapping[str, Any], events: Iterable[Mapping[str, Any]]
) -> RunFigures:
    """A Temporal run's figures (its workflow keeps no files): the state its `status`
    query or its outcome gives, and the events the workflow kept."""
    run = RunFigures(loop, 1, True)
    _take_state(run, state)
    tally = _Tally(run)
    for event in events:
        tally.take(dict(event))
    return run


def _take_state(run: RunFigures, state: Mapping[str, Any]) -> None:
    run.status = state.get("status")
    run.started_at = state.get("started_at")
    run.duration_ms = state.get("elapsed_ms")
    _take_spending(run, state.get("spending"))


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _state_from_tail(events: Path) -> dict[str, Any]:
    """What a run without a state file says at the end of its events (`loop_complete`)
    and at their start (`loop_start`), read from the ends of the file."""
    last = read_last_events(events, 1)
    first = _first_event(events)
    state: dict[str, Any] = {"started_at": first.get("ts") if first else None}
    if last and last[0].get("event") == LOOP_COMPLETE:
        done = last[0]
        state["status"] = _saved_status(done.get("terminated_by"))
        state["spending"] = done.get("spending")
        state["elapsed_ms"] = _elapsed(first, done)
    return state


def _saved_status(terminated_by: Any) -> Any:
    """The status a run that ended by `terminated_by` is saved with (`terminal` ->
    `completed`), as its state file would say; another word is kept as written."""
    if isinstance(terminated_by, str) and terminated_by in FINAL_STATUSES:
        return final_status(terminated_by, handoff_terminates=False)
    return terminated_by


def _first_event(events: Path) -> dict[str, Any] | None:
    try:
        with events.open(encoding="utf-8") as handle:
            line = handle.readline()
        event = json.loads(line)
    except (OSError, ValueError):
        return None
    return event if isinstance(event, dict) else None


def _elapsed(first: dict[str, Any] | None, last: dict[str, Any]) -> int | None:
    try:
        start = datetime.fromisoformat(str((first or {}).get("ts")))
        end = datetime.fromisoformat(str(last.get("ts")))
    except ValueError:
        return None
    return int((end - start).total_seconds() * 1000)


def _take_spending(run: RunFigures, spending: Any) -> None:
    if not isinstance(spending, dict):
        return
    run.cost_usd = float(spending.get("cost_usd") or 0.0)
    run.tokens = _io_tokens(spending.get("tokens"))


def _io_tokens(tokens: Any) -> int:
    if not isinstance(tokens, dict):
        return 0
    return int(tokens.get("input") or 0) + int(tokens.get("output") or 0)


def _read_events(run: RunFigures, path: Path) -> None:
    """One pass over the run's events: per-state figures, actions, retries, waits."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError:
        return
    tally = _Tally(run)
    with handle:
        for line in handle:
            event = _event(line)
            if event is not None:
                tally.take(event)


def _event(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


class _Tally:
    """Counts a run's events into its figures, knowing the top-level state being visited."""

    def __init__(self, run: RunFigures) -> None:
        self.run = run
        self.current: StateFigures | None = None
        self.judged = False  # the current visit had a top-level `evaluate`

    def take(self, event: dict[str, Any]) -> None:
        kind, top = event.get("event"), not event.get("depth")
        if kind == STATE_ENTER and top:
            self.current = self.run.states.setdefault(str(event.get("state")), StateFigures())
            self.current.visits += 1
            self.judged = False
        elif kind == ACTION_COMPLETE:
            self._spent(event)
        elif kind == EVALUATE and top:
            self._verdict(event.get("verdict"))
            self.judged = True
        elif kind == ROUTE and top and not self.judged:
            # A sub-loop's or a fan-out's verdict is the one its route names.
            self._verdict(event.get("verdict"))
        elif kind == ACTION_RETRY:
            self.run.retries += 1
        elif kind in (LIMIT_WAIT, RATE_LIMIT_BACKOFF):
            self.run.limit_waits += 1

    def _spent(self, event: dict[str, Any]) -> None:
        self.run.actions += 1
        self.run.retries += 1 if event.get("limit") else 0
        if self.current is not None:
            self.current.cost_usd += float(event.get("cost_usd") or 0.0)
            self.current.tokens += _io_tokens(event.get("tokens"))

    def _verdict(self, verdict: object) -> None:
        if self.current is not None and verdict is not None:
            key = str(verdict)
            self.current.verdicts[key] = self.current.verdicts.get(key, 0) + 1


# --- across runs -----------------------------------------------------------------------------


def loop_totals(loop: str, runs: list[RunFigures]) -> LoopTotals:
    totals = LoopTotals(loop, runs=len(runs))
    for run in runs:
        totals.completed += run.status == "completed"
        totals.cost_usd += run.cost_usd
        totals.tokens += run.tokens
        for name, figures in run.states.items():
            totals.states.setdefault(name, StateFigures()).add(figures)
    return totals


def report_document(runs: list[RunFigures], since: datetime | None) -> dict[str, Any]:
    """The `--json` document: every run, then each loop's totals."""
    loops: dict[str, list[RunFigures]] = {}
    for run in runs:
        loops.setdefault(run.loop, []).append(run)
    return {
        "since": since.isoformat() if since is not None else None,
        "runs": [run.to_json() for run in runs],
        "loops": {name: loop_totals(name, kept).to_json() for name, kept in loops.items()},
    }
