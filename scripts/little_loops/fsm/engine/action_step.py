"""One state's action: its text, its timeout, the runner call, its events and capture.

`prepare_action` interpolates the action (delivering a continued or resumed handoff's
prompt to its slash command once), emits `action_start` and returns the `RunAction`
request; the driver runs it (`call_runner`: through an `ActionRunner`, with the signal
scan and output callback attached); `complete_action` emits `action_complete`, stores the
capture in the run's cursor, and returns the `Step` the evaluation continues with.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

from little_loops.fsm.engine.context import ActionRunner, StepContext
from little_loops.fsm.engine.cursor_records import HandoffContext
from little_loops.fsm.engine.events import (
    ACTION_COMPLETE,
    ACTION_START,
    APPEND_TO_MESSAGES_FAILED,
    SIGNAL_IGNORED,
)
from little_loops.fsm.engine.guards import stderr_tail
from little_loops.fsm.engine.head_actions import (
    action_limit,
    appended_message,
    claude_flags,
    complete_keys,
    continued_prompt,
    idle_seconds,
    is_prompt_mode,
    leave_summary,
    mcp_command,
    no_run_verdict,
)
from little_loops.fsm.engine.head_capture import head_capture
from little_loops.fsm.engine.host_step import first_host, on_host, on_host_keys
from little_loops.fsm.engine.run_requests import RunAction
from little_loops.fsm.engine.step_result import Step, error_step, log_key
from little_loops.fsm.interpolation import InterpolationContext, InterpolationError, interpolate
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.model.head_loop import HeadStateConfig, is_head
from little_loops.fsm.model.log_names import action_log_name, retry_log_path
from little_loops.fsm.model.slash_commands import is_slash_command
from little_loops.fsm.schema import StateConfig
from little_loops.fsm.signal_detector import DetectedSignal, SignalScan

__all__ = [
    "DEFAULT_ACTION_TIMEOUT",
    "StreamingRunner",
    "call_runner",
    "claude_keys",
    "complete_action",
    "completed_keys",
    "is_slash",
    "prepare_action",
    "prepare_retry",
    "spent_tokens",
]

DEFAULT_ACTION_TIMEOUT = 120


class StreamingRunner(Protocol):
    """A runner whose class sets `supports_streaming = True`: it takes `on_line` (each
    line); with `supports_text_blocks = True` also `on_text` (blocks of whole lines); with
    `supports_output_log = True` also `log_path`; with `supports_resume_session = True`
    also `resume_session`."""

    def run(
        self,
        action: str,
        timeout: float,
        is_slash_command: bool,
        *,
        on_line: Callable[[str], None] | None = None,
        on_text: Callable[[str], None] | None = None,
        log_path: Path | None = None,
        resume_session: str | None = None,
    ) -> ActionResult: ...


def prepare_action(
    sc: StepContext, state: StateConfig, ctx: InterpolationContext
) -> RunAction | Step:
    """The request that runs `state`'s action (`action_start` emitted), or the `error`
    step when its text cannot be interpolated."""
    assert state.action
    if isinstance(state, HeadStateConfig):
        return _prepare_head(sc, state, ctx)
    try:
        action = _action_text(sc, state, ctx)
    except InterpolationError as exc:
        return error_step(f"Cannot interpolate action: {exc}")
    slash = is_slash(state, action)
    host = on_host_keys(first_host(sc, state)) if slash else {}
    sc.emit(ACTION_START, action=action, **host)
    timeout = _action_timeout(sc, state.timeout or DEFAULT_ACTION_TIMEOUT)
    scan = sc.signal_detector.scan() if sc.signal_detector is not None else None
    request = RunAction(action, timeout, slash, scan, _log_path(sc))
    return on_host(request, first_host(sc, state)) if slash else request


def _prepare_head(
    sc: StepContext, state: HeadStateConfig, ctx: InterpolationContext
) -> RunAction | Step:
    """`prepare_action` for a HEAD state: prompt mode and its flags, `mcp_tool`, HEAD's
    timeouts, a continued session; a state that runs nothing gives its verdict."""
    fixed = no_run_verdict(state)
    if fixed is not None:
        return Step(verdict=fixed[0], details=dict(fixed[1]))
    try:
        action = _action_text(sc, state, ctx)
        if state.action_type == "mcp_tool":
            action = mcp_command(state, action, ctx)
    except InterpolationError as exc:
        return error_step(f"Cannot interpolate action: {exc}")
    prompt = is_prompt_mode(state, action)
    if prompt:
        action = continued_prompt(sc.fsm, state, sc.cursor.head, action)
    host = on_host_keys(first_host(sc, state)) if prompt else {}
    sc.emit(ACTION_START, action=action, **host)
    timeout = _action_timeout(sc, action_limit(sc.fsm, state, prompt))
    scan = sc.signal_detector.scan() if sc.signal_detector is not None else None
    flags = claude_flags(state) if prompt else ()
    idle = idle_seconds(sc.fsm, state)
    request = RunAction(
        action, timeout, prompt, scan, _log_path(sc), claude_flags=flags, idle_timeout=idle
    )
    return on_host(request, first_host(sc, state), state.model) if prompt else request


def prepare_retry(
    sc: StepContext,
    state: StateConfig,
    first: RunAction,
    *,
    action: str,
    session: str | None,
    retry: int,
) -> RunAction:
    """The request that runs `state`'s action again after a limit, its `retry`-th time:
    `action` (the same text, or a prompt to continue claude's `session`), a fresh scan
    and timeout, and a log of its own (the earlier runs' logs stay as their
    `action_complete` events name them)."""
    sc.emit(ACTION_START, action=action, **on_host_keys(first.host))
    timeout = _action_timeout(sc, _limit(sc, state, first.slash))
    scan = sc.signal_detector.scan() if sc.signal_detector is not None else None
    log_path = retry_log_path(first.log_path, retry) if first.log_path is not None else None
    return RunAction(
        action,
        timeout,
        first.slash,
        scan,
        log_path,
        session,
        claude_flags=first.claude_flags,
        idle_timeout=first.idle_timeout,
        host=first.host,
        model=first.model,
    )


def complete_action(
    sc: StepContext, state: StateConfig, request: RunAction, result: ActionResult
) -> Step:
    """What the action `request` ran produced: `action_complete`, the capture, the signal
    acted on; a failure to run becomes the `error` verdict."""
    scan = request.scan
    if scan is not None and scan.lines == 0:
        # A runner that does not stream (or streamed nothing): scan what it returned.
        scan.feed_text(result.output)
    if result.error is not None and "\x00" in request.action:
        result.error = nul_byte_message(sc.cursor.captured, sc.fsm.context)
    head_state = state if isinstance(state, HeadStateConfig) else None
    shown = complete_keys(head_state) if head_state is not None else {}
    sc.emit(ACTION_COMPLETE, **completed_keys(result), **shown)
    if state.capture:
        head = is_head(sc.fsm)
        sc.cursor.captured[state.capture] = (
            head_capture(state, result) if head else _capture(result)
        )
    step = Step(action=result, slash=request.slash, signal=_acted_on(sc, scan))
    if step.signal is None:
        _say_signal_on_stderr(sc, result.stderr)
    limit = _limit(sc, state, request.slash)
    step.cut_by_loop_timeout = result.timed_out and request.timeout < limit
    if result.error is not None:
        step.verdict, step.details = "error", {"error": result.error}
        step.raised = True
    if head_state is not None:
        _after_head_action(sc, head_state, request, step)
    return step


def _limit(sc: StepContext, state: StateConfig, prompt: bool) -> float:
    """The action's own time limit (before the loop's `timeout` cuts it shorter)."""
    if isinstance(state, HeadStateConfig):
        return action_limit(sc.fsm, state, prompt)
    return state.timeout or DEFAULT_ACTION_TIMEOUT


def _after_head_action(
    sc: StepContext, state: HeadStateConfig, request: RunAction, step: Step
) -> None:
    """A HEAD action's aftermath: the session summary (§7.8), `append_to_messages`."""
    assert step.action is not None
    head = sc.cursor.head
    if request.slash:
        handed_off = step.signal_of("handoff") is not None
        leave_summary(sc.fsm, state, head, step.action, handed_off=handed_off)
    try:
        message = appended_message(state, sc.interpolation())
    except InterpolationError as exc:
        sc.emit(APPEND_TO_MESSAGES_FAILED, state=sc.cursor.current_state, error=str(exc))
        return
    if message is not None:
        head.messages.append(message)


