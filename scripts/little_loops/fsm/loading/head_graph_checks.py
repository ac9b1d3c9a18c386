"""Graph checks that only a HEAD loop needs (spec/ll-head-dialect.md §2.1, §3.3, §4).

`graph_checks.validate_fsm` runs the legacy checks on every loop; for a HEAD state it asks
`head_transition_errors` instead of the legacy "no transition" rule (a `loop:` state and
any `on_<verdict>` route count as transitions), and it seeds reachability with
`loop_level_targets`. `head_loop_findings` adds the checks of a HEAD loop's own keys:
loop-level routes name declared states, inert keys on `next:` and `loop:` states, `model`
on a state that never asks a model, a fragment state that also runs a sub-loop.
"""

from __future__ import annotations

from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig
from little_loops.fsm.schema import CURRENT_STATE_TOKEN, FSMLoop

_WARNING = ValidationSeverity.WARNING
_SHORTHAND_TEXT = "Both shorthand routing (on_success/on_failure/on_error) and full route table"


def _runtime_target(target: str) -> bool:
    return target == CURRENT_STATE_TOKEN or "${" in target


def head_transition_errors(name: str, state: HeadStateConfig) -> list[ValidationError]:
    """The legacy transition findings, where a `loop:` state and every verdict route are
    transitions too."""
    path = f"states.{name}"
    shorthand = (state.on_success, state.on_failure, state.on_error, *state.on_verdicts.values())
    has_shorthand = any(target is not None for target in shorthand)
    findings: list[ValidationError] = []
    # On `next:` and `loop:` states the route table is inert (warned about on its own).
    evaluated = state.next is None and state.loop is None
    if has_shorthand and state.route is not None and evaluated:
        message = f"{_SHORTHAND_TEXT} defined. Route table will take precedence."
        findings.append(ValidationError(message, path, _WARNING))
    routed = has_shorthand or state.route is not None or state.next is not None
    if not (routed or state.terminal or state.loop is not None):
        message = (
            "State has no transition defined. Add routing, 'next', or mark as 'terminal: true'"
        )
        findings.append(ValidationError(message, path))
    return findings


def loop_level_targets(fsm: FSMLoop) -> list[str]:
    """States a HEAD loop may go to from anywhere: `on_max_steps`, `on_max_iterations`,
    the circuit breaker's recovery state."""
    if not isinstance(fsm, HeadLoop):
        return []
    targets = [fsm.on_max_steps, fsm.on_max_iterations]
    if fsm.circuit is not None and fsm.circuit.on_repeated_failure != "abort":
        targets.append(fsm.circuit.on_repeated_failure)
    return [target for target in targets if target is not None and not _runtime_target(target)]


def head_loop_findings(fsm: FSMLoop) -> list[ValidationError]:
    """The HEAD-only findings of a built loop (none for a legacy loop)."""
    if not isinstance(fsm, HeadLoop):
        return []
    findings = _loop_route_errors(fsm)
    for name, state in fsm.states.items():
        if isinstance(state, HeadStateConfig):
            findings.extend(_inert_key_warnings(name, state))
            findings.extend(_model_warnings(name, state))
    return findings


def _loop_route_errors(fsm: HeadLoop) -> list[ValidationError]:
    defined = ", ".join(fsm.states)
    routes = [("on_max_steps", fsm.on_max_steps), ("on_max_iterations", fsm.on_max_iterations)]
    if fsm.circuit is not None and fsm.circuit.on_repeated_failure != "abort":
        routes.append(
            ("circuit.repeated_failure.on_repeated_failure", fsm.circuit.on_repeated_failure)
        )
    return [
        ValidationError(f"References unknown state '{target}' (states are: {defined})", key)
        for key, target in routes
        if target is not None and not _runtime_target(target) and target not in fsm.states
    ]


def _inert_key_warnings(name: str, state: HeadStateConfig) -> list[ValidationError]:
    if state.loop is not None:
        inert = _written_keys(state, ("evaluate", "route", "partial", "blocked"))
        reason = "a loop: state routes on its sub-loop's outcome (§4)"
    elif state.next is not None:
        inert = _written_keys(state, ("route", "on_yes", "on_no", "partial", "blocked"))
        reason = "a next: state is not evaluated (§3.3)"
    else:
        return []
    return [
        ValidationError(f"{key} has no effect: {reason}", f"states.{name}.{key}", _WARNING)
        for key in inert
    ]


def _written_keys(state: HeadStateConfig, keys: tuple[str, ...]) -> list[str]:
    written = {
        "evaluate": state.evaluate is not None,
        "route": state.route is not None,
        "on_yes": state.on_success is not None,
        "on_no": state.on_failure is not None,
        "partial": "partial" in state.on_verdicts,
        "blocked": "blocked" in state.on_verdicts,
    }
    names = {"partial": "on_partial", "blocked": "on_blocked"}
    return [names.get(key, key) for key in keys if written[key]]


def _model_warnings(name: str, state: HeadStateConfig) -> list[ValidationError]:
    """`model` only reaches Claude in prompt mode or through an LLM evaluation (§2.2)."""
    if state.model is None or _asks_a_model(state):
        return []
    message = "model has no effect: the state neither runs a prompt nor asks an LLM judge"
    return [ValidationError(message, f"states.{name}.model", _WARNING)]


def _asks_a_model(state: HeadStateConfig) -> bool:
    if state.evaluate is not None and state.evaluate.type == "llm_structured":
        return True
    if state.action_type in ("prompt", "slash_command"):
        return True
    guessed_prompt = state.action_type is None and (state.action or "").startswith("/")
    return guessed_prompt and state.evaluate is None
