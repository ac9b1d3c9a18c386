"""Runs on a Temporal server: the `RunBackend` of `--engine temporal`.

The commands themselves are in `temporal_engine` (which imports temporalio only when one
runs); this class is the seam, and says which local-only flags it refuses (exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from little_loops.cli import temporal_engine
from little_loops.cli.output import usage_error

if TYPE_CHECKING:
    from datetime import datetime

    from little_loops.cli.run_backend import HistoryRequest, ResumeRequest, RunRequest
    from little_loops.cli.run_options import RunOptions
    from little_loops.fsm.model.approval_records import ApprovalAnswer

__all__ = ["TemporalBackend"]


class TemporalBackend:
    """`--engine temporal` (see `run_backend.RunBackend`)."""

    def run(self, loop_arg: str, options: RunOptions, request: RunRequest) -> int:
        if request.background or request.dry_run:
            return usage_error("run", "--engine temporal: use --detach (no --background)")
        return temporal_engine.run_temporal(loop_arg, options, detach=request.detach)

    def resume(self, loop_arg: str, options: RunOptions, request: ResumeRequest) -> int:
        return temporal_engine.resume_temporal(loop_arg, options, prompt=request.prompt)

    def status(self, loop_arg: str, *, as_json: bool) -> int:
        return temporal_engine.status_temporal(loop_arg, as_json=as_json)

    def stop(self, loop_arg: str) -> int:
        return temporal_engine.stop_temporal(loop_arg)

    def answer(self, loop_arg: str, answer: ApprovalAnswer) -> int:
        return temporal_engine.answer_temporal(loop_arg, answer)

    def report(self, loop_arg: str | None, *, since: datetime | None, as_json: bool) -> int:
        if loop_arg is None:
            return usage_error("report", "--engine temporal: name the loop to report")
        return temporal_engine.report_temporal(loop_arg, since=since, as_json=as_json)

    def history(self, loop_arg: str, request: HistoryRequest) -> int:
        if request.list_runs or request.run is not None:
            return usage_error("history", "--engine temporal: --runs and --run are local only")
        return temporal_engine.history_temporal(
            loop_arg, tail=request.tail, output=request.output, query=request.query
        )

    def list_running(self, *, as_json: bool) -> int:
        return temporal_engine.list_running_temporal(as_json=as_json)

    def watch(self, loop_arg: str, *, verbose: bool, wait: bool) -> int:
        return temporal_engine.watch_temporal(loop_arg, verbose=verbose, wait=wait)
