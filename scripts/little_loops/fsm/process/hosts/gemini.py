"""Gemini CLI as an agent host: `gemini --prompt=... --output-format stream-json`.

Approvals are off (`--approval-mode yolo`) and folder trust is skipped (`--skip-trust`):
without it gemini refuses to run headless in a folder the user never trusted
interactively. Everything else (the account, key, base URL, settings) is the user's own
Gemini CLI configuration (`~/.gemini/`, `GEMINI_API_KEY`, ...), used as it is. The prompt
goes as `--prompt=<text>`, so a prompt starting with `-` is not taken for a flag.
"""

from __future__ import annotations

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts.base import HostCommand
from little_loops.fsm.process.hosts.gemini_endings import gemini_ending, stderr_words
from little_loops.fsm.process.hosts.gemini_stream import STREAM_JSON_FLAGS, GeminiStream
from little_loops.fsm.process.hosts.json_lines import TextSink

__all__ = ["HEADLESS_FLAGS", "GeminiHost"]

HEADLESS_FLAGS = (*STREAM_JSON_FLAGS, "--approval-mode", "yolo", "--skip-trust")


class GeminiHost:
    """Gemini CLI (`@google/gemini-cli`).

    One instance serves one run (`hosts.host_named` makes a new one each time): `stream`
    reads the run that `command` built, and knows whether it resumes a session.
    """

    name = "gemini"
    default_program = "gemini"
    program_env = "LL_GEMINI_BIN"
    install_hint = "npm install -g @google/gemini-cli (or set LL_GEMINI_BIN)"
    takes_model = True
    can_resume = True

    def __init__(self) -> None:
        self._resuming = False

    def command(
        self,
        program: str,
        prompt: str,
        *,
        resume_session: str | None = None,
        model: str | None = None,
    ) -> HostCommand:
        self._resuming = bool(resume_session)
        resume = ["--resume", resume_session] if resume_session else []
        chosen = ["--model", model] if model else []
        return HostCommand([program, f"--prompt={prompt}", *HEADLESS_FLAGS, *chosen, *resume])

    def stream(self, sink: TextSink | None, *, cap: int) -> GeminiStream:
        return GeminiStream(sink, cap=cap, resuming=self._resuming)

    def ending(
        self, run: ClaudeRun, *, exit_code: int, output: str, stderr: str, now: float
    ) -> HostEnding:
        words = run.result_text if run.is_error and run.result_text else output
        words = words or stderr_words(stderr)
        return gemini_ending(run, exit_code=exit_code, text=words, now=now)
