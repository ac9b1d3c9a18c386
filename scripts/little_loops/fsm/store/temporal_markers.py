"""Which loops of this checkout run on Temporal, as a file a local run can see.

A local run (`store.locking`) and a Temporal run of the same loop in one checkout must
refuse each other. The local side must learn of an open workflow without asking a
server on every run (most checkouts never use Temporal), so the Temporal client writes
`<loops_dir>/.running/<loop>.on-temporal` before it starts (or resumes) the loop's
workflow: one JSON object `{"workflow_id", "address", "namespace", "loop", "scope",
"since"}`. A local run reads it only when it is there, and then asks that server whether
the workflow is still open (a client that died, a `--detach`ed run that ended: the file
may outlive its run); a closed or unknown workflow's marker is removed.

The order makes the two sides meet: the Temporal client writes its marker and then
probes the local lock; a local run takes its lock and then reads the markers. Whichever
comes second sees the first.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from little_loops.fsm.store.locking import run_files_error
from little_loops.fsm.store.state_files import now_iso, write_file_atomically

__all__ = ["MARKER_SUFFIX", "TemporalMarker", "read_markers", "remove_marker", "write_marker"]

MARKER_SUFFIX = ".on-temporal"


@dataclass(frozen=True)
class TemporalMarker:
    """A loop's workflow that may be open on a Temporal server."""

    loop: str
    workflow_id: str
    address: str
    namespace: str
    scope: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "loop": self.loop,
            "workflow_id": self.workflow_id,
            "address": self.address,
            "namespace": self.namespace,
            "scope": list(self.scope),
            "since": now_iso(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> TemporalMarker | None:
        if not isinstance(data, dict):
            return None
        loop, workflow_id, address, namespace = (
            data.get(key) for key in ("loop", "workflow_id", "address", "namespace")
        )
        texts = (loop, workflow_id, address, namespace)
        if not all(isinstance(text, str) for text in texts):
            return None
        scope = data.get("scope")
        paths = tuple(p for p in scope if isinstance(p, str)) if isinstance(scope, list) else ()
        return cls(str(loop), str(workflow_id), str(address), str(namespace), scope=paths)


def marker_path(running_dir: Path, loop_name: str) -> Path:
    return running_dir / f"{loop_name}{MARKER_SUFFIX}"


def write_marker(running_dir: Path, marker: TemporalMarker) -> None:
    """Write the loop's marker; `RunFilesError` (one line) when `.running/` is unusable."""
    text = json.dumps(marker.to_dict()) + "\n"
    try:
        running_dir.mkdir(parents=True, exist_ok=True)
        write_file_atomically(marker_path(running_dir, marker.loop), text)
    except OSError as exc:
        raise run_files_error(running_dir, exc) from None


def remove_marker(running_dir: Path, loop_name: str, workflow_id: str | None = None) -> None:
    """Remove the loop's marker (only when it still names `workflow_id`, if given)."""
    path = marker_path(running_dir, loop_name)
    if workflow_id is not None:
        found = _read(path)
        if found is None or found.workflow_id != workflow_id:
            return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def read_markers(
    running_dir: Path, loop_names: Sequence[str] | None = None
) -> list[TemporalMarker]:
    """The markers in `running_dir` (of `loop_names` only, when given); unreadable ones
    are left out."""
    if loop_names is not None:
        paths = [marker_path(running_dir, name) for name in loop_names]
    else:
        paths = sorted(running_dir.glob(f"*{MARKER_SUFFIX}"))
    return [marker for marker in map(_read, paths) if marker is not None]


def _read(path: Path) -> TemporalMarker | None:
    try:
        return TemporalMarker.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
