"""The requests that look at or save the work tree: a git checkpoint (`checkpoint:`),
the work tree's fingerprint for the stall guard, the fingerprint of a circuit's
`progress_paths`. Apart from `run_requests` so that a run without those features does not
build them at start-up; `requests` exports them too."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Checkpoint", "FingerprintPaths", "InspectWorkspace"]


@dataclass(frozen=True)
class Checkpoint:
    """Save the project's work (`checkpoint: git`); submit the `CheckpointResult`."""

    state: str
    iteration: int
    reason: str


@dataclass(frozen=True)
class InspectWorkspace:
    """Fingerprint the project's files for the stall guard, on the host that has them;
    submit `process.workspace.WorkspaceWatcher(...).fingerprint()` there (a str, or None:
    nothing watched). Asked only for an ending that can build a stall streak."""


@dataclass(frozen=True)
class FingerprintPaths:
    """HEAD's `circuit.repeated_failure.progress_paths` (§7.7): the (mtime, size)
    fingerprint of `paths` minus `exclude` (interpolated, relative to the project), on the
    host that has them; submit `process.path_fingerprint.paths_fingerprint(...)` (a str)."""

    paths: tuple[str, ...]
    exclude: tuple[str, ...] = ()
