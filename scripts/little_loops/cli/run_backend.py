"""The one seam between the commands and where runs live: `RunBackend`.

`run`, `resume`, `status`, `stop`, `approve`/`reject`, `history`, `report` and
`list --running` are
the commands whose work depends on the engine; the dispatch picks a backend once
(`--engine`, `LL_ENGINE`) and calls it, never branching on the engine itself.
`local_backend.LocalBackend` keeps runs on this machine (`.loops/.running/`);
`temporal_backend.TemporalBackend` on a Temporal server. Each backend refuses, as a
usage error (exit 2), the flags it has no use for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from datetime import datetime

    from little_loops.cli.history_query import EventFilter
    from little_loops.cli.run_options import RunOptions
    from little_loops.fsm.model.approval_records import ApprovalAnswer

__all__ = [
    "ApprovalBackend",
    "HistoryRequest",
    "ReportBackend",
    "ResumeRequest",
    "RunBackend",
    "RunRequest",
]


@dataclass(frozen=True)
class RunRequest:
    """How `run` goes, beside its settings: `dry_run` (print the plan), `background`
    (detach, log to a file) and `follow` (then watch it): local; `detach` (start the
    workflow and return): Temporal."""

    dry_run: bool = False
    background: bool = False
    follow: bool = False
    detach: bool = False


@dataclass(frozen=True)
class ResumeRequest:
    """How `resume` goes: `background`, `follow` and `from_history` (bring back the newest
    unfinished run a later `run` archived): local; `prompt` (the continuation prompt to
    resume a handoff with): Temporal."""

    background: bool = False
    follow: bool = False
    from_history: bool = False
    prompt: str | None = None


@dataclass(frozen=True)
class HistoryRequest:
    """What `history` shows: the last `tail` lines or events (0: all) as `output` (one of
    `HISTORY_OUTPUTS`), those `query` keeps; `list_runs` (`--runs`) and `run` (`--run N`)
    pick among the runs kept: local."""

    tail: int = 50
    output: str = "lines"
    query: EventFilter | None = None
    list_runs: bool = False
    run: int | None = None


@runtime_checkable
class RunBackend(Protocol):
    """Where runs live. Each method is one command and returns its exit code."""

    def run(self, loop_arg: str, options: RunOptions, request: RunRequest) -> int:
        """`ll-loop run <loop>`."""
        ...

    def resume(self, loop_arg: str, options: RunOptions, request: ResumeRequest) -> int:
        """`ll-loop resume <loop>`."""
        ...

    def status(self, loop_arg: str, *, as_json: bool) -> int:
        """`ll-loop status <loop>`."""
        ...

    def stop(self, loop_arg: str) -> int:
        """`ll-loop stop <loop>`."""
        ...

    def history(self, loop_arg: str, request: HistoryRequest) -> int:
        """`ll-loop history <loop>`."""
        ...

    def list_running(self, *, as_json: bool) -> int:
        """`ll-loop list --running`."""
        ...

    def watch(self, loop_arg: str, *, verbose: bool, wait: bool) -> int:
        """`ll-loop watch <loop>`."""
        ...


@runtime_checkable
class ApprovalBackend(Protocol):
    """Where the answer to a `human_approval` question goes (issue 26): both backends
    are one too. Its own protocol beside `RunBackend`, whose methods are the commands
    every engine has had from the start."""

    def answer(self, loop_arg: str, answer: ApprovalAnswer) -> int:
        """`ll-loop approve <loop>` / `ll-loop reject <loop>`."""
        ...


@runtime_checkable
class ReportBackend(Protocol):
    """Where `ll-loop report` finds the runs (issue 26): the local runs kept in `.loops/`,
    or the latest run of a loop's workflow. Both backends are one too."""

    def report(self, loop_arg: str | None, *, since: datetime | None, as_json: bool) -> int:
        """`ll-loop report [<loop>]`."""
        ...
