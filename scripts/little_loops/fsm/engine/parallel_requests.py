"""The request for a `parallel:` item's worktree (issue 25); running the branches is
`requests.RunBranches`. Apart from `run_requests` so that a run without `parallel:`
states does not build it at start-up; `requests` exports it too."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AddBranchWorktree"]


@dataclass(frozen=True)
class AddBranchWorktree:
    """A `parallel:` item's worktree (issue 25): `git worktree add` of the branch
    `branch` under `<loops dir>/.worktrees/` (`label` names the folder), the branch made
    from the project's HEAD when `fresh` (moved there if it exists), else the branch as
    it is (a resumed item). Submit a `WorktreeAttached`, or a `ChildLoadFailed`."""

    branch: str
    label: str
    fresh: bool = True
