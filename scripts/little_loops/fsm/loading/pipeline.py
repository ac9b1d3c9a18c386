"""From a loop file to a validated `FSMLoop`: every stage, in order, in one place.

```
path ─► source.read_loop_text          file checks, UTF-8 text
     ─► yaml_text.compose_yaml         YAML nodes (syntax, alias bomb)
     ─► duplicate_keys                 a key written twice is an error
     ─► yaml_text.construct_yaml       values (only true/false are booleans)
     ─► source.require_mapping         the top level is a mapping
     ─► dialect.loop_dialect           legacy or HEAD, decided on the raw file
  legacy:
     ─► approval_keys.fold_legacy_approvals   an approval state's on_yes/... into route:
     ─► shape                          required keys, unknown keys, types, fixed values
     ─► FSMLoop.from_dict  or  paradigms.compile_paradigm   (load_loop only)
  HEAD (spec/ll-head-dialect.md §8):
     ─► inheritance.resolve_inheritance   `from:` chains, deep merge
     ─► flow.expand_flow                  `flow:` + `state_defs:` into `states:`
     ─► fragments.expand_fragments        `import:`, `fragments:`, `fragment:` states
     ─► head_shape + warn_once            HEAD's keys, the rules between them, "warn once"
     ─► fragments.fragment_binding_errors
     ─► HeadLoop.from_dict
     ─► sub_loop_checks                   static `loop:` names, `with:`, call-graph cycles
  both:
     ─► graph_checks.validate_fsm      the reference's eleven checks (HEAD-aware)
     ─► head_graph_checks (HEAD only), loop_name, interpolation_checks, numeric_settings,
        argument_limits, approval_keys
     ─► the loop (errors raised as one LoopValidationError, warnings logged)
```

Each stage takes the previous stage's result and none of them calls another stage: this
module is the only place that runs them in sequence (the direction python-statemachine
loads a document in: read, parse, check, model, build). Shape errors are reported before
the loop is built, so a typo such as `on_sucess` is reported on its own instead of
together with the "no transition" error it causes.

`load_and_validate` runs the stages like the reference does (no paradigm compilation);
`load_loop` also compiles paradigm files. The reference path `little_loops.fsm.validation`
re-exports both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopFileError, LoopValidationError
from little_loops.fsm.loading.approval_keys import approval_findings, fold_legacy_approvals
from little_loops.fsm.loading.argument_limits import action_length_errors
from little_loops.fsm.loading.budget_checks import budget_route_findings, budget_shape_findings
from little_loops.fsm.loading.context_overrides import with_context_overrides
from little_loops.fsm.loading.dialect import loop_dialect
from little_loops.fsm.loading.duplicate_keys import duplicate_key_errors
from little_loops.fsm.loading.flow import expand_flow
from little_loops.fsm.loading.fragments import expand_fragments, fragment_binding_errors
from little_loops.fsm.loading.graph_checks import validate_fsm
from little_loops.fsm.loading.head_graph_checks import head_loop_findings
from little_loops.fsm.loading.head_shape import check_head_mapping
from little_loops.fsm.loading.inheritance import resolve_inheritance
from little_loops.fsm.loading.interpolation_checks import interpolation_errors
from little_loops.fsm.loading.loop_name import loop_name_errors
from little_loops.fsm.loading.numeric_settings import numeric_setting_errors
from little_loops.fsm.loading.paradigms import compile_paradigm
from little_loops.fsm.loading.parallel_checks import parallel_child_findings
from little_loops.fsm.loading.shape import check_loop_mapping, is_paradigm_spec, missing_loop_fields
from little_loops.fsm.loading.source import read_loop_text, require_mapping
from little_loops.fsm.loading.sub_loop_checks import sub_loop_findings
from little_loops.fsm.loading.warn_once import warn_once_findings
from little_loops.fsm.loading.warning_lines import warning_line
from little_loops.fsm.loading.yaml_text import compose_yaml, construct_yaml
from little_loops.fsm.model.budgets import legacy_loop_from_dict, split_budgets
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.head_loop import HeadLoop, is_head
from little_loops.fsm.model.head_parts import DIALECT_HEAD
from little_loops.fsm.model.hosted_state import with_hosted_states
from little_loops.fsm.model.parallel_config import with_parallel_states
from little_loops.fsm.schema import FSMLoop

# The reference logs warnings on this name (fsm-api §4), so it stays after the move.
logger = logging.getLogger("little_loops.fsm.validation")


def parse_loop_yaml(
    text: str, source: str | Path = "<string>"
) -> tuple[Any, list[ValidationError]]:
    """The values of a YAML text, and the keys written twice in one mapping (as errors)."""
    node = compose_yaml(text, source)
    # On the nodes, before construction merges `<<` keys in and a dict hides repeats.
    duplicates = duplicate_key_errors(node) if node is not None else []
    return construct_yaml(node, source), duplicates


def load_loop_mapping(path: Path | str) -> dict[str, Any]:
    """Read and parse a loop file whose top level must be a mapping."""
    path = Path(path)
    data, duplicates = parse_loop_yaml(read_loop_text(path), str(path))
    mapping = require_mapping(data, str(path))
    _raise_if_errors(path, duplicates)
    return mapping


def load_and_validate(path: Path | str) -> FSMLoop:
    """Load an FSM loop file and validate it (paradigm files are not compiled).

    Raises `LoopNotFoundError` for a missing file, `LoopSyntaxError` for bad YAML,
    `LoopFileError` for a file that is not a loop, `LoopValidationError` for shape and
    graph errors. Warnings are logged on `little_loops.fsm.validation`.
    """
    path = Path(path)
    return _loop_from_fsm_mapping(load_loop_mapping(path), path)


def load_loop(path: Path | str, *, context_overrides: Mapping[str, str] | None = None) -> FSMLoop:
    """Like `load_and_validate`, but a paradigm file is compiled first.

    `context_overrides` (`run --context`) are set in the file's `context` before checking.
    """
    path = Path(path)
    data = with_context_overrides(load_loop_mapping(path), context_overrides or {})
    if not is_paradigm_spec(data):
        return _loop_from_fsm_mapping(data, path)
    _raise_if_errors(path, check_loop_mapping(data))
    return _checked(_compiled(data, path), path)


def built_loop_findings(fsm: FSMLoop) -> list[ValidationError]:
    """The checks on a built loop: the reference's graph checks, then our additions."""
    return [
        *validate_fsm(fsm),
        *head_loop_findings(fsm),
        *budget_route_findings(fsm),
        *loop_name_errors(fsm.name),
        *interpolation_errors(fsm),
        *numeric_setting_errors(fsm),
        *action_length_errors(fsm),
        *approval_findings(fsm),
    ]


