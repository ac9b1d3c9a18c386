"""What an action produced (`ActionResult`): the record the runner returns and the core reads.

A record only, in the bottom layer so that the run core (`engine/`) reads it without
importing the process layer that runs actions; `process.runner` re-exports it under its
old name (`little_loops.fsm.executor.ActionResult` too).
"""

from __future__ import annotations

from dataclasses import dataclass

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding

__all__ = ["ActionResult"]


@dataclass
class ActionResult:
    """What an action produced. `error` says why it could not run or finish.

    Additions: `output_truncated` says `output` holds only the tail of stdout (behind a
    marker line); `log_path` is the file holding all of stdout, when one was written;
    `cancelled` says the runner's `cancel()` stopped the action before it finished (an
    action that exited on its own, even as a cancel arrived, is not cancelled: its
    result stands). `claude`: what a slash command's claude reported about its run (its
    stream-json: session, cost, tokens, turns, errors, rate limits); None for shell actions.
    `timeout_kind`: what stopped a timed-out action, `wall` (its time limit) or `idle`
    (its idle timeout: no output for too long); None otherwise.
    """

    output: str
    stderr: str
    exit_code: int
    duration_ms: int
    timed_out: bool = False
    error: str | None = None
    output_truncated: bool = False
    log_path: str | None = None
    cancelled: bool = False
    claude: ClaudeRun | None = None
    timeout_kind: str | None = None
    # How the agent CLI of a prompt action ended, as its host adapter classified it
    # (`process.hosts`); None for shell actions and actions cut off by a timeout or cancel.
    host_ending: HostEnding | None = None
