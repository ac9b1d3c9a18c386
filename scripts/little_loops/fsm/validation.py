"""Loading a loop file and deciding whether it is a usable loop.

This module owns every check between "bytes on disk" and "an `FSMLoop` the executor may
run", in three layers:

1. File (`load_loop_mapping`): the path must be an existing regular file of at most
   5 MiB, UTF-8 text, YAML (through `yaml_loader.parse_yaml`, the one loader) whose top
   level is a mapping.
2. Shape (`check_loop_mapping`): the raw mapping, before `FSMLoop.from_dict` sees it.
   Unknown keys, wrong types and values outside a fixed set are errors, each with a
   dotted key path (`states.check.evaluate.type`) and a message that names what is
   allowed. Passing this check guarantees that `from_dict` cannot fail. Paradigm specs
   (a `paradigm` other than `fsm`, no `initial`/`states`) get the same treatment for the
   keys the compilers know; their required keys are checked by the compilers.
3. Graph (`validate_fsm`): the eleven checks of the reference on a built `FSMLoop`.

`load_and_validate` runs the three layers like the reference does (no paradigm
compilation); `load_loop` also compiles paradigm files on the fly. Shape errors are
reported before the graph is built, so a typo such as `on_sucess` is reported on its own
instead of together with the "no transition" error it causes.

Choices where we differ from the reference:
- Route targets containing `${` are resolved at run time, so the unknown-state check and
  the reachability walk skip them (as they skip `$current`, which is allowed everywhere,
  `next` included).
- The unknown-state error keeps the reference text and path and appends the defined
  states: `states.check: References unknown state 'fixx' (states are: check, fix, done)`.
- Several unknown references of one state are reported in sorted order.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import (
    LoopFileError,
    LoopNotFoundError,
    LoopValidationError,
)
from little_loops.fsm.schema import CURRENT_STATE_TOKEN, EvaluateConfig, FSMLoop, StateConfig
from little_loops.fsm.yaml_loader import parse_yaml

logger = logging.getLogger("little_loops.fsm.validation")

MAX_LOOP_FILE_BYTES = 5 * 1024 * 1024
REQUIRED_LOOP_FIELDS = ("name", "initial", "states")


class ValidationSeverity(Enum):
    """How bad a finding is: errors reject the loop, warnings are only logged."""

    ERROR = "error"
    WARNING = "warning"


@dataclass
class ValidationError:
    """One finding about a loop (a record, not an exception)."""

    message: str
    path: str | None = None
    severity: ValidationSeverity = ValidationSeverity.ERROR

    def __str__(self) -> str:
        label = f"[{self.severity.value.upper()}]"
        if self.path:
            return f"{label} {self.path}: {self.message}"
        return f"{label} {self.message}"


EVALUATOR_REQUIRED_FIELDS: dict[str, list[str]] = {
    "exit_code": [],
    "output_numeric": ["operator", "target"],
    "output_json": ["path", "operator", "target"],
    "output_contains": ["pattern"],
    "convergence": ["target"],
    "llm_structured": [],
    "return_metadata": [],
}

VALID_OPERATORS: set[str] = {"eq", "ne", "lt", "le", "gt", "ge"}

EVALUATOR_TYPES = tuple(EVALUATOR_REQUIRED_FIELDS)
DIRECTIONS = ("minimize", "maximize")
HANDOFF_BEHAVIORS = ("pause", "spawn", "terminate", "continue")
CHECKPOINT_KINDS = ("git",)
ACTION_TYPES = ("shell", "slash_command")
PARADIGMS = ("convergence", "fsm", "goal", "imperative", "invariants")
SPECIAL_ROUTE_KEYS = ("_", "_error")

# Keys a paradigm spec may use besides its own (the compilers carry them into the FSM).
COMMON_SPEC_KEYS = (
    "max_iterations",
    "backoff",
    "timeout",
    "context",
    "scope",
    "llm",
    "on_handoff",
    "max_continuations",
    "stall_threshold",
    "checkpoint",
)
PARADIGM_SPEC_KEYS: dict[str, tuple[str, ...]] = {
    "goal": ("paradigm", "name", "goal", "tools", *COMMON_SPEC_KEYS),
    "convergence": (
        "paradigm",
        "name",
        "check",
        "toward",
        "using",
        "tolerance",
        "direction",
        *COMMON_SPEC_KEYS,
    ),
    "invariants": ("paradigm", "name", "constraints", "maintain", *COMMON_SPEC_KEYS),
    "imperative": ("paradigm", "name", "steps", "until", *COMMON_SPEC_KEYS),
}
CONSTRAINT_KEYS = ("name", "check", "fix")
UNTIL_KEYS = ("check",)

ValueCheck = Callable[[Any], "str | None"]
FieldCheck = Callable[[Any, str], "list[ValidationError]"]


# ---------------------------------------------------------------------------
# Describing values in messages
# ---------------------------------------------------------------------------


def describe_value(value: Any) -> str:
    """A short YAML-flavoured rendering of a value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # Huge integers cannot even be turned into text (Python's digit limit).
        return str(value) if value.bit_length() <= 256 else "a very large integer"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def not_a_string_message(value: Any) -> str:
    """`must be a string, got ...`, with a hint for the classic unquoted `: ` mistake."""
    hint = ""
    if isinstance(value, dict) and len(value) == 1:
        hint = " (quote text that contains ': ', or YAML reads it as a mapping)"
    return f"must be a string, got {describe_value(value)}{hint}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if _is_int(value):
        return True
    return isinstance(value, float) and math.isfinite(value)