def _loop_from_fsm_mapping(data: dict[str, Any], path: Path) -> FSMLoop:
    if loop_dialect(data) == DIALECT_HEAD:
        return _head_loop(data, path)
    _require_loop_fields(data, path)
    data, folding_errors = fold_legacy_approvals(data)
    rest, _ = split_budgets(data)  # our budget keys are checked apart (`budget_checks`)
    budget_findings = budget_shape_findings(data)
    errors = [*folding_errors, *check_loop_mapping(rest), *_errors(budget_findings)]
    _raise_if_errors(path, errors)
    fsm = with_hosted_states(with_parallel_states(legacy_loop_from_dict(data), data), data)
    children = parallel_child_findings(fsm, path, load_loop_mapping)
    return _checked(fsm, path, [*budget_findings, *children])


def _head_loop(data: dict[str, Any], path: Path) -> HeadLoop:
    """A HEAD file (§8.1): `from:`, `flow:`, fragments, shape per HEAD's tables, then the
    HEAD model and the checks."""
    data, flow_warnings = expand_flow(resolve_inheritance(data, path, load_loop_mapping), path)
    _require_loop_fields(data, path)
    data, fragment_findings = expand_fragments(data, path, read_yaml_values)
    findings = [
        *flow_warnings,
        *fragment_findings,
        *check_head_mapping(split_budgets(data)[0]),
        *budget_shape_findings(data),
        *warn_once_findings(data),
    ]
    _raise_if_errors(path, _errors(findings))
    _raise_if_errors(path, fragment_binding_errors(data["states"]))
    fsm = HeadLoop.from_dict(data)
    _checked(
        fsm,
        path,
        [
            *findings,
            *sub_loop_findings(fsm, path, read_resolved_mapping),
            *parallel_child_findings(fsm, path, read_resolved_mapping),
        ],
    )
    return fsm


def read_resolved_mapping(path: Path) -> dict[str, Any]:
    """A loop file's mapping with, for a HEAD file, `from:` and `flow:` applied (how a
    sub-loop's parameters and `loop:` names are read without building it)."""
    data = load_loop_mapping(path)
    if loop_dialect(data) != DIALECT_HEAD:
        return data
    return expand_flow(resolve_inheritance(data, path, load_loop_mapping), path)[0]


def read_yaml_values(path: Path) -> Any:
    """A YAML file's values, read like a loop file (a fragment library is any YAML; only a
    mapping's `fragments:` is used)."""
    return parse_loop_yaml(read_loop_text(path), str(path))[0]


def _require_loop_fields(data: dict[str, Any], path: Path) -> None:
    missing = missing_loop_fields(data)
    if missing:
        message = f"FSM file missing required fields: {', '.join(missing)}"
        raise LoopFileError(str(path), message)


def _compiled(data: dict[str, Any], path: Path) -> FSMLoop:
    try:
        return compile_paradigm(data)
    except ValueError as exc:
        raise LoopFileError(str(path), str(exc)) from None


def _checked(fsm: FSMLoop, path: Path, earlier: list[ValidationError] | None = None) -> FSMLoop:
    """Raise the errors of the built loop; log its warnings and those found earlier."""
    findings = [*(earlier or []), *built_loop_findings(fsm)]
    _raise_if_errors(path, _errors(findings))
    for warning in findings:  # only warnings are left
        logger.warning("%s", warning_line(warning, path, head=is_head(fsm)))
    return fsm


def _errors(findings: list[ValidationError]) -> list[ValidationError]:
    return [item for item in findings if item.severity is ValidationSeverity.ERROR]


def _raise_if_errors(path: Path, errors: list[ValidationError]) -> None:
    if errors:
        raise LoopValidationError(str(path), errors)
