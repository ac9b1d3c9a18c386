"""Which states of a loop will ask the LLM to judge them: known before the run starts.

A state is judged by the LLM when its `evaluate:` is `llm_structured`, or when it runs a
slash command (HEAD files: a prompt) with no `evaluate:` and the loop's LLM is enabled
(the default judgement). With the `llm` extra missing, such a run used to start, run the
slash command (and pay for it), then fail its judgement; the CLI now refuses it before
the first state (issue 23, item 8). An action whose text becomes a slash command only
after interpolation cannot be known here; its judgement still says what is missing.
"""

from __future__ import annotations

import importlib.util

from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.slash_commands import is_slash_command
from little_loops.fsm.schema import FSMLoop, StateConfig

__all__ = [
    "INSTALL_HINT",
    "llm_judged_states",
    "llm_sdk_available",
    "missing_llm_problem",
    "run_refusal",
]

INSTALL_HINT = 'pip install -e ".[llm]"'
"""How a checkout of this project gets the Anthropic SDK (the `llm` extra)."""

_PROMPT_TYPES = frozenset({"prompt", "slash_command"})


def llm_sdk_available() -> bool:
    """Whether `import anthropic` would work (looked up now, not imported)."""
    try:
        return importlib.util.find_spec("anthropic") is not None
    except (ImportError, ValueError):  # a broken or blocked install
        return False


def llm_judged_states(fsm: FSMLoop) -> list[str]:
    """The states (in file order) whose judgement calls the LLM."""
    return [name for name, state in fsm.states.items() if _judged_by_llm(fsm, state)]


def missing_llm_problem(fsm: FSMLoop) -> str | None:
    """One line for a loop that needs the LLM when the SDK is missing (None: it needs none)."""
    states = llm_judged_states(fsm)
    if not states:
        return None
    shown = ", ".join(f"'{name}'" for name in states[:5]) + (", ..." if len(states) > 5 else "")
    which = f"state {shown} is" if len(states) == 1 else f"states {shown} are"
    return (
        f"{which} judged by the LLM, but the anthropic package is not installed: "
        f"{INSTALL_HINT}, or run with --no-llm"
    )


def run_refusal(fsm: FSMLoop) -> str | None:
    """Why a run of `fsm` (with the run's settings applied) must not start here: the LLM
    judges some of its states and the SDK is missing (None: it may start)."""
    if llm_sdk_available():
        return None
    problem = missing_llm_problem(fsm)
    return None if problem is None else f"Cannot run {fsm.name}: {problem}"


def _judged_by_llm(fsm: FSMLoop, state: StateConfig) -> bool:
    if state.terminal or state.next:
        return False
    if not fsm.llm.enabled:  # `--no-llm`: its judgements say so without the SDK
        return False
    if state.evaluate is not None:
        return state.evaluate.type == "llm_structured"
    return bool(state.action and _prompt_action(state, state.action))


def _prompt_action(state: StateConfig, action: str) -> bool:
    """A slash command (or, in a HEAD file, a prompt) as written in the file."""
    if state.action_type is not None:
        return state.action_type in _PROMPT_TYPES
    if isinstance(state, HeadStateConfig):
        return action.startswith("/")
    return is_slash_command(action)
