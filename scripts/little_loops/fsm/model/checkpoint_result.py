"""What a git checkpoint did (`CheckpointResult`): the record the core puts in its events.

A record only, in the bottom layer so that the run core (`engine/`) reads it without
importing the process layer that runs git; `process.checkpoint` re-exports it under its
old name.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CheckpointResult"]


@dataclass
class CheckpointResult:
    """What a checkpoint did.

    `status` is `committed` (with `commit`, the short hash), `clean` (nothing to commit),
    `skipped` (checkpoints are off for this run: not a git work tree) or `failed`.
    `warning` is set when the user should be told something.
    """

    status: str
    commit: str | None = None
    message: str | None = None
    warning: str | None = None
