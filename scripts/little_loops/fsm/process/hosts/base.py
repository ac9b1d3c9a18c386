"""What every agent host adapter provides (`AgentHost`), and the records it returns.

One small adapter per agent CLI (`claude`, `codex`, `gemini`, `opencode`, `qwen`) sits
behind this interface, so the runner drives any of them the same way:

1. `command()` builds the headless command line (and any environment it needs on top of
   the runner's own); the runner starts it with stdin closed, in its own process group,
   under the action's wall clock, exactly as it starts `claude` today.
2. `stream()` reads the CLI's stdout as it comes (JSON events, one per line) and hands on
   only the text the *agent* says: signals such as `CONTEXT_HANDOFF:` are read from that
   text alone, never from tool output. It fills a `ClaudeRun` record (the name is kept
   from when claude was the only host): session id, tokens, cost, quota use.
3. `ending()` classifies how the run ended (`HostEnding`), from the exit code, the record
   and the CLI's words (and, where a CLI keeps them there, its session files).

The user's own configuration of each CLI (its home or config directory, keys, provider
settings) is used as it is: an adapter never writes into it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts.json_lines import TextSink

__all__ = ["AgentHost", "HostCommand", "HostStream", "program_of"]


@dataclass(frozen=True)
class HostCommand:
    """A host's command line and the variables it needs laid over the runner's environment."""

    argv: list[str]
    env: dict[str, str] | None = None


class HostStream(Protocol):
    """Reads one run's stdout (`feed` chunks of any size, then `close`) into `run`."""

    run: ClaudeRun

    def feed(self, text: str) -> None: ...

    def close(self) -> None: ...

    def output_with_marker(self, log_path: str | None) -> tuple[str, bool]:
        """The action's output (the agent's final text, else all it said), behind the
        runner's truncation marker when cut to the output cap; and whether it was cut."""
        ...


class AgentHost(Protocol):
    """One agent CLI, driven headless."""

    name: str  # as in a loop file's `host:` (`model.agent_hosts.HOST_NAMES`)
    default_program: str  # the executable looked up on PATH
    program_env: str  # the variable that names another executable (`LL_CODEX_BIN`)
    install_hint: str  # one line: how to install the CLI
    takes_model: bool  # a state's `model:` is passed on
    can_resume: bool  # a session can be continued in a new process

    def command(
        self,
        program: str,
        prompt: str,
        *,
        resume_session: str | None = None,
        model: str | None = None,
    ) -> HostCommand:
        """The headless command running `prompt` (continuing `resume_session` when given)."""
        ...

    def stream(self, sink: TextSink | None, *, cap: int) -> HostStream:
        """A fresh reader of one run's stdout, handing the agent's text on to `sink`."""
        ...

    def ending(
        self, run: ClaudeRun, *, exit_code: int, output: str, stderr: str, now: float
    ) -> HostEnding:
        """How the run ended. `output` is the stream's output, `now` epoch seconds (for
        reset times a CLI gives as a time of day)."""
        ...


def program_of(host: AgentHost, configured: str | None = None) -> str:
    """The executable to start: `configured`, else the host's variable, else its name."""
    return configured or os.environ.get(host.program_env) or host.default_program
