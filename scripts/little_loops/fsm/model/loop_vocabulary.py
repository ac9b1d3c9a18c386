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

# ---------------------------------------------------------------------------------------
# The HEAD dialect (spec/ll-head-dialect.md §1.1, §2): what a legacy file never uses.
# ---------------------------------------------------------------------------------------

# §1.1: the keys and values of legacy files (aada157e1 plus this project's additions).
LEGACY_LOOP_KEYS = (
    "name",
    "initial",
    "states",
    "paradigm",
    "context",
    "scope",
    "max_iterations",
    "backoff",
    "timeout",
    "maintain",
    "llm",
    "on_handoff",
    "max_continuations",
    "stall_threshold",
    "on_stall",
    "progress_paths",
    "checkpoint",
    "logs_keep",
    "max_cost_usd",
    "notify",
    "rate_limit",
    "host",
)
LEGACY_STATE_KEYS = (
    "action",
    "evaluate",
    "route",
    "on_success",
    "on_failure",
    "on_error",
    "next",
    "terminal",
    "capture",
    "timeout",
    "on_maintain",
    "action_type",
    "max_visits",
    "on_max_visits",
)
LEGACY_EVALUATE_KEYS = (
    "type",
    "operator",
    "target",
    "tolerance",
    "pattern",
    "negate",
    "path",
    "prompt",
    "schema",
    "min_confidence",
    "uncertain_suffix",
    "source",
    "previous",
    "direction",
)
LEGACY_LLM_KEYS = ("enabled", "model", "max_tokens", "timeout")

HEAD_ACTION_TYPES = ("shell", "prompt", "slash_command", "mcp_tool", "contract")
HEAD_ONLY_ACTION_TYPES = ("prompt", "mcp_tool", "contract")
HEAD_EVALUATOR_TYPES = (
    *EVALUATOR_TYPES,
    "classify",
    "diff_stall",
    "score_stall",
    "open_question_stall",
    "action_stall",
    "harbor_scorer",
    "mcp_result",
    "comparator",
    "contract",
)
# §2.3: required fields of the evaluators HEAD adds (the legacy ones are in
# EVALUATOR_REQUIRED_FIELDS, checked on the built loop).
HEAD_EVALUATOR_REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "comparator": ("baseline_path",),
    "contract": ("pairs",),
}
# Route-table keys that only HEAD writes (§1.1).
HEAD_ROUTE_KEYS = ("yes", "no", "cannot_judge")
# `on_<verdict>` keys that mark a file as HEAD. Any other unknown `on_<x>` key leaves a
# file legacy, where it stays an unknown key (`on_sucess` is a typo, not a verdict route).
HEAD_VERDICT_ROUTE_KEYS = (
    "on_yes",
    "on_no",
    "on_partial",
    "on_blocked",
    "on_timeout",
    "on_cannot_judge",
    "on_cannot_judge_uncertain",
    "on_tool_error",
    "on_not_found",
    "on_target",
    "on_progress",
    "on_stall",
    "on_yes_uncertain",
    "on_no_uncertain",
    "on_retry_exhausted",
    "on_rate_limit_exhausted",
    "on_throttle_hard",
)
HEAD_HANDOFF_BEHAVIORS = HANDOFF_BEHAVIORS
HEAD_TAMPER_GUARDS = ("revert", "fail", "allow")
HEAD_PREPATCH_CHECKS = ("fail", "warn", "allow")
HEAD_REQUEST_PATHS = ("cli", "sdk", "batch")
HEAD_LINE_WORDS = ("last", "first")
# The `*_ok` lint switches of §2.1 (accept, warn once).
HEAD_LINT_SWITCHES = (
    "artifact_versioning_ok",
    "meta_self_eval_ok",
    "shared_state_ok",
    "capture_reachability_ok",
    "partial_route_ok",
    "generator_fix_ok",
    "bash_default_ok",
    "evidence_contract_ok",
    "shell_pid_ok",
    "parse_swallow_ok",
    "policy_dims_scored_ok",
    "unsafe_context_interpolation_ok",
    "pruning_profile_ok",
    "tamper_guard_ok",
    "prepatch_check_ok",
    "session_mode_ok",
    "haiku_generator_ok",
    "terminal_action_ok",
    "abandonment_verdict_ok",
    "evaluate_unknown_keys_ok",
)

# §2.1-§2.3: the keys HEAD adds at each level (a file using one of them is HEAD).
HEAD_LOOP_KEYS = (
    "description",
    "category",
    "labels",
    "visibility",
    "parameters",
    "input_key",
    "required_inputs",
    "max_steps",
    "on_max_steps",
    "on_max_iterations",
    "max_edge_revisits",
    "default_timeout",
    "default_idle_timeout",
    "singleton",
    "session_mode",
    "circuit",
    "import",
    "fragments",
    "from",
    "flow",
    "state_defs",
    "commands",
    "config",
    "artifact_versioning",
    *HEAD_LINT_SWITCHES,
    "tamper_guard",
    "prepatch_check",
    "pruning_profile",
    "host_guard",
    "prompt_size_guard",
    "targets",
)
HEAD_STATE_KEYS = (
    "on_yes",
    "on_no",
    "failure",
    "idle_timeout",
    "loop",
    "with",
    "context_passthrough",
    "worktree",
    "fragment",
    "parameters",
    "max_retries",
    "on_retry_exhausted",
    "retryable_exit_codes",
    "max_rate_limit_retries",
    "on_rate_limit_exhausted",
    "rate_limit_backoff_base_seconds",
    "rate_limit_max_wait_seconds",
    "rate_limit_long_wait_ladder",
    "throttle",
    "on_throttle_hard",
    "agent",
    "tools",
    "model",
    "effort",
    "session_mode",
    "append_to_messages",
    "params",
    "type",
    "learning",
    "pruning_profile",
    "tamper_guard",
    "prepatch_check",
    "request_path",
    "cost_ceiling",
    "description",
    "output",
    "with_",
)
# HEAD's evaluate keys that `HeadEvaluateConfig` keeps, each in a field of its name.
HEAD_EVALUATE_FIELDS = (
    "error_patterns",
    "key",
    "line",
    "scope",
    "max_stall",
    "history_file",
    "epsilon",
    "track",
    "max_repeat",
)
HEAD_EVALUATE_KEYS = (
    *HEAD_EVALUATE_FIELDS,
    # Read only by little-loops' comparator and contract judges: accepted, warned once.
    "baseline_path",
    "auto_promote",
    "min_pairs",
    "pairs",
)
HEAD_LLM_KEYS = ("effort",)
