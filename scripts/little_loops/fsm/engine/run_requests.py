"""The requests every run makes of its driver (`core.RunCore`), one request at a time.

Each request is a small frozen value; the driver does the I/O it names and submits the
result the request's docstring gives (None where there is nothing to return). `Finish` is
the last request of a run: it carries the run's result and asks for nothing back.

Here are the requests every run makes: run an action, save a snapshot, finish. Those a
run makes only when a feature asks (judge with I/O, wait, checkpoint or fingerprint the
work tree, hand off, ask a person, run a sub-loop or a fan-out) are in `judge_requests`,
`wait_requests`, `workspace_requests`, `handoff_requests`, `approval_requests`,
`sub_loop_requests`, `parallel_requests` and `requests`, loaded when a run first makes
one; `requests` names them all, these too, and their union `Request`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.step_result import Ending, ExecutionResult
from little_loops.fsm.signal_detector import SignalScan

__all__ = ["Finish", "RunAction", "SaveSnapshot"]


@dataclass(frozen=True)
class RunAction:
    """Run one action; submit its `ActionResult`.

    `scan` (when signals are watched) may be fed with the output as it streams; what it
    did not see the core scans from the result. `log_path`: where a runner that keeps
    logs writes the whole stdout. `resume_session`: the claude session a slash command
    continues (`--resume`), for runners that can (`supports_resume_session`).
    HEAD files: `claude_flags` go on a prompt action's claude command line
    (`--agent`, `--tools`, `--model`); `idle_timeout` kills the action after that many
    seconds without output (both for runners that set `supports_head_options`).
    """

    action: str
    timeout: float
    slash: bool
    scan: SignalScan | None = None
    log_path: Path | None = None
    resume_session: str | None = None  # continue this claude session (`--resume <id>`)
    claude_flags: tuple[str, ...] = ()
    idle_timeout: float | None = None
    cwd: Path | None = None  # run it here (a sub-loop's worktree); None: the runner's own
    # Issue 24: the agent host a prompt action runs on (None: claude, as before hosts) and
    # the model it is asked for (hosts other than claude; claude gets `--model` in
    # `claude_flags`), for runners that set `supports_hosts`.
    host: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class SaveSnapshot:
    """Save the run's snapshot with the event `after` (the run has reached a place a
    resume can go on from: the start, a route, a continued handoff, a usage-limit wait or
    a minute of one, a handoff about to spawn a session).

    Not yielded like the requests above: the save belongs with its event, which a step
    emits in the middle of its work, before the cursor changes again. The core hands it
    to its driver's `save` callback just before it delivers the event; a driver that keeps
    a state file (`store.persistent_executor`) writes it once it has recorded that event.
    `cursor` and `guards` are the run's own (read at once, never kept); `current_state`
    the state the snapshot names (a route's target); `nested`: a sub-loop's event (the
    cursor is still the top run's, whose state is under way)."""

    after: str
    cursor: RunCursor
    guards: RunGuards
    current_state: str
    elapsed_ms: int
    nested: bool = False


@dataclass(frozen=True)
class Finish:
    """The run is over: `result` is what it returns (`loop_complete` was emitted)."""

    ending: Ending
    result: ExecutionResult
