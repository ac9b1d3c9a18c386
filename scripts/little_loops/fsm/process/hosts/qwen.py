"""Qwen Code as an agent host: `qwen --prompt=... --output-format stream-json --yolo`.

Qwen Code (`@qwen-code/qwen-code`, tested 0.24.4; /work/shared/spec/agent-hosts.md §4) is
a Gemini CLI fork whose stream-json has Claude Code's shape (`system`/`init`, `assistant`,
`user` tool results, `result` with `session_id`, `usage`, `is_error`), so its stream is read
by `ClaudeStream`; `QwenStream` adds the failed result's `error.message`, which Qwen Code
gives instead of a `result` text. Sessions continue with `--resume <id>`. The user's own
configuration (`~/.qwen/settings.json`: auth type, provider, keys) is used as it is.
"""

from __future__ import annotations

import json
import re

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import EndingKind, HostEnding
from little_loops.fsm.process.claude_stream import ClaudeStream
from little_loops.fsm.process.hosts.base import HostCommand
from little_loops.fsm.process.hosts.json_lines import TextSink

__all__ = ["QwenHost", "QwenStream"]

_STATUS = re.compile(r"API Error: (\d{3})\b")
_USAGE_WORDS = re.compile(r"usage limit|exceeded your current quota|quota exceeded", re.I)
_AUTH_WORDS = re.compile(r"api key|unauthori[sz]ed|authentication|invalid.*token", re.I)
_TRANSIENT_WORDS = re.compile(r"overloaded|rate limit|too many requests", re.I)


class QwenStream(ClaudeStream):
    """`ClaudeStream`, plus the message of a failed `result` (`error.message`)."""

    def _read_object(self, line: str) -> bool:
        if not super()._read_object(line):
            return False
        if self.run.is_error and self.run.result_text is None and '"error"' in line:
            error = json.loads(line).get("error")
            message = error.get("message") if isinstance(error, dict) else None
            if isinstance(message, str) and message:
                self.run.result_text = message
        return True


class QwenHost:
    """Qwen Code (`@qwen-code/qwen-code`)."""

    name = "qwen"
    default_program = "qwen"
    program_env = "LL_QWEN_BIN"
    install_hint = "npm install -g @qwen-code/qwen-code (or set LL_QWEN_BIN)"
    takes_model = True
    can_resume = True

    def command(
        self,
        program: str,
        prompt: str,
        *,
        resume_session: str | None = None,
        model: str | None = None,
    ) -> HostCommand:
        # `--flag=value`: a prompt starting with `-` is not read as another flag.
        resume = [f"--resume={resume_session}"] if resume_session else []
        chosen = [f"--model={model}"] if model else []
        flags = ["--output-format", "stream-json", "--yolo", *resume, *chosen]
        return HostCommand([program, f"--prompt={prompt}", *flags])

    def stream(self, sink: TextSink | None, *, cap: int) -> QwenStream:
        return QwenStream(sink, cap=cap)

    def ending(
        self, run: ClaudeRun, *, exit_code: int, output: str, stderr: str, now: float
    ) -> HostEnding:
        if exit_code == 0 and not run.is_error:
            return HostEnding("success")
        message = (run.result_text or output or stderr).strip()[-500:]
        return HostEnding(_kind(message), message or f"qwen exited {exit_code}")


def _kind(message: str) -> EndingKind:
    """The ending a failed run's message tells (`[API Error: 500 ...]`, the provider's words)."""
    found = _STATUS.search(message)
    status = int(found.group(1)) if found else None
    if _USAGE_WORDS.search(message):
        return "usage_limit"
    if status in (401, 403) or _AUTH_WORDS.search(message):
        return "auth"
    if status == 429 or (status is not None and status >= 500) or _TRANSIENT_WORDS.search(message):
        return "transient"
    return "other"
