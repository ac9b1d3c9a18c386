"""How a run's end is printed: the summary lines and the exit code, the same for `run`,
`resume` and `watch` (which follows a run another process drives)."""

from __future__ import annotations

from little_loops.cli.display import ProgressDisplay
from little_loops.cli.exit_codes import exit_code_for
from little_loops.cli.output import write_error_line, write_line
from little_loops.cli.summary import summarize
from little_loops.fsm.executor import ExecutionResult
from little_loops.fsm.schema import FSMLoop

__all__ = ["report_run"]


def report_run(
    result: ExecutionResult,
    fsm: FSMLoop,
    loop_arg: str,
    display: ProgressDisplay,
    *,
    quiet: bool = False,
) -> int:
    """Print how the run ended after its progress lines; return its exit code."""
    display.finish()
    summary = summarize(result, fsm, loop_arg)
    to_stdout = not quiet and not display.broken_pipe
    if to_stdout:
        write_line()
    if summary.is_problem:  # never hidden, not even by --quiet
        for line in summary.lines:
            write_error_line(line)
    elif to_stdout:
        for line in summary.lines:
            write_line(line)
    elif not display.broken_pipe:
        for line in summary.essential:  # --quiet: only what the user needs to go on
            write_line(line)
    return exit_code_for(result.terminated_by)
