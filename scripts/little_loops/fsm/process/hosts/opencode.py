"""OpenCode as an agent host: `opencode run --format json --auto`.

What was measured (/work/shared/spec/agent-hosts.md §3, opencode-ai 1.18.33): the prompt
is one argument after `--` (opencode joins its words with spaces and puts an argument that
has a space in double quotes: the agent sees the prompt quoted, as when a user types
`opencode run "..."`); `--auto` approves tool permissions the user's configuration does not
deny; `--title` names a new session (else opencode spends one more request on asking the
model for a title); `--session <id>` continues a session in a new process;
`--print-logs --log-level ERROR` puts opencode's errors on stderr, the only place a usage
limit shows while opencode sleeps out a long `retry-after` (see `opencode_errors`).
The user's configuration (`~/.config/opencode`, providers, keys) is used as it is.
"""

from __future__ import annotations

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts.base import HostCommand
from little_loops.fsm.process.hosts.json_lines import TextSink
from little_loops.fsm.process.hosts.opencode_errors import (
    is_auth_failure,
    is_usage_limit,
    stderr_stream_error,
)
from little_loops.fsm.process.hosts.opencode_stream import OpenCodeStream

__all__ = ["OpenCodeHost"]

HEADLESS_FLAGS = ("run", "--format", "json", "--auto", "--print-logs", "--log-level", "ERROR")
TITLE_CHARS = 60
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 524, 529})


class OpenCodeHost:
    """OpenCode (`opencode-ai`)."""

    name = "opencode"
    default_program = "opencode"
    program_env = "LL_OPENCODE_BIN"
    install_hint = "npm install -g opencode-ai (or set LL_OPENCODE_BIN)"
    takes_model = True  # as opencode names it: `provider/model`
    can_resume = True

    def command(
        self,
        program: str,
        prompt: str,
        *,
        resume_session: str | None = None,
        model: str | None = None,
    ) -> HostCommand:
        # `--flag=value`: a value starting with `-` is not read as another flag.
        session = [f"--session={resume_session}"] if resume_session else [_title(prompt)]
        chosen = [f"--model={model}"] if model else []
        return HostCommand([program, *HEADLESS_FLAGS, *session, *chosen, "--", prompt])

    def stream(self, sink: TextSink | None, *, cap: int) -> OpenCodeStream:
        return OpenCodeStream(sink, cap=cap)

    def ending(
        self, run: ClaudeRun, *, exit_code: int, output: str, stderr: str, now: float
    ) -> HostEnding:
        if exit_code == 0 and not run.is_error:
            return HostEnding("success")
        if run.is_error:
            return _api_ending(run)
        logged = stderr_stream_error(stderr)
        if logged is not None and is_usage_limit(logged, None):
            return HostEnding("usage_limit", logged)
        said = (logged or stderr or output).strip()
        return HostEnding("other", said[-500:] if said else f"opencode exited {exit_code}")


def _title(prompt: str) -> str:
    first_line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    return f"--title={first_line[:TITLE_CHARS] or 'll-loop'}"


def _api_ending(run: ClaudeRun) -> HostEnding:
    """The ending of a run that printed an `error` event (read into `run`)."""
    message = run.result_text or "API error"
    status = run.api_error_status
    limit = run.rate_limit
    if is_auth_failure(status, run.last_retry_error):
        return HostEnding("auth", message)
    if status == 429 and limit is not None and is_usage_limit(message, limit.limit_type):
        exact = limit.resets_at is not None
        return HostEnding("usage_limit", message, limit.resets_at, limit.limit_type, exact)
    if status in TRANSIENT_STATUSES or (status is not None and status >= 500):
        return HostEnding("transient", message)
    return HostEnding("other", message)
