"""How a HEAD file's state runs its action (§2.1, §2.2, §7.8): the parts legacy lacks.

- Prompt mode: `action_type: prompt` (or `slash_command`, or no type and a leading `/`)
  runs the text through claude; `agent`, `tools` and `model` become claude flags;
  `effort` is only shown (`action_complete`'s `effort`).
- Timeouts: the state's `timeout`, else the loop's `default_timeout`, else 3600 s
  (`mcp_tool` 30 s); with an idle timeout (state `idle_timeout`, else the loop's
  `default_idle_timeout`), a prompt action has no wall-clock default.
- `mcp_tool` runs `mcp-call <action> <json params>`; `contract` and `type: learning`
  with `learning:` run nothing and give their verdict at once.
- `session_mode: continue` prefixes the prompt with what the previous prompt state left
  (`HeadMemory.session_summary`); `append_to_messages` adds to `HeadMemory.messages`.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.interpolation import InterpolationContext, interpolate, interpolate_dict
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig
from little_loops.fsm.schema import FSMLoop, StateConfig

__all__ = [
    "CONTINUITY_HEADING",
    "HEAD_DEFAULT_ACTION_TIMEOUT",
    "MCP_DEFAULT_TIMEOUT",
    "NO_WALL_CLOCK_SECONDS",
    "SUMMARY_CHARS",
    "action_limit",
    "appended_message",
    "claude_flags",
    "complete_keys",
    "continued_prompt",
    "idle_seconds",
    "is_prompt_mode",
    "leave_summary",
    "mcp_command",
    "no_run_verdict",
]

HEAD_DEFAULT_ACTION_TIMEOUT = 3600
MCP_DEFAULT_TIMEOUT = 30
# "No wall clock" for a prompt action watched by an idle timeout: long, but a number (the
# Temporal driver turns it into an activity's time limit).
NO_WALL_CLOCK_SECONDS = 30 * 24 * 3600
SUMMARY_CHARS = 4000
CONTINUITY_HEADING = "## Continuity summary from the prior chained state"

_PROMPT_TYPES = ("prompt", "slash_command")


def is_prompt_mode(state: StateConfig, action: str) -> bool:
    """`prompt`/`slash_command`, or no `action_type` and a leading `/` (HEAD's guess)."""
    if state.action_type is not None:
        return state.action_type in _PROMPT_TYPES
    return action.startswith("/")


def idle_seconds(fsm: FSMLoop, state: StateConfig) -> float | None:
    """The silence after which the action is killed (None: not watched)."""
    if not isinstance(state, HeadStateConfig) or not isinstance(fsm, HeadLoop):
        return None
    idle = state.idle_timeout if state.idle_timeout is not None else fsm.default_idle_timeout
    return float(idle) if idle else None


def action_limit(fsm: FSMLoop, state: HeadStateConfig, prompt: bool) -> float:
    """The action's wall clock: `timeout`, `default_timeout`, else HEAD's default."""
    if state.timeout:
        return state.timeout
    default = fsm.default_timeout if isinstance(fsm, HeadLoop) else None
    if default:
        return default
    if prompt and idle_seconds(fsm, state) is not None:
        return NO_WALL_CLOCK_SECONDS
    if state.action_type == "mcp_tool":
        return MCP_DEFAULT_TIMEOUT
    return HEAD_DEFAULT_ACTION_TIMEOUT


def claude_flags(state: HeadStateConfig) -> tuple[str, ...]:
    """`--agent`, `--tools a,b` and `--model` for a prompt action (in that order)."""
    flags: list[str] = []
    if state.agent:
        flags += ["--agent", state.agent]
    if state.tools:
        flags += ["--tools", ",".join(state.tools)]
    if state.model:
        flags += ["--model", state.model]
    return tuple(flags)


def mcp_command(state: HeadStateConfig, action: str, ctx: InterpolationContext) -> str:
    """The shell command of an `mcp_tool` action: `mcp-call <tool> <json params>`."""
    params = interpolate_dict(dict(state.params or {}), ctx)
    return f"mcp-call {shlex.quote(action)} {shlex.quote(json.dumps(params))}"


def no_run_verdict(state: HeadStateConfig) -> tuple[str, dict[str, Any]] | None:
    """The verdict of a state that runs nothing (`contract`, `type: learning` with
    `learning:`), or None for a state that runs its action."""
    if state.action_type == "contract":
        return "error", {"error": "contract evaluator not supported"}
    if state.type == "learning" and state.learning is not None:
        routes_blocked = "blocked" in state.on_verdicts or (
            state.route is not None and "blocked" in state.route.routes
        )
        details = {"learning": "learning registry not available: not proven"}
        return ("blocked" if routes_blocked else "no"), details
    return None


def _session_mode(fsm: FSMLoop, state: HeadStateConfig) -> str:
    loop_mode = fsm.session_mode if isinstance(fsm, HeadLoop) else None
    return state.session_mode or loop_mode or "fresh"


def continued_prompt(fsm: FSMLoop, state: HeadStateConfig, head: HeadMemory, action: str) -> str:
    """The prompt a prompt state sends: prefixed with the summary the previous prompt
    state left when this one continues the session; any prompt state takes it (§7.8)."""
    summary, head.session_summary = head.session_summary, None
    if _session_mode(fsm, state) != "continue" or not summary:
        return action
    return f"{CONTINUITY_HEADING}\n\n{summary}\n\n---\n\n{action}"


def leave_summary(
    fsm: FSMLoop,
    state: HeadStateConfig,
    head: HeadMemory,
    result: ActionResult,
    *,
    handed_off: bool,
) -> None:
    """A `continue` prompt state that exits 0 leaves its answer for the next one (not
    after a handoff: the next session starts from the handoff's prompt)."""
    continues = _session_mode(fsm, state) == "continue"
    if continues and result.exit_code == 0 and not handed_off and result.output.strip():
        # Its final answer text (claude's result), its last characters when long.
        head.session_summary = result.output.rstrip()[-SUMMARY_CHARS:]


def complete_keys(state: HeadStateConfig) -> dict[str, Any]:
    """HEAD's additions to `action_complete` (`effort`, shown only)."""
    return {"effort": state.effort} if state.effort else {}


def appended_message(state: HeadStateConfig, ctx: InterpolationContext) -> str | None:
    """The text `append_to_messages` adds after the action (None: nothing to add)."""
    if not state.append_to_messages:
        return None
    return interpolate(state.append_to_messages, ctx)
