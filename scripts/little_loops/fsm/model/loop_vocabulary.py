"""The fixed sets of keys and values a loop file may use.

Shared by the shape checks (`loading.shape`), the graph checks (`loading.graph_checks`)
and `test_schema`, which checks that the JSON schema lists the same values. Re-exported
by the face `validation`, where the reference defines `EVALUATOR_REQUIRED_FIELDS` and
`VALID_OPERATORS`.
"""

from __future__ import annotations

REQUIRED_LOOP_FIELDS = ("name", "initial", "states")

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
    "logs_keep",
    "progress_paths",
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
