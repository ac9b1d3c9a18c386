"""The reference path of loop validation: a face over `little_loops.fsm.loading`.

Code written for the reference imports `validate_fsm`, `load_and_validate`, the findings
record and the vocabulary constants from here; we add `load_loop` (paradigm files
compiled on the fly), the shape checks and the file reader. The work is done by the
stages of `loading` (see `loading/pipeline.py` for their order); no module of the package
imports this face. The reference's private helpers `_validate_evaluator`,
`_validate_state_routing` and `_find_reachable_states` stay importable here.
"""

from __future__ import annotations

from little_loops.fsm.loading import graph_checks, pipeline
from little_loops.fsm.loading.graph_checks import validate_fsm
from little_loops.fsm.loading.pipeline import load_and_validate, load_loop, load_loop_mapping
from little_loops.fsm.loading.shape import check_loop_mapping, is_paradigm_spec
from little_loops.fsm.loading.source import MAX_LOOP_FILE_BYTES
from little_loops.fsm.loading.value_checks import (
    FieldCheck,
    ValueCheck,
    describe_value,
    not_a_string_message,
)
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.loop_vocabulary import (
    ACTION_TYPES,
    CHECKPOINT_KINDS,
    COMMON_SPEC_KEYS,
    CONSTRAINT_KEYS,
    DIRECTIONS,
    EVALUATOR_REQUIRED_FIELDS,
    EVALUATOR_TYPES,
    HANDOFF_BEHAVIORS,
    PARADIGM_SPEC_KEYS,
    PARADIGMS,
    REQUIRED_LOOP_FIELDS,
    SPECIAL_ROUTE_KEYS,
    UNTIL_KEYS,
    VALID_OPERATORS,
)

__all__ = [
    "ACTION_TYPES",
    "CHECKPOINT_KINDS",
    "COMMON_SPEC_KEYS",
    "CONSTRAINT_KEYS",
    "DIRECTIONS",
    "EVALUATOR_REQUIRED_FIELDS",
    "EVALUATOR_TYPES",
    "HANDOFF_BEHAVIORS",
    "MAX_LOOP_FILE_BYTES",
    "PARADIGMS",
    "PARADIGM_SPEC_KEYS",
    "REQUIRED_LOOP_FIELDS",
    "SPECIAL_ROUTE_KEYS",
    "UNTIL_KEYS",
    "VALID_OPERATORS",
    "FieldCheck",
    "ValidationError",
    "ValidationSeverity",
    "ValueCheck",
    "check_loop_mapping",
    "describe_value",
    "is_paradigm_spec",
    "load_and_validate",
    "load_loop",
    "load_loop_mapping",
    "not_a_string_message",
    "validate_fsm",
]

logger = pipeline.logger

# The reference's private helper names (fsm-api compatibility).
_validate_evaluator = graph_checks.state_evaluator_errors
_validate_state_routing = graph_checks.transition_errors
_find_reachable_states = graph_checks.reachable_states
