"""A HEAD loop's inputs for one run: the positional INPUT, `parameters:`, `required_inputs`
and the `${context.*}` its actions need (spec/ll-head-dialect.md §2.5, §9d).

Precedence: `--context` > positional input > the file's `context:` > injected keys (the
injected ones sit under the loop's context, `engine.head_context`). Each problem is one
line (exit 1) before anything runs. A legacy loop takes no positional input: `run` of a
legacy file with one is refused (its reference CLI has none), and its context is checked
by the loader as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from little_loops.fsm.engine.head_context import injected_context
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.errors import LoopError
from little_loops.fsm.interpolation import ESCAPED_PATTERN, VARIABLE_PATTERN
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.head_templates import HeadVariableError, parse_head_variable
from little_loops.fsm.model.parameter_types import type_problem
from little_loops.fsm.schema import FSMLoop

__all__ = ["RunInputError", "apply_run_inputs", "legacy_input_refusal", "positional_values"]

# Stands for the run's directory while checking: it exists from the run's start on.
_RUN_DIR_PLACEHOLDER = ".loops/runs/"


class RunInputError(LoopError):
    """What the run lacks, one complete line per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines

    def user_lines(self) -> list[str]:
        return list(self.lines)


def positional_values(loop: HeadLoop, text: str) -> dict[str, Any]:
    """What `ll-loop run <loop> INPUT` sets: `context[input_key]`, or, for a JSON object
    with at least one key already in the loop's context, those keys only (values other
    than strings as JSON text)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        known = {key: _text(value) for key, value in parsed.items() if key in loop.context}
        if known:
            return known
    return {loop.input_key: text}


def _text(value: Any) -> str:
    """A JSON value as the text a run keeps (the state file keeps context values as
    strings, so a resumed run sees what the first one saw): strings as they are."""
    return value if isinstance(value, str) else json.dumps(value)


def apply_run_inputs(
    loop: FSMLoop, *, positional: str | None, given: Mapping[str, Any]
) -> dict[str, Any]:
    """Set the run's inputs in `loop.context`; return what a resumed run must set again
    (the positional values under `--context`'s). Raises `RunInputError`."""
    if not isinstance(loop, HeadLoop):
        return dict(given)  # `run` refuses a positional input for it (`legacy_input_refusal`)
    kept: dict[str, Any] = {}
    if positional is not None:
        kept.update(positional_values(loop, positional))
    kept.update(given)
    loop.context.update(kept)
    injected = injected_context(loop, HeadMemory(run_dir=_RUN_DIR_PLACEHOLDER))
    problems = _parameter_problems(loop, set(kept) | set(injected))
    absent = _absent_inputs(loop)
    problems += [_required_input_line(loop, key) for key in absent]
    # A required input already reported is not reported again as a missing context key.
    problems += _missing_context(loop, injected, skip=set(absent))
    if problems:
        raise RunInputError(problems)
    return kept


def legacy_input_refusal(loop_arg: str, positional: str) -> str:
    """The usage error (exit 2) for a positional input given to a legacy loop: argparse's
    own words before HEAD files existed, and why."""
    return (
        f"ll-loop run: error: unrecognized arguments: {positional} ({loop_arg} is a legacy "
        "loop file: it takes no positional input; use --context KEY=VALUE)"
    )


def _parameter_problems(loop: HeadLoop, supplied: set[str]) -> list[str]:
    """§9d: defaults over the file's context, required ones from the caller, types."""
    problems: list[str] = []
    for name, spec in loop.parameters.items():
        if name not in supplied:
            if spec.default is not None:
                loop.context[name] = spec.default
            elif spec.required:
                problems.append(
                    f"loop '{loop.name}' requires parameter '{name}' but none was provided. "
                    f"Pass it via: ll-loop run {loop.name} --context {name}=VALUE"
                )
                continue
        if name in loop.context and not _templated(loop.context[name]):
            problem = type_problem(spec, loop.context[name])
            if problem is not None:
                problems.append(f"loop '{loop.name}': parameter '{name}' {problem}")
    return problems


def _templated(value: Any) -> bool:
    return isinstance(value, str) and "${" in value


def _absent_inputs(loop: HeadLoop) -> list[str]:
    """The `required_inputs` keys that are missing or empty."""
    return [key for key in loop.required_inputs if loop.context.get(key) in (None, "", [], {})]


def _required_input_line(loop: HeadLoop, key: str) -> str:
    return (
        f"loop '{loop.name}' requires input '{key}' but none was provided. "
        f"Pass it via: ll-loop run {loop.name} <value>"
    )


def _missing_context(loop: HeadLoop, injected: dict[str, Any], *, skip: set[str]) -> list[str]:
    """One line per `${context.k}` (no `:default=`, no `?`) the run's context lacks."""
    context = {**injected, **loop.context}
    missing: dict[str, str] = {}
    for where, template in _checked_templates(loop):
        for key_path in _context_paths(template):
            absent = _absent_key(context, key_path)
            if absent is not None:
                missing.setdefault(absent, where)
    return [
        f"loop '{loop.name}' needs context key '{key}' ({where}): pass --context {key}=VALUE"
        for key, where in missing.items()
        if key not in skip
    ]


def _checked_templates(loop: HeadLoop) -> Iterator[tuple[str, str]]:
    """The actions and evaluate prompts, with their key paths."""
    for name, state in loop.states.items():
        if state.action:
            yield f"states.{name}.action", state.action
        prompt = state.evaluate.prompt if state.evaluate is not None else None
        if prompt:
            yield f"states.{name}.evaluate.prompt", prompt


def _context_paths(template: str) -> Iterator[str]:
    for match in VARIABLE_PATTERN.finditer(ESCAPED_PATTERN.sub("", template)):
        try:
            variable = parse_head_variable(match.group(1))
        except HeadVariableError:
            continue  # the loader reports it
        if variable.namespace == "context" and variable.fallback is None:
            yield variable.path


def _absent_key(context: dict[str, Any], key_path: str) -> str | None:
    """The dotted prefix of `key_path` that `context` does not hold (None: all there)."""
    current: Any = context
    walked: list[str] = []
    for key in key_path.split("."):
        walked.append(key)
        if not isinstance(current, dict) or key not in current:
            return ".".join(walked)
        current = current[key]
    return None
