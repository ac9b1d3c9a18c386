"""`ll-loop run` and `ll-loop resume`: load, override, run with progress, report, exit.

Both commands share the run machinery: a `PersistentExecutor` whose events feed the
progress display, SIGINT/SIGTERM turned into a clean shutdown, and one summary plus an
exit code derived from how the run ended (`exit_codes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from little_loops.cli.background import log_path_for, start_detached
from little_loops.cli.display import ProgressDisplay
from little_loops.cli.exit_codes import OK, exit_code_for
from little_loops.cli.output import Logger, write_error_line, write_line
from little_loops.cli.plan import plan_lines
from little_loops.cli.resolve import LOOPS_DIR, load_resolved
from little_loops.cli.signals import shutdown_on_signals
from little_loops.cli.summary import summarize
from little_loops.fsm.executor import ExecutionResult
from little_loops.fsm.persistence import LoopState, PersistentExecutor
from little_loops.fsm.schema import FSMLoop


@dataclass(frozen=True)
class RunOptions:
    """Per-run overrides and display choices shared by `run` and `resume`."""

    max_iterations: int | None = None
    no_llm: bool = False
    llm_model: str | None = None
    quiet: bool = False
    verbose: bool = False


def apply_overrides(fsm: FSMLoop, options: RunOptions) -> None:
    """Replace the loop's limit and LLM settings for this run only (never the file)."""
    if options.max_iterations is not None:
        fsm.max_iterations = options.max_iterations
    if options.llm_model is not None:
        fsm.llm.model = options.llm_model
    if options.no_llm:
        fsm.llm.enabled = False


def run_command(
    loop_arg: str, options: RunOptions, *, dry_run: bool = False, background: bool = False
) -> int:
    """`ll-loop run <loop>`: plan, detach, or run in the foreground."""
    path, fsm = load_resolved(loop_arg)
    apply_overrides(fsm, options)
    if dry_run:
        for line in plan_lines(fsm):
            write_line(line)
        return OK
    if background:
        return _start_background(path, fsm, options)
    display = _display(fsm, options)
    if not options.quiet:
        write_line(f"Running loop: {fsm.name}")
        write_line(f"Max iterations: {fsm.max_iterations}")
        write_line()
    executor = _executor(fsm, display)
    with shutdown_on_signals(executor.request_shutdown):
        result = executor.run()
    return _report(result, fsm, loop_arg, display, options)


def resume_command(loop_arg: str, options: RunOptions) -> int:
    """`ll-loop resume <loop>`: continue a saved run with run's progress and exit codes."""
    _, fsm = load_resolved(loop_arg)
    apply_overrides(fsm, options)
    display = _display(fsm, options)
    executor = _executor(fsm, display)
    saved = executor.persistence.load_state_checked()
    if saved is not None:
        # Shown on the first event, so a refused resume prints only its reason.
        display.preamble = _resume_header(saved, fsm)
    with shutdown_on_signals(executor.request_shutdown):
        result = executor.resume_checked()
    return _report(result, fsm, loop_arg, display, options)


def _display(fsm: FSMLoop, options: RunOptions) -> ProgressDisplay:
    return ProgressDisplay(
        max_iterations=fsm.max_iterations, verbose=options.verbose, enabled=not options.quiet
    )


def _executor(fsm: FSMLoop, display: ProgressDisplay) -> PersistentExecutor:
    return PersistentExecutor(
        fsm,
        loops_dir=LOOPS_DIR,
        event_callback=display,
        output_callback=display.on_output_line,
    )


def _resume_header(saved: LoopState, fsm: FSMLoop) -> list[str]:
    lines = [
        f"Resuming loop '{fsm.name}' from state '{saved.current_state}' "
        f"(iteration {saved.iteration})"
    ]
    if saved.status == "awaiting_continuation" and saved.continuation_prompt:
        lines.append(f"Continuation context: {saved.continuation_prompt}")
    return [*lines, f"Max iterations: {fsm.max_iterations}", ""]


def _report(
    result: ExecutionResult,
    fsm: FSMLoop,
    loop_arg: str,
    display: ProgressDisplay,
    options: RunOptions,
) -> int:
    display.finish()
    summary = summarize(result, fsm, loop_arg)
    to_stdout = not options.quiet and not display.broken_pipe
    if to_stdout:
        write_line()
    if summary.is_problem:  # never hidden, not even by --quiet
        for line in summary.lines:
            write_error_line(line)
    elif to_stdout:
        for line in summary.lines:
            write_line(line)
    return exit_code_for(result.terminated_by)


def _start_background(path: Path, fsm: FSMLoop, options: RunOptions) -> int:
    args = [str(path)]
    if options.max_iterations is not None:
        args += ["--max-iterations", str(options.max_iterations)]
    if options.no_llm:
        args.append("--no-llm")
    if options.llm_model is not None:
        args += ["--llm-model", options.llm_model]
    if options.verbose:
        args.append("--verbose")
    log_path = log_path_for(LOOPS_DIR, fsm.name)
    pid = start_detached(args, log_path)
    logger = Logger(quiet=options.quiet)
    logger.success(f"Started {fsm.name} in the background (pid {pid})")
    if not options.quiet:
        write_line(f"  log:    {log_path}")
        write_line(f"  status: ll-loop status {fsm.name}")
        write_line(f"  stop:   ll-loop stop {fsm.name}")
    return OK