def is_slash(state: StateConfig, action: str) -> bool:
    """`action_type` decides when set; otherwise the shape of the interpolated action
    (HEAD files: `prompt` too, and any leading `/`, see `head_actions.is_prompt_mode`)."""
    if isinstance(state, HeadStateConfig):
        return is_prompt_mode(state, action)
    if state.action_type is not None:
        return state.action_type == "slash_command"
    return is_slash_command(action)


def _action_text(sc: StepContext, state: StateConfig, ctx: InterpolationContext) -> str:
    """The interpolated action; a resumed handoff's prompt reaches its slash command."""
    assert state.action
    action = interpolate(state.action, ctx)
    cursor = sc.cursor
    handoff = HandoffContext.from_dict(cursor.handoff_context)
    if handoff is None or handoff.state != cursor.current_state or cursor.handoff_delivered:
        return action
    cursor.handoff_delivered = True
    prompt = handoff.prompt
    if prompt and is_slash(state, action) and "${handoff.prompt}" not in state.action:
        action = f"{action}\n\n{prompt}"
    return action


def _log_path(sc: StepContext) -> Path | None:
    """Where this action's whole stdout goes (`<iteration>-<state>.log`); None: no logs."""
    if sc.log_dir is None:
        return None
    return sc.log_dir / action_log_name(sc.cursor.iteration, sc.cursor.current_state)


