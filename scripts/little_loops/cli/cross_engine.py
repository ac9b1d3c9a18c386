"""Local and Temporal runs of one loop in one checkout refuse each other (issue 23 item 1).

Design (`store.temporal_markers`): the Temporal client writes a marker file in
`.loops/.running/` before it starts or resumes a loop's workflow, then probes the local
loop locks; a local run takes its lock, then reads the markers. A local run asks a
Temporal server only when a marker names one of its loops (or, with `scope:`, any
marker exists), so a checkout that never used Temporal pays one directory read. A marker
whose workflow is no longer open (or whose server says it never heard of it) is stale
and removed. Both refusals are `LoopBusyError`s: exit 6, one line naming where the
other run is (its workflow id, or its pid).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from little_loops.cli.output import write_error_line
from little_loops.fsm.store.locking import (
    AlreadyRunningError,
    LoopBusyError,
    normalise_scope,
    overlap,
    running_holders,
    shown_path,
)
from little_loops.fsm.store.temporal_markers import (
    TemporalMarker,
    read_markers,
    remove_marker,
)

__all__ = ["refuse_if_local", "refuse_if_on_temporal"]


def refuse_if_on_temporal(running_dir: Path, loop_name: str, scope: Sequence[str]) -> None:
    """A local run (holding its lock): refuse while the loop, or a loop sharing its scope,
    has an open workflow on Temporal."""
    names = None if scope else [loop_name]
    markers = read_markers(running_dir, names)
    if not markers:
        return
    paths = normalise_scope(scope)
    for marker in markers:
        shared = overlap(paths, marker.scope) if marker.loop != loop_name else None
        if marker.loop != loop_name and shared is None:
            continue
        if not _workflow_open(marker):
            remove_marker(running_dir, marker.loop, marker.workflow_id)
            continue
        if marker.loop == loop_name:
            raise LoopBusyError(
                f"Loop {loop_name} is already running on Temporal (workflow {marker.workflow_id})"
            )
        raise LoopBusyError(
            f"Loop {loop_name} shares scope '{shown_path(shared or '')}' with loop "
            f"{marker.loop} running on Temporal (workflow {marker.workflow_id})"
        )


def refuse_if_local(running_dir: Path, loop_name: str, scope: Sequence[str], base: Path) -> None:
    """A Temporal start (its marker written): refuse while the loop, or a loop sharing its
    scope, runs here on the local engine."""
    paths = normalise_scope(scope, base=base)
    for holder in running_holders(running_dir):
        if holder.loop == loop_name:
            raise AlreadyRunningError(loop_name, holder.pid, where=" locally")
        shared = overlap(paths, holder.scope)
        if shared is not None:
            pid = f"pid {holder.pid}" if holder.pid is not None else "pid unknown"
            raise LoopBusyError(
                f"Loop {loop_name} shares scope '{shown_path(shared)}' with loop "
                f"{holder.loop} running locally ({pid})"
            )


def open_on_temporal(running_dir: Path, loop_name: str) -> TemporalMarker | None:
    """The loop's workflow marker when that workflow is open on its server (a stale
    marker is removed), else None: how a local `watch` learns the run is elsewhere."""
    for marker in read_markers(running_dir, [loop_name]):
        if _workflow_open(marker):
            return marker
        remove_marker(running_dir, marker.loop, marker.workflow_id)
    return None


def _workflow_open(marker: TemporalMarker) -> bool:
    """Whether the marker's workflow is open on its server. A server that cannot be
    asked (down, temporalio missing) cannot be running the loop's next step either: the
    local run goes on, and says why."""
    try:
        from little_loops.fsm.temporal.marker_check import workflow_is_open
    except ImportError:
        write_error_line(_unchecked(marker, "temporalio is not installed"))
        return False
    try:
        return workflow_is_open(marker.address, marker.namespace, marker.workflow_id)
    except Exception as exc:  # any failure to ask: said, not fatal
        write_error_line(_unchecked(marker, str(exc).splitlines()[0] if str(exc) else "error"))
        return False


def _unchecked(marker: TemporalMarker, why: str) -> str:
    return (
        f"Warning: loop {marker.loop} may run on Temporal (workflow {marker.workflow_id} on "
        f"{marker.address}), which cannot be asked ({why}); running locally"
    )
