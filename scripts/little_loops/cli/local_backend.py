"""Runs on this machine: the `RunBackend` of `.loops/.running/` (the default engine).

Each method is the local command as it always was; the command modules (and with them the
loop engine) are imported when a method runs, so `ll-loop list --running` loads no more
than it needs. Every command that reads the runs first checks that `.loops/.running/` is
usable, with the line `run` would give.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from little_loops.cli.output import usage_error, write_error_line

if TYPE_CHECKING:
    from datetime import datetime

    from little_loops.cli.run_backend import HistoryRequest, ResumeRequest, RunRequest
    from little_loops.cli.run_options import RunOptions
    from little_loops.fsm.model.approval_records import ApprovalAnswer

__all__ = ["LocalBackend", "check_running_dir"]


class LocalBackend:
    """`--engine local` (see `run_backend.RunBackend`)."""

    def run(self, loop_arg: str, options: RunOptions, request: RunRequest) -> int:
        from little_loops.cli.cmd_run import run_command

        if request.detach:
            return usage_error("run", "--detach needs --engine temporal (locally: --background)")
        return run_command(
            loop_arg,
            options,
            dry_run=request.dry_run,
            background=request.background,
            follow=request.follow,
        )

    def resume(self, loop_arg: str, options: RunOptions, request: ResumeRequest) -> int:
        from little_loops.cli.cmd_run import resume_command

        if request.prompt is not None:
            return usage_error("resume", "--prompt needs --engine temporal")
        check_running_dir()
        if request.follow and not request.background:
            return usage_error("resume", "--follow needs --background")
        return resume_command(
            loop_arg,
            options,
            background=request.background,
            from_history=request.from_history,
            follow=request.follow,
        )

    def status(self, loop_arg: str, *, as_json: bool) -> int:
        from little_loops.cli.cmd_inspect import status_command

        check_running_dir()
        return status_command(loop_arg, as_json=as_json)

    def stop(self, loop_arg: str) -> int:
        from little_loops.cli.cmd_stop import stop_command

        check_running_dir()
        return stop_command(loop_arg)

    def answer(self, loop_arg: str, answer: ApprovalAnswer) -> int:
        from little_loops.cli.cmd_approve import answer_command

        check_running_dir()
        return answer_command(loop_arg, answer)

    def report(self, loop_arg: str | None, *, since: datetime | None, as_json: bool) -> int:
        from little_loops.cli.cmd_report import report_command

        return report_command(loop_arg, since=since, as_json=as_json)

    def history(self, loop_arg: str, request: HistoryRequest) -> int:
        from little_loops.cli.cmd_history import history_command

        check_running_dir()
        return history_command(
            loop_arg,
            tail=request.tail,
            output=request.output,
            query=request.query,
            list_runs=request.list_runs,
            run=request.run,
        )

    def list_running(self, *, as_json: bool) -> int:
        from little_loops.cli.cmd_inspect import list_command

        check_running_dir()
        return list_command(running=True, as_json=as_json)

    def watch(self, loop_arg: str, *, verbose: bool, wait: bool) -> int:
        from little_loops.cli.cmd_watch import watch_command
        from little_loops.cli.cross_engine import open_on_temporal
        from little_loops.cli.resolve import LOOPS_DIR, loop_name_for
        from little_loops.fsm.store.state_files import RUNNING_DIR

        check_running_dir()
        # The loop runs on Temporal now: follow that run, never an older local one
        # (issue 23 item 6).
        marker = open_on_temporal(LOOPS_DIR / RUNNING_DIR, loop_name_for(loop_arg))
        if marker is not None:
            from little_loops.cli.temporal_engine import watch_temporal

            write_error_line(f"{marker.loop} runs on Temporal (workflow {marker.workflow_id})")
            os.environ.setdefault("LL_TEMPORAL_ADDRESS", marker.address)  # where it runs
            os.environ.setdefault("LL_TEMPORAL_NAMESPACE", marker.namespace)
            return watch_temporal(loop_arg, verbose=verbose, wait=wait)
        return watch_command(loop_arg, verbose=verbose, wait=wait)


def check_running_dir() -> None:
    """`.loops/.running/` unusable: the line `run` gives, not a crash or "no state"."""
    from little_loops.cli.resolve import LOOPS_DIR
    from little_loops.cli.running_dir import check_running_dir as check

    check(LOOPS_DIR)
