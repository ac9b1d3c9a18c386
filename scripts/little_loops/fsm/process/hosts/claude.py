"""Claude Code as an agent host: `claude -p --output-format stream-json --verbose`.

The adapter wraps what the runner has always done for slash commands (`claude_stream`,
`claude_limits`), so a loop that names no host runs exactly as before.
"""

from __future__ import annotations

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.claude_limits import classify_claude_result
from little_loops.fsm.process.claude_stream import STREAM_JSON_FLAGS, ClaudeStream, TextSink
from little_loops.fsm.process.hosts.base import HostCommand

__all__ = ["ClaudeHost"]


class ClaudeHost:
    """Claude Code (`@anthropic-ai/claude-code`)."""

    name = "claude"
    default_program = "claude"
    program_env = "LL_CLAUDE_BIN"
    install_hint = "npm install -g @anthropic-ai/claude-code (or set LL_CLAUDE_BIN)"
    takes_model = True
    can_resume = True

    def command(
        self,
        program: str,
        prompt: str,
        *,
        resume_session: str | None = None,
        model: str | None = None,
        extra_flags: tuple[str, ...] = (),
    ) -> HostCommand:
        """`extra_flags`: more of claude's own flags (HEAD's `--agent`, `--tools`, ...)."""
        resume = ["--resume", resume_session] if resume_session else []
        chosen = ["--model", model] if model else []
        flags = ["--dangerously-skip-permissions", *STREAM_JSON_FLAGS, *resume, *chosen]
        return HostCommand([program, *flags, *extra_flags, "-p", prompt])

    def stream(self, sink: TextSink | None, *, cap: int) -> ClaudeStream:
        return ClaudeStream(sink, cap=cap)

    def ending(
        self, run: ClaudeRun, *, exit_code: int, output: str, stderr: str, now: float
    ) -> HostEnding:
        if exit_code == 0 and not run.is_error:
            return HostEnding("success")
        rejected = (
            run.rate_limit
            if run.rate_limit is not None and run.rate_limit.status == "rejected"
            else None
        )
        hit = classify_claude_result(
            result_text=run.result_text,
            output=output,
            is_error=run.is_error,
            api_error_status=run.api_error_status,
            rejected_resets_at=rejected.resets_at if rejected is not None else None,
            rejected_type=rejected.limit_type if rejected is not None else None,
            now=now,
        )
        if hit is not None and hit.kind == "usage_limit":
            return HostEnding(
                "usage_limit", hit.message, hit.resets_at, hit.limit_type, hit.exact_reset
            )
        if hit is not None:
            return HostEnding("transient", hit.message)
        return HostEnding("other", (run.result_text or output or stderr).strip()[:500])
