"""HEAD's `circuit.repeated_failure` (spec/ll-head-dialect.md §7.7): the same outcome of
the same state, again and again, with nothing changed.

After each evaluated state the run records `(state, exit code, verdict)` and, with
`progress_paths`, a fingerprint of those files (taken by the driver: the core does no
I/O). A changed fingerprint since the same state's last record clears the window first.
When the last `window` records are equal (or, with `recurrent_window`, the same triple
was seen that many times in the run) the detector trips: event `stall_detected`, then the
run ends `stall_detected` (`abort`) or goes to the named state, bypassing routing. The
records live in the cursor's `HeadMemory.circuit_records`; the window is not cleared
after a trip.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from little_loops.fsm.engine import events
from little_loops.fsm.engine.head_endings import STALL_DETECTED
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.head_routing import HeadRoute
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.engine.workspace_requests import FingerprintPaths
from little_loops.fsm.interpolation import InterpolationContext, InterpolationError, interpolate
from little_loops.fsm.model.head_parts import CircuitConfig

__all__ = ["ABORT", "Trip", "note_outcome", "trip_route", "watched_paths"]

ABORT = "abort"


@dataclass(frozen=True)
class Trip:
    """The detector fired on `outcome` (state, exit code, verdict): `key` says how
    (`consecutive` or `recurrent`) and `count` how many records agreed."""

    outcome: tuple[str, int, str]
    key: str
    count: int


def note_outcome(
    circuit: CircuitConfig,
    memory: HeadMemory,
    outcome: tuple[str, int, str],
    fingerprint: str | None = None,
) -> Trip | None:
    """Record one evaluated state's outcome; a `Trip` when the detector fires."""
    records = memory.circuit_records
    if circuit.progress_paths and _progress_made(records, outcome[0], fingerprint):
        records.clear()
    records.append([*outcome, fingerprint])
    window = circuit.window
    tail = records[-window:]
    if len(tail) == window and all(_outcome_of(record) == outcome for record in tail):
        trip: Trip | None = Trip(outcome, "consecutive", window)
    else:
        trip = _recurrent(circuit, records, outcome)
    if circuit.recurrent_window is None:
        del records[:-window]  # only the window matters: the state file stays small
    return trip


def watched_paths(circuit: CircuitConfig, ctx: InterpolationContext) -> FingerprintPaths:
    """The request for the fingerprint of `progress_paths` minus `exclude_paths` (their
    templates interpolated; one that cannot be is watched as written)."""
    return FingerprintPaths(
        tuple(_path(template, ctx) for template in circuit.progress_paths),
        tuple(_path(template, ctx) for template in circuit.exclude_paths),
    )


def _path(template: str, ctx: InterpolationContext) -> str:
    try:
        return interpolate(template, ctx)
    except InterpolationError:
        return template


def trip_route(circuit: CircuitConfig, trip: Trip, emit: Callable[..., None]) -> Ending | HeadRoute:
    """`stall_detected`, then the end of the run (`abort`) or the recovery state."""
    state, exit_code, verdict = trip.outcome
    action = circuit.on_repeated_failure
    keys: dict[str, Any] = {"state": state, "exit_code": exit_code, "verdict": verdict}
    emit(events.STALL_DETECTED, **keys, **{trip.key: trip.count}, action=action)
    if action != ABORT:
        return HeadRoute(action, "repeated_failure")
    message = (
        f"repeated failure: state '{state}' ended with exit code {exit_code} and verdict "
        f"'{verdict}' {trip.count} times ({trip.key})"
    )
    return Ending(STALL_DETECTED, message)


def _recurrent(
    circuit: CircuitConfig, records: list[list[Any]], outcome: tuple[str, int, str]
) -> Trip | None:
    limit = circuit.recurrent_window
    if limit is None:
        return None
    seen = sum(1 for record in records if _outcome_of(record) == outcome)
    return Trip(outcome, "recurrent", seen) if seen >= limit else None


def _progress_made(records: list[list[Any]], state: str, fingerprint: str | None) -> bool:
    """Whether the watched paths changed since `state`'s last record."""
    for record in reversed(records):
        if record[0] == state:
            return bool(record[3] != fingerprint)
    return False


def _outcome_of(record: list[Any]) -> tuple[str, int, str]:
    return (record[0], record[1], record[2])