# ---------------------------------------------------------------------------
# Value checks: each returns a problem message, or None when the value is fine
# ---------------------------------------------------------------------------


def _check_string(value: Any) -> str | None:
    return None if isinstance(value, str) else not_a_string_message(value)


def _check_non_empty_string(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return None
    return f"must be a non-empty string, got {describe_value(value)}"


def _check_bool(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    return f"must be true or false, got {describe_value(value)}"


def _check_non_negative_int(value: Any) -> str | None:
    if _is_int(value) and value >= 0:
        return None
    return f"must be an integer >= 0, got {describe_value(value)}"


def _check_positive_int(value: Any) -> str | None:
    if _is_int(value) and value >= 1:
        return None
    return f"must be an integer >= 1, got {describe_value(value)}"


def _check_non_negative_number(value: Any) -> str | None:
    if _is_number(value) and value >= 0:
        return None
    return f"must be a number >= 0, got {describe_value(value)}"


def _check_fraction(value: Any) -> str | None:
    if _is_number(value) and 0 <= value <= 1:
        return None
    return f"must be a number from 0 to 1, got {describe_value(value)}"


def _check_target(value: Any) -> str | None:
    if _is_number(value) or isinstance(value, str):
        return None
    return f"must be a number or a string, got {describe_value(value)}"


def _check_tolerance(value: Any) -> str | None:
    if (_is_number(value) and value >= 0) or isinstance(value, str):
        return None
    return f"must be a number >= 0 or a string, got {describe_value(value)}"


def _check_mapping(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"must be a mapping, got {describe_value(value)}"


def _one_of(label: str, allowed: tuple[str, ...]) -> ValueCheck:
    def check(value: Any) -> str | None:
        if isinstance(value, str) and value in allowed:
            return None
        choices = ", ".join(allowed)
        if isinstance(value, str):
            return f"unknown {label} {describe_value(value)} (allowed: {choices})"
        return f"must be a string (allowed: {choices}), got {describe_value(value)}"

    return check


def _nullable(check: ValueCheck) -> ValueCheck:
    """Null means "not set" for keys whose default is None."""

    def nullable_check(value: Any) -> str | None:
        return None if value is None else check(value)

    return nullable_check


# ---------------------------------------------------------------------------
# Field checks: take the value and its key path, return the errors found
# ---------------------------------------------------------------------------


def _join(path: str | None, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _scalar(check: ValueCheck) -> FieldCheck:
    def run(value: Any, path: str) -> list[ValidationError]:
        problem = check(value)
        return [] if problem is None else [ValidationError(problem, path)]

    return run


def _unchecked(value: Any, path: str) -> list[ValidationError]:
    """Keys whose values the paradigm compilers check themselves."""
    return []


def _check_fields(
    data: dict[Any, Any],
    path: str | None,
    checks: dict[str, FieldCheck],
    required: tuple[str, ...] = (),
) -> list[ValidationError]:
    """Run the check of every key; unknown keys and missing required keys are errors."""
    errors: list[ValidationError] = []
    for key, value in data.items():
        check = checks.get(key) if isinstance(key, str) else None
        if check is None:
            allowed = ", ".join(checks)
            message = f"unknown key {describe_value(key)} (allowed: {allowed})"
            errors.append(ValidationError(message, _join(path, key)))
        else:
            errors.extend(check(value, _join(path, key)))
    for key in required:
        if key not in data:
            errors.append(ValidationError(f"missing required key '{key}'", path))
    return errors


def _mapping_of(checks: dict[str, FieldCheck], required: tuple[str, ...] = ()) -> FieldCheck:
    def run(value: Any, path: str) -> list[ValidationError]:
        if not isinstance(value, dict):
            return [ValidationError(f"must be a mapping, got {describe_value(value)}", path)]
        return _check_fields(value, path, checks, required)

    return run


def _check_string_list(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, list):
        return [ValidationError(f"must be a list of strings, got {describe_value(value)}", path)]
    return [
        ValidationError(not_a_string_message(item), _join(path, index))
        for index, item in enumerate(value)
        if not isinstance(item, str)
    ]


def _check_route(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, dict):
        return [ValidationError(f"must be a mapping, got {describe_value(value)}", path)]
    errors: list[ValidationError] = []
    for verdict, target in value.items():
        if not isinstance(verdict, str):
            message = f"verdict names must be strings, got {describe_value(verdict)}"
            errors.append(ValidationError(message, path))
        elif verdict.startswith("_") and verdict not in SPECIAL_ROUTE_KEYS:
            message = f"unknown key '{verdict}' (allowed special keys: _, _error)"
            errors.append(ValidationError(message, _join(path, verdict)))
        else:
            errors.extend(_scalar(_check_string)(target, _join(path, verdict)))
    return errors


_optional_string = _scalar(_nullable(_check_string))

_EVALUATE_CHECKS: dict[str, FieldCheck] = {
    "type": _scalar(_one_of("evaluator type", EVALUATOR_TYPES)),
    "operator": _scalar(_nullable(_one_of("operator", tuple(sorted(VALID_OPERATORS))))),
    "target": _scalar(_nullable(_check_target)),
    "tolerance": _scalar(_nullable(_check_tolerance)),
    "pattern": _optional_string,
    "negate": _scalar(_check_bool),
    "path": _optional_string,
    "prompt": _optional_string,
    "schema": _scalar(_nullable(_check_mapping)),
    "min_confidence": _scalar(_check_fraction),
    "uncertain_suffix": _scalar(_check_bool),
    "source": _optional_string,
    "previous": _optional_string,
    "direction": _scalar(_one_of("direction", DIRECTIONS)),
}

_STATE_CHECKS: dict[str, FieldCheck] = {
    "action": _optional_string,
    "evaluate": _mapping_of(_EVALUATE_CHECKS, required=("type",)),
    "route": _check_route,
    "on_success": _optional_string,
    "on_failure": _optional_string,
    "on_error": _optional_string,
    "next": _optional_string,
    "terminal": _scalar(_check_bool),
    "capture": _optional_string,
    "timeout": _scalar(_nullable(_check_positive_int)),
    "on_maintain": _optional_string,
    "action_type": _scalar(_nullable(_one_of("action_type", ACTION_TYPES))),
    "max_visits": _scalar(_nullable(_check_positive_int)),
    "on_max_visits": _optional_string,
}

_LLM_CHECKS: dict[str, FieldCheck] = {
    "enabled": _scalar(_check_bool),
    "model": _scalar(_check_non_empty_string),
    "max_tokens": _scalar(_check_positive_int),
    "timeout": _scalar(_check_positive_int),
}


def _check_states(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, dict):
        message = f"must be a mapping of state names to states, got {describe_value(value)}"
        return [ValidationError(message, path)]
    if not value:
        return [ValidationError("must define at least one state", path)]
    check_state = _mapping_of(_STATE_CHECKS)
    errors: list[ValidationError] = []
    for name, state in value.items():
        if isinstance(name, str):
            errors.extend(check_state(state, _join(path, name)))
        else:
            message = f"state names must be strings, got {describe_value(name)}"
            errors.append(ValidationError(message, path))
    return errors


_LOOP_CHECKS: dict[str, FieldCheck] = {
    "name": _scalar(_check_non_empty_string),
    "initial": _scalar(_check_string),
    "states": _check_states,
    "paradigm": _scalar(_nullable(_one_of("paradigm", PARADIGMS))),
    "context": _scalar(_check_mapping),
    "scope": _check_string_list,
    "max_iterations": _scalar(_check_positive_int),
    "backoff": _scalar(_nullable(_check_non_negative_number)),
    "timeout": _scalar(_nullable(_check_positive_int)),
    "maintain": _scalar(_check_bool),
    "llm": _mapping_of(_LLM_CHECKS),
    "on_handoff": _scalar(_one_of("on_handoff value", HANDOFF_BEHAVIORS)),
    "max_continuations": _scalar(_check_positive_int),
    "stall_threshold": _scalar(_check_non_negative_int),
    "checkpoint": _scalar(_nullable(_one_of("checkpoint kind", CHECKPOINT_KINDS))),
}


def _check_constraint_keys(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, list):
        return []
    checks: dict[str, FieldCheck] = dict.fromkeys(CONSTRAINT_KEYS, _unchecked)
    errors: list[ValidationError] = []
    for index, constraint in enumerate(value):
        if isinstance(constraint, dict):
            errors.extend(_check_fields(constraint, _join(path, index), checks))
    return errors


def _check_until_keys(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, dict):
        return []
    checks: dict[str, FieldCheck] = dict.fromkeys(UNTIL_KEYS, _unchecked)
    return _check_fields(value, path, checks)


_SPEC_CHECKS: dict[str, FieldCheck] = {
    **_LOOP_CHECKS,
    "constraints": _check_constraint_keys,
    "until": _check_until_keys,
}


def is_paradigm_spec(data: dict[str, Any]) -> bool:
    """True for a file that must be compiled: a non-`fsm` paradigm and no FSM keys."""
    paradigm = data.get("paradigm")
    return paradigm not in (None, "fsm") and "initial" not in data and "states" not in data


def _check_paradigm_spec(data: dict[str, Any]) -> list[ValidationError]:
    paradigm = data["paradigm"]
    if not isinstance(paradigm, str) or paradigm not in PARADIGM_SPEC_KEYS:
        return _scalar(_one_of("paradigm", PARADIGMS))(paradigm, "paradigm")
    # Value types of a paradigm's own keys are checked by its compiler.
    checks = {key: _SPEC_CHECKS.get(key, _unchecked) for key in PARADIGM_SPEC_KEYS[paradigm]}
    return _check_fields(data, None, checks)


def check_loop_mapping(data: dict[str, Any]) -> list[ValidationError]:
    """Shape errors of a raw loop mapping (or paradigm spec), in file order.

    An empty result guarantees that `FSMLoop.from_dict(data)` succeeds (for a paradigm
    spec: that the keys the compilers carry are well typed).
    """
    if not isinstance(data, dict):
        return [ValidationError(f"a loop must be a mapping, got {describe_value(data)}")]
    if is_paradigm_spec(data):
        return _check_paradigm_spec(data)
    return _check_fields(data, None, _LOOP_CHECKS, REQUIRED_LOOP_FIELDS)


# ---------------------------------------------------------------------------
# Graph checks on a built FSMLoop
# ---------------------------------------------------------------------------


def _is_resolved_at_run_time(target: str) -> bool:
    return target == CURRENT_STATE_TOKEN or "${" in target


def _unknown_reference_errors(fsm: FSMLoop, name: str, state: StateConfig) -> list[ValidationError]:
    unknown = sorted(
        ref
        for ref in state.get_referenced_states()
        if not _is_resolved_at_run_time(ref) and ref not in fsm.states
    )
    defined = ", ".join(fsm.states)
    return [
        ValidationError(
            f"References unknown state '{ref}' (states are: {defined})", f"states.{name}"
        )
        for ref in unknown
    ]


def _evaluator_errors(evaluate: EvaluateConfig, path: str) -> list[ValidationError]:
    errors = [
        ValidationError(f"Evaluator type '{evaluate.type}' requires '{field}' field", path)
        for field in EVALUATOR_REQUIRED_FIELDS.get(evaluate.type, [])
        if getattr(evaluate, field) is None
    ]
    if evaluate.operator is not None and evaluate.operator not in VALID_OPERATORS:
        operators = ", ".join(sorted(VALID_OPERATORS))
        message = f"Invalid operator '{evaluate.operator}'. Must be one of: {operators}"
        errors.append(ValidationError(message, f"{path}.operator"))
    if evaluate.type == "convergence":
        errors.extend(_convergence_errors(evaluate, path))
    if evaluate.type == "llm_structured" and not 0 <= evaluate.min_confidence <= 1:
        message = "min_confidence must be between 0 and 1"
        errors.append(ValidationError(message, f"{path}.min_confidence"))
    return errors


def _convergence_errors(evaluate: EvaluateConfig, path: str) -> list[ValidationError]:
    errors: list[ValidationError] = []
    if evaluate.direction not in DIRECTIONS:
        message = f"Invalid direction '{evaluate.direction}'. Must be 'minimize' or 'maximize'"
        errors.append(ValidationError(message, f"{path}.direction"))
    tolerance = evaluate.tolerance
    # A string tolerance is a `${...}` template, checked when it is resolved.
    if isinstance(tolerance, int | float) and tolerance < 0:
        errors.append(ValidationError("Tolerance cannot be negative", f"{path}.tolerance"))
    return errors


def _transition_errors(name: str, state: StateConfig) -> list[ValidationError]:
    path = f"states.{name}"
    shorthand = (state.on_success, state.on_failure, state.on_error)
    has_shorthand = any(target is not None for target in shorthand)
    errors: list[ValidationError] = []
    if has_shorthand and state.route is not None:
        message = (
            "Both shorthand routing (on_success/on_failure/on_error) and full route table "
            "defined. Route table will take precedence."
        )
        errors.append(ValidationError(message, path, ValidationSeverity.WARNING))
    if not (has_shorthand or state.route is not None or state.next is not None or state.terminal):
        message = (
            "State has no transition defined. Add routing, 'next', or mark as 'terminal: true'"
        )
        errors.append(ValidationError(message, path))
    return errors


def _visit_limit_errors(name: str, state: StateConfig) -> list[ValidationError]:
    if state.on_max_visits is not None and state.max_visits is None:
        message = "on_max_visits has no effect without max_visits"
        return [ValidationError(message, f"states.{name}.on_max_visits")]
    return []


def _reachable_states(fsm: FSMLoop) -> set[str]:
    reachable: set[str] = set()
    queue = deque([fsm.initial])
    while queue:
        name = queue.popleft()
        if name in reachable or name not in fsm.states:
            continue
        reachable.add(name)
        targets = fsm.states[name].get_referenced_states()
        queue.extend(target for target in targets if not _is_resolved_at_run_time(target))
    return reachable


def _unreachable_warnings(fsm: FSMLoop) -> list[ValidationError]:
    reachable = _reachable_states(fsm)
    return [
        ValidationError(
            "State is not reachable from initial state",
            f"states.{name}",
            ValidationSeverity.WARNING,
        )
        for name in fsm.states
        if name not in reachable
    ]


def validate_fsm(fsm: FSMLoop) -> list[ValidationError]:
    """Graph findings of a well-typed loop: errors and warnings, empty when valid."""
    findings: list[ValidationError] = []
    if fsm.initial not in fsm.states:
        message = f"Initial state '{fsm.initial}' not found in states"
        findings.append(ValidationError(message, "initial"))
    if not fsm.get_terminal_states():
        message = "No terminal state defined. At least one state must have 'terminal: true'"
        findings.append(ValidationError(message, "states"))
    for name, state in fsm.states.items():
        findings.extend(_unknown_reference_errors(fsm, name, state))
        if state.evaluate is not None:
            findings.extend(_evaluator_errors(state.evaluate, f"states.{name}.evaluate"))
        findings.extend(_transition_errors(name, state))
        findings.extend(_visit_limit_errors(name, state))
    findings.extend(_unreachable_warnings(fsm))
    return findings


# ---------------------------------------------------------------------------
# Loading files
# ---------------------------------------------------------------------------


def _read_loop_text(path: Path) -> str:
    source = str(path)
    if not path.exists():
        raise LoopNotFoundError(f"FSM file not found: {path}")
    if path.is_dir():
        raise LoopFileError(source, "is a directory, not a loop file")
    if not path.is_file():
        # A FIFO or device would block or never end.
        raise LoopFileError(source, "is not a regular file")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_LOOP_FILE_BYTES + 1)
    except FileNotFoundError:
        raise LoopNotFoundError(f"FSM file not found: {path}") from None
    except OSError as exc:
        raise LoopFileError(source, f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > MAX_LOOP_FILE_BYTES:
        raise LoopFileError(source, "is too large for a loop file (more than 5 MiB)")
    return _decode_utf8(data, source)


def _decode_utf8(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start]
        message = f"is not UTF-8 text (invalid byte 0x{byte:02x} on line {line})"
        raise LoopFileError(source, message) from None


def load_loop_mapping(path: Path | str) -> dict[str, Any]:
    """Read and parse a loop file whose top level must be a mapping."""
    path = Path(path)
    data = parse_yaml(_read_loop_text(path), str(path))
    if not isinstance(data, dict):
        message = f"FSM file must contain a YAML mapping, got {type(data)}"
        raise LoopFileError(str(path), message)
    return data


def _require_loop_fields(data: dict[str, Any], path: Path) -> None:
    missing = [key for key in REQUIRED_LOOP_FIELDS if key not in data]
    if missing:
        message = f"FSM file missing required fields: {', '.join(missing)}"
        raise LoopFileError(str(path), message)


def _raise_if_errors(path: Path, errors: list[ValidationError]) -> None:
    if errors:
        raise LoopValidationError(str(path), errors)


def _validated(fsm: FSMLoop, path: Path) -> FSMLoop:
    findings = validate_fsm(fsm)
    errors = [item for item in findings if item.severity is ValidationSeverity.ERROR]
    _raise_if_errors(path, errors)
    for warning in findings:  # only warnings are left: errors have raised
        logger.warning("%s", warning)
    return fsm


def _load_fsm_mapping(data: dict[str, Any], path: Path) -> FSMLoop:
    _require_loop_fields(data, path)
    _raise_if_errors(path, check_loop_mapping(data))
    return _validated(FSMLoop.from_dict(data), path)


def load_and_validate(path: Path | str) -> FSMLoop:
    """Load an FSM loop file and validate it (paradigm files are not compiled).

    Raises `LoopNotFoundError` for a missing file, `LoopSyntaxError` for bad YAML,
    `LoopFileError` for a file that is not a loop, `LoopValidationError` for shape and
    graph errors. Warnings are logged on `little_loops.fsm.validation`.
    """
    path = Path(path)
    return _load_fsm_mapping(load_loop_mapping(path), path)


def load_loop(path: Path | str) -> FSMLoop:
    """Like `load_and_validate`, but a paradigm file is compiled first."""
    path = Path(path)
    data = load_loop_mapping(path)
    if not is_paradigm_spec(data):
        return _load_fsm_mapping(data, path)
    _raise_if_errors(path, check_loop_mapping(data))
    # Imported here because the compilers use this module's checks.
    from little_loops.fsm.compilers import compile_paradigm

    try:
        fsm = compile_paradigm(data)
    except ValueError as exc:
        raise LoopFileError(str(path), str(exc)) from None
    return _validated(fsm, path)
