"""`ll-loop report [<loop>] [--since WHEN] [--json]`: what the runs of a loop (or of every
loop with runs kept) did and cost, and what a completed run and each state's `yes` cost
across them (`store.run_report` reads the runs).

A table per run (status, start, duration, actions, retries, limit waits, cost, tokens, then
one line per state: visits, cost, tokens, verdicts) and each loop's totals; `--json`
prints one JSON document instead. Exit 0, or 1 with one line when no run is kept.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.history_lines import clock_time
from little_loops.cli.output import plural, write_error_line, write_line
from little_loops.cli.resolve import LOOPS_DIR, loop_name_for
from little_loops.fsm.engine.spending import format_cost, format_tokens
from little_loops.fsm.model.durations import format_duration
from little_loops.fsm.store.run_report import (
    LoopTotals,
    RunFigures,
    StateFigures,
    loop_totals,
    report_document,
    reported_loops,
    runs_of_loop,
)

__all__ = ["report_command", "show_report"]


def report_command(
    loop_arg: str | None,
    *,
    since: datetime | None = None,
    as_json: bool = False,
    loops_dir: Path = LOOPS_DIR,
) -> int:
    names = [loop_name_for(loop_arg)] if loop_arg else reported_loops(loops_dir)
    runs = [run for name in names for run in runs_of_loop(loops_dir, name, since)]
    what = f"of '{names[0]}'" if loop_arg else "of any loop"
    nothing = f"No runs {what} kept{_since_text(since)}"
    return show_report(names, runs, since=since, as_json=as_json, nothing=nothing)


def show_report(
    names: list[str],
    runs: list[RunFigures],
    *,
    since: datetime | None,
    as_json: bool,
    nothing: str,
) -> int:
    """Print the report of `runs` (a table per loop of `names`, or `--json`); `nothing`
    is the line said (exit 1) when there is no run to report."""
    if as_json:
        write_line(json.dumps(report_document(runs, since), indent=2))
        return OK
    if not runs:
        write_error_line(nothing)
        return FAILED
    for name in names:
        kept = [run for run in runs if run.loop == name]
        if kept:
            _print_loop(name, kept)
    return OK


def _since_text(since: datetime | None) -> str:
    return f" since {since.isoformat(timespec='minutes')}" if since is not None else ""


def _print_loop(name: str, runs: list[RunFigures]) -> None:
    for run in runs:
        _print_run(run)
        write_line()
    _print_totals(loop_totals(name, runs))
    write_line()


def _print_run(run: RunFigures) -> None:
    started = _moment(run.started_at)
    duration = format_duration(run.duration_ms / 1000) if run.duration_ms is not None else "?"
    latest = " (latest)" if run.latest else ""
    write_line(
        f"{run.loop} run {run.number}{latest}: {run.status or '?'}, "
        f"started {clock_time(started)}, {duration}, {plural(run.actions, 'action')}, "
        f"{plural(run.retries, 'retry').replace('retrys', 'retries')}, "
        f"{plural(run.limit_waits, 'limit wait')}, "
        f"{format_cost(run.cost_usd)}, {format_tokens(run.tokens)}"
    )
    _print_states(run.states)


def _print_states(states: dict[str, StateFigures], per_yes: LoopTotals | None = None) -> None:
    """One line a state; the totals add what each `yes` of the state cost."""
    if not states:
        return
    width = max(len("state"), *(len(name) for name in states))
    extra = f"  {'per yes':>9}" if per_yes is not None else ""
    write_line(f"  {'state':<{width}}  {'visits':>6}  {'cost':>9}  {'tokens':>13}{extra}  verdicts")
    for name, figures in states.items():
        verdicts = ", ".join(f"{v} {n}" for v, n in sorted(figures.verdicts.items())) or "-"
        cells = f"  {_per_yes(per_yes, name):>9}" if per_yes is not None else ""
        write_line(
            f"  {name:<{width}}  {figures.visits:>6}  {format_cost(figures.cost_usd):>9}  "
            f"{format_tokens(figures.tokens):>13}{cells}  {verdicts}"
        )


def _per_yes(totals: LoopTotals, state: str) -> str:
    cost = totals.cost_per_yes(state)
    return format_cost(cost) if cost is not None else "-"


def _print_totals(totals: LoopTotals) -> None:
    per_run = totals.cost_per_completed_run
    per_run_text = (
        f"{format_cost(per_run)} per completed run" if per_run is not None else ("no completed run")
    )
    write_line(
        f"{totals.loop} totals: {plural(totals.runs, 'run')}, {totals.completed} completed, "
        f"{format_cost(totals.cost_usd)}, {format_tokens(totals.tokens)}; {per_run_text}"
    )
    _print_states(totals.states, per_yes=totals)


def _moment(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None