def _action_timeout(sc: StepContext, limit: float) -> float:
    if not sc.fsm.timeout:
        return limit
    remaining = sc.fsm.timeout - sc.elapsed_ms() / 1000
    return min(limit, max(remaining, 0.001))  # an action never outlives the loop


def completed_keys(result: ActionResult) -> dict[str, Any]:
    """The payload of `action_complete`."""
    completed: dict[str, Any] = {
        "exit_code": result.exit_code,
        "duration_ms": result.duration_ms,
    }
    if result.error is not None:
        completed["error"] = result.error
    elif result.exit_code != 0 and stderr_tail(result.stderr):
        completed["stderr_tail"] = stderr_tail(result.stderr)  # addition: why it failed
    if result.log_path is not None:
        completed["log_path"] = result.log_path  # addition: the action's whole stdout
    completed.update(claude_keys(result))
    return completed


def claude_keys(result: ActionResult) -> dict[str, Any]:
    """Additions to `action_complete` for a slash command: what claude reported (cost,
    tokens, turns, session, its error status)."""
    claude = result.claude
    if claude is None:
        return {}
    keys: dict[str, Any] = {}
    if claude.host is not None:
        keys["host"] = claude.host  # another agent CLI than claude ran it (issue 24)
    if claude.cost_usd is not None:
        keys["cost_usd"] = claude.cost_usd
    tokens = spent_tokens(result)
    if any(tokens.values()):
        keys["tokens"] = tokens
    for key in ("num_turns", "session_id", "api_error_status"):
        if getattr(claude, key) is not None:
            keys[key] = getattr(claude, key)
    if claude.is_error:
        keys["is_error"] = True
    return keys


def spent_tokens(result: ActionResult) -> dict[str, int]:
    """The tokens claude reported for the action, by kind (none for shell actions)."""
    claude = result.claude
    if claude is None:
        return {}
    return {
        "input": claude.input_tokens,
        "output": claude.output_tokens,
        "cache_read": claude.cache_read_tokens,
        "cache_creation": claude.cache_creation_tokens,
    }


def _capture(result: ActionResult) -> dict[str, Any]:
    """What `capture:` stores under `${captured.<name>.*}`."""
    return {
        "output": result.output,
        "stderr": result.stderr,
        "exit_code": result.exit_code,
        "duration_ms": result.duration_ms,
        **log_key(result),
    }


def _acted_on(sc: StepContext, scan: SignalScan | None) -> DetectedSignal | None:
    """The signal the run acts on; a handoff is also kept as the cursor's pending one."""
    if scan is None:
        return None
    signal = scan.actionable()
    if signal is not None and signal.signal_type == "handoff":
        sc.cursor.pending_handoff = signal
    return signal


