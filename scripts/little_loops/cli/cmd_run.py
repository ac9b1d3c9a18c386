"""`ll-loop run` and `ll-loop resume` on this machine: load, apply the run's settings,
run with progress, report, exit.

The run's settings (`RunOptions.settings`) are applied to a copy of the loaded loop and
given to the `PersistentExecutor` at construction; the loaded loop is never changed. Both
commands share the run machinery: the loop lock (one run per loop name, no two
loops sharing a scope; see `fsm.locking`), taken before any file of the loop is touched
and held until the run ends (or handed over to a spawned session), a `PersistentExecutor`
whose events feed the progress display, SIGINT/SIGTERM turned into a clean shutdown, and
one summary plus an exit code derived from how the run ended (`exit_codes`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from little_loops.cli.background import log_path_for, refuse_unresumable, start_detached
from little_loops.cli.cap_text import cap_line
from little_loops.cli.context_check import unused_context_warnings
from little_loops.cli.context_option import saved_context_overrides
from little_loops.cli.cross_engine import refuse_if_on_temporal
from little_loops.cli.display import ProgressDisplay
from little_loops.cli.exit_codes import FAILED, OK, USAGE
from little_loops.cli.host_preflight import missing_host_refusal
from little_loops.cli.live_line import ticking
from little_loops.cli.loop_inputs import apply_run_inputs, legacy_input_refusal
from little_loops.cli.orphans import stop_orphans, stopped_line
from little_loops.cli.output import NO_PROMPT, Logger, write_error_line, write_line
from little_loops.cli.plan import plan_lines
from little_loops.cli.resolve import LOOPS_DIR, load_resolved
from little_loops.cli.restore_run import bring_back_from_history
from little_loops.cli.run_options import RunOptions as RunOptions  # its old home
from little_loops.cli.run_report import report_run
from little_loops.cli.signals import shutdown_on_signals
from little_loops.cli.state_efforts import state_efforts
from little_loops.fsm.errors import RunFilesError
from little_loops.fsm.executor import ExecutionResult
from little_loops.fsm.judging.llm_needs import run_refusal
from little_loops.fsm.model.approval import asks_a_person
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.persistence import (
    RUNNING_DIR,
    ArchivedRun,
    LoopState,
    PersistentExecutor,
    StatePersistence,
)
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.locking import LoopLock, acquire_loop_lock
from little_loops.fsm.store.run_history import UNFINISHED_STATUSES


class UsageError(Exception):
    """A command line that cannot run this loop: one line, exit 2."""


HANDOFF_LOCK_WAIT_SECONDS = 15.0
"""How long `resume` of a handed-off loop waits for the spawning run to let go of it."""


def apply_overrides(fsm: FSMLoop, options: RunOptions) -> None:
    """Give `fsm` itself this run's settings (for a caller that holds the loaded loop;
    `run` and `resume` never do this: they run `options.settings.applied_to(loop)`, a copy)."""
    applied = options.settings.applied_to(fsm)
    for field in dataclasses.fields(fsm):
        setattr(fsm, field.name, getattr(applied, field.name))


def load_for_run(loop_arg: str, options: RunOptions) -> tuple[Path, FSMLoop, dict[str, Any]]:
    """The loop to run with this run's overrides and inputs, and the context values the
    run keeps for `resume` (`--context`, and a HEAD file's positional input)."""
    path, loaded = load_resolved(loop_arg, context_overrides=dict(options.context))
    for warning in unused_context_warnings(path, loaded.name, dict(options.context)):
        write_error_line(warning)
    if options.input is not None and not isinstance(loaded, HeadLoop):
        raise UsageError(legacy_input_refusal(loop_arg, options.input))
    fsm = options.settings.applied_to(loaded)
    kept = apply_run_inputs(fsm, positional=options.input, given=dict(options.context))
    return path, fsm, kept


def run_command(
    loop_arg: str,
    options: RunOptions,
    *,
    dry_run: bool = False,
    background: bool = False,
    follow: bool = False,
) -> int:
    """`ll-loop run <loop>`: plan, detach (and `follow`), or run in the foreground."""
    try:
        path, fsm, kept = load_for_run(loop_arg, options)
    except UsageError as exc:
        write_error_line(str(exc))
        return USAGE
    if dry_run:
        for line in plan_lines(fsm):
            write_line(line)
        return OK
    # Before claude runs and is billed (issue 23 item 8), and before hours pass on the way
    # to a state whose agent CLI is missing (issue 24).
    refusal = run_refusal(fsm) or missing_host_refusal(fsm)
    if refusal is not None:
        write_error_line(refusal)
        return FAILED
    if background:
        return _start_background(path, fsm, options, follow=follow, loop_arg=loop_arg)
    with _take_lock(fsm, options) as lock:
        display = progress_display(fsm, options)
        # Printed by the display, which keeps the run going if stdout goes away.
        display.preamble = [
            f"Running loop: {fsm.name}",
            cap_line(fsm),
            "",
        ]
        persistence = StatePersistence(fsm.name, LOOPS_DIR)
        executor = _executor(fsm, display, lock, persistence, options, context_overrides=kept)
        _say_if_unfinished(executor.archive_previous(), loop_arg)
        result = _execute(executor, display, lambda: executor.run(clear_previous=False))
        return report_run(result, fsm, loop_arg, display, quiet=options.quiet)


def _warn_before_archiving(persistence: StatePersistence) -> None:
    """`run --background` archives in the detached process: say it here, where it is seen."""
    old = persistence.load_state()
    if old is not None and old.status in UNFINISHED_STATUSES:
        write_error_line(
            f"A new run of {old.loop_name} starts; the unfinished one ({old.status} at state "
            f"'{old.current_state}') is kept in .loops/.history/{old.loop_name}/. To go back "
            f"to it once the new run has ended: ll-loop resume {old.loop_name} --from-history"
        )


def _say_if_unfinished(archived: ArchivedRun | None, loop_arg: str) -> None:
    """A new run moved an unfinished one away: say so, and how to get it back."""
    if archived is None or archived.state is None or not archived.unfinished:
        return
    old = archived.state
    write_error_line(
        f"A new run of {old.loop_name} started; the unfinished one ({old.status} at state "
        f"'{old.current_state}', iteration {old.current_iteration()}) is kept in "
        f"{archived.folder}. To go back to it once the new run has ended: "
        f"ll-loop resume {old.loop_name} --from-history"
    )


def resume_command(
    loop_arg: str,
    options: RunOptions,
    *,
    background: bool = False,
    from_history: bool = False,
    follow: bool = False,
) -> int:
    """`ll-loop resume <loop>`: continue a saved run with run's progress and exit codes.

    `from_history`: first bring back the newest unfinished run a later `run` archived.
    `background`: detach, as `run --background` does (and `follow` it).
    """
    saved_context = saved_context_overrides(loop_arg)
    path, loaded = load_resolved(loop_arg, context_overrides=saved_context)
    fsm = options.settings.applied_to(loaded)
    persistence = StatePersistence(fsm.name, LOOPS_DIR)
    # A damaged or missing state file is what to say first (load_state_checked raises for
    # the first); only a run that can be resumed has its HEAD inputs checked again.
    if from_history or persistence.load_state_checked() is not None:
        apply_run_inputs(fsm, positional=None, given=saved_context)  # HEAD: parameters again
    refusal = run_refusal(fsm) or missing_host_refusal(fsm)
    if refusal is not None:
        write_error_line(refusal)
        return FAILED
    if background:
        if not from_history:  # else the run to resume is still in .loops/.history/
            if persistence.load_state_checked() is None:
                Logger().warning(f"Nothing to resume for: {loop_arg}")  # as in the foreground
                return FAILED
            refuse_unresumable(persistence, fsm)  # seen here, not only in the log
        return _start_background(
            path,
            fsm,
            options,
            command="resume",
            from_history=from_history,
            follow=follow,
            loop_arg=loop_arg,
        )
    with _take_lock(fsm, options, wait=_lock_wait(persistence)) as lock:
        with contextlib.suppress(OSError):  # then the first write fails and says why
            persistence.remove_crash_leftovers()
        display = progress_display(fsm, options)
        executor = _executor(fsm, display, lock, persistence, options)
        if from_history:
            bring_back_from_history(executor, loop_arg, Logger(quiet=options.quiet))
        saved = persistence.load_state_checked()
        if saved is None:
            Logger().warning(f"Nothing to resume for: {loop_arg}")  # reference wording
            return FAILED
        # We hold the lock, so the runner that recorded these is gone: never run an
        # action again beside the copy it left running.
        for pgid in stop_orphans(saved, loop_arg):
            Logger(quiet=options.quiet).warning(stopped_line(pgid))
        # Shown on the first event, so a refused resume prints only its reason.
        display.preamble = resume_header(saved, fsm)
        result = _execute(executor, display, executor.resume_checked)
        return report_run(result, fsm, loop_arg, display, quiet=options.quiet)


def _lock_wait(persistence: StatePersistence) -> float:
    """A spawned handoff session resumes while the run that spawned it may still exit."""
    saved = persistence.load_state_checked()  # unlocked, but written atomically
    handed_off = saved is not None and saved.status == "awaiting_continuation"
    return HANDOFF_LOCK_WAIT_SECONDS if handed_off else 0.0


def _take_lock(
    fsm: FSMLoop, options: RunOptions, *, wait: float = 0.0, check_scope: bool = True
) -> LoopLock:
    """The loop's lock; refused (`LoopBusyError`, exit 6) or waited for with `--queue`.

    While it waits, SIGTERM (`ll-loop stop`) gives up as Ctrl-C does: exit 130.
    """
    running_dir = LOOPS_DIR / RUNNING_DIR
    with shutdown_on_signals(_give_up):
        lock = acquire_loop_lock(
            running_dir,
            fsm.name,
            fsm.scope if check_scope else (),
            wait_for_lock=wait,
            queue=options.queue,
            on_wait=Logger(quiet=options.quiet).warning,
        )
    try:  # the lock first, then the markers: see `cross_engine`
        refuse_if_on_temporal(running_dir, fsm.name, fsm.scope if check_scope else ())
    except BaseException:
        lock.release()
        raise
    return lock


def _give_up() -> None:
    raise KeyboardInterrupt


def _execute(
    executor: PersistentExecutor,
    display: ProgressDisplay,
    start: Callable[[], ExecutionResult],
) -> ExecutionResult:
    """Run or resume with Ctrl-C/SIGTERM wired to a clean shutdown."""
    try:
        with shutdown_on_signals(executor.request_shutdown), ticking(display):
            return start()
    except RunFilesError:
        display.finish()  # end the progress line before the error is printed
        raise


def progress_display(fsm: FSMLoop, options: RunOptions) -> ProgressDisplay:
    return ProgressDisplay(
        max_iterations=fsm.max_iterations,
        verbose=options.verbose,
        enabled=not options.quiet,
        live=sys.stdout.isatty(),  # the running action's time, redrawn in place
        efforts=state_efforts(fsm),
    )


def _executor(
    fsm: FSMLoop,
    display: ProgressDisplay,
    lock: LoopLock,
    persistence: StatePersistence,
    options: RunOptions,
    *,
    context_overrides: Mapping[str, Any] | None = None,
) -> PersistentExecutor:
    executor = PersistentExecutor(
        fsm,
        persistence,
        settings=options.settings,
        context_overrides=context_overrides,
        event_callback=display,
        before_spawn=lock.release,  # the spawned session's `ll-loop resume` needs the lock
        # Lines go to the display only when it shows them: a callback per line costs time
        # on a chatty action even when it does nothing.
        output_callback=display.on_output_line if display.enabled and display.verbose else None,
    )
    if asks_a_person(fsm) and sys.stdin.isatty() and sys.stdout.isatty():
        from little_loops.cli.approval_prompt import TerminalApprovals  # only such loops

        executor.add_approval_inbox(TerminalApprovals(sys.stdin))  # y/n/e typed here
    return executor


def resume_header(saved: LoopState, fsm: FSMLoop) -> list[str]:
    lines = [
        f"Resuming loop '{fsm.name}' from state '{saved.current_state}' "
        f"(iteration {saved.current_iteration()})"
    ]
    if saved.status == "awaiting_continuation":
        lines.append(f"Continuation context: {saved.continuation_prompt or NO_PROMPT}")
    return [*lines, cap_line(fsm), ""]


def _start_background(
    path: Path,
    fsm: FSMLoop,
    options: RunOptions,
    *,
    command: str = "run",
    from_history: bool = False,
    follow: bool = False,
    loop_arg: str = "",
) -> int:
    args = [str(path)]
    if options.input is not None:
        args.append(options.input)
    if options.max_steps is not None:
        args += ["--max-steps", str(options.max_steps)]
    if from_history:
        args.append("--from-history")
    if options.max_iterations is not None:
        args += ["--max-iterations", str(options.max_iterations)]
    if options.no_llm:
        args.append("--no-llm")
    if options.llm_model is not None:
        args += ["--llm-model", options.llm_model]
    if options.verbose:
        args.append("--verbose")
    if options.queue:
        args.append("--queue")
    if options.max_continuations is not None:
        args += ["--max-continuations", str(options.max_continuations)]
    if options.stall_threshold is not None:
        args += ["--stall-threshold", str(options.stall_threshold)]
    if options.max_cost is not None:
        args += ["--max-cost", repr(options.max_cost)]
    if options.max_tokens is not None:
        args += ["--max-tokens", str(options.max_tokens)]
    for key, value in options.context:
        args += ["--context", f"{key}={value}"]
    if options.notify is not None:
        args.append(f"--notify={options.notify}")  # `=`: a command may start with "-"
    log_path = log_path_for(LOOPS_DIR, fsm.name)
    # Checked here so a refusal is seen at once, and held while the log of a running
    # loop would be truncated. A queued start waits in the background, not here.
    with _take_lock(fsm, options, check_scope=not options.queue):
        if command == "run":
            _warn_before_archiving(StatePersistence(fsm.name, LOOPS_DIR))
        pid = start_detached(args, log_path, command=command)
    logger = Logger(quiet=options.quiet)
    logger.success(f"Started {fsm.name} in the background (pid {pid})")
    if follow:
        from little_loops.cli.cmd_watch import watch_command

        return watch_command(loop_arg or str(path), verbose=options.verbose, started_pid=pid)
    if not options.quiet:
        write_line(f"  log:    {log_path}")
        write_line(f"  status: ll-loop status {fsm.name}")
        write_line(f"  stop:   ll-loop stop {fsm.name}")
    return OK