def call_runner(
    runner: ActionRunner,
    action: str,
    timeout: float,
    slash: bool,
    scan: SignalScan | None,
    output_callback: Callable[[str], None] | None,
    log_path: Path | None,
    resume_session: str | None = None,
    *,
    claude_flags: tuple[str, ...] = (),
    idle_timeout: float | None = None,
    host: str | None = None,
    model: str | None = None,
) -> ActionResult:
    """Run `action`; feed the scan from the stream, or from the result when nothing streamed.

    `log_path` reaches only runners that set `supports_output_log`, `resume_session`
    only those that set `supports_resume_session` (and only when there is one);
    `claude_flags` and `idle_timeout` (HEAD files) only those that set
    `supports_head_options`; `host` and `model` (a prompt action on another agent CLI
    than claude, issue 24) only those that set `supports_hosts`.
    """
    extra: dict[str, Any] = {}
    if host is not None and getattr(runner, "supports_hosts", False) is True:
        extra["host"] = host
        extra["model"] = model
    if resume_session is not None and getattr(runner, "supports_resume_session", False) is True:
        extra["resume_session"] = resume_session
    head_options = getattr(runner, "supports_head_options", False) is True
    if head_options and claude_flags:
        extra["claude_flags"] = claude_flags
    if head_options and idle_timeout is not None:
        extra["idle_timeout"] = idle_timeout
    if getattr(runner, "supports_streaming", False) is True:
        streaming = cast(StreamingRunner, runner)
        feeds = _streaming_feeds(streaming, scan, output_callback, log_path)
        return streaming.run(action, timeout=timeout, is_slash_command=slash, **feeds, **extra)
    run: Callable[..., ActionResult] = runner.run
    return run(action, timeout=timeout, is_slash_command=slash, **extra)


def _streaming_feeds(
    runner: StreamingRunner,
    scan: SignalScan | None,
    output_callback: Callable[[str], None] | None,
    log_path: Path | None,
) -> dict[str, Any]:
    """What to give a streaming runner: the readers, and a log when we keep logs and it can.

    The signal scan reads the output in blocks (`on_text`) and the output callback
    line by line (`on_line`), so both see every line, also those the runner no longer
    keeps in memory, and a quiet run pays no per-line call at all.
    """
    feeds: dict[str, Any] = {"on_line": output_callback}
    if scan is not None and getattr(runner, "supports_text_blocks", False) is True:
        feeds["on_text"] = scan.feed_block
    elif scan is not None:
        feeds["on_line"] = _both(scan.feed, output_callback)
    if log_path is not None and getattr(runner, "supports_output_log", False) is True:
        feeds["log_path"] = log_path
    return feeds


def _both(
    first: Callable[[str], None], second: Callable[[str], None] | None
) -> Callable[[str], None]:
    """One line callback that calls `first`, then `second` when there is one."""
    if second is None:
        return first

    def call_both(line: str) -> None:
        first(line)
        second(line)

    return call_both


def nul_byte_message(captured: dict[str, Any], context: dict[str, Any]) -> str:
    """Why an action with a NUL byte could not run, naming where the NUL came from (a
    command line cannot hold one; the runner only said `embedded null byte`)."""
    sources = [
        f"${{captured.{name}.{key}}}"
        for name, value in captured.items()
        if isinstance(value, dict)
        for key, text in value.items()
        if isinstance(text, str) and "\x00" in text
    ]
    sources += [
        f"${{context.{key}}}"
        for key, text in context.items()
        if isinstance(text, str) and "\x00" in text
    ]
    where = f", from {', '.join(sources)}" if sources else ""
    return (
        f"Cannot run action: it contains a NUL byte{where} (a command line cannot hold one: "
        "strip it where it is made, e.g. with tr -d '\\000')"
    )


def _say_signal_on_stderr(sc: StepContext, stderr: str | None) -> None:
    """A signal marker printed on stderr is not acted on (signals are read from stdout, as
    the reference read them): say so, once per action, so the loop author can fix it."""
    detector = sc.signal_detector
    if detector is None or not stderr:
        return
    found = detector.detect_first(stderr)
    if found is not None:
        marker = found.raw_match.split(":", 1)[0] + ":"
        sc.emit(SIGNAL_IGNORED, stream="stderr", marker=marker)
