"""The HEAD part of the shipped JSON schema (`fsm-loop-schema.json`), generated from the
loader's own tables (spec/ll-head-dialect.md §9e).

The schema describes both dialects and stays closed. Its legacy part (written by hand,
`properties` listing exactly the legacy record fields) is kept; this module adds:

- `patternProperties` with one exact-match pattern per HEAD loop key (`^description$`),
  so `properties` still lists the legacy fields only;
- an `if`/`then`/`else` on the dialect markers of `dialect.py` (§1.1): a HEAD file's
  states and `llm` are checked against `head_state`/`head_llm`, a legacy file's against
  the legacy `state`/`llm`;
- the HEAD definitions: every key of `head_shape`'s tables (a missing schema is an error
  when generating), HEAD's evaluator types and required fields, `on_<verdict>` routes by
  pattern, the rules between keys that JSON Schema can express.

What JSON Schema cannot say (targets naming states, files on disk, `throttle` being
strictly increasing, `cost_warn_at` not above the ceiling) stays with `ll-loop validate`.
The schema describes a file as written: a HEAD file that leaves `name`, `initial` or
`states` to its `from:` parent or to `flow:` does not pass it (the `required` keys of an
FSM file are the legacy ones). Paradigm files have their own part (`paradigm_schema`).
Regenerate the file with `python -m little_loops.fsm.loading.head_schema` (a test checks
it is up to date).
"""

from __future__ import annotations

import copy
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from little_loops.fsm.loading.head_shape import (
    HEAD_EVALUATE_CHECKS,
    HEAD_LOOP_CHECKS,
    HEAD_STATE_CHECKS,
)
from little_loops.fsm.loading.paradigm_schema import with_paradigm_part, without_paradigm_part
from little_loops.fsm.model.agent_hosts import HOST_ALIASES, HOST_NAMES
from little_loops.fsm.model.head_parts import (
    HEAD_SESSION_MODES,
    NON_VERDICT_ON_KEYS,
    PARAMETER_TYPES,
)
from little_loops.fsm.model.loop_vocabulary import (
    EVALUATOR_TYPES,
    HEAD_ACTION_TYPES,
    HEAD_EVALUATE_KEYS,
    HEAD_EVALUATOR_REQUIRED_FIELDS,
    HEAD_EVALUATOR_TYPES,
    HEAD_LINE_WORDS,
    HEAD_LINT_SWITCHES,
    HEAD_LLM_KEYS,
    HEAD_LOOP_KEYS,
    HEAD_ONLY_ACTION_TYPES,
    HEAD_PREPATCH_CHECKS,
    HEAD_REQUEST_PATHS,
    HEAD_ROUTE_KEYS,
    HEAD_STATE_KEYS,
    HEAD_TAMPER_GUARDS,
    HEAD_VERDICT_ROUTE_KEYS,
    LEGACY_LOOP_KEYS,
)

SCHEMA_FILE = "fsm-loop-schema.json"
_HEAD_DEFINITIONS = ("head_state", "head_route", "head_evaluate", "head_llm", "parameters")
_NULL = {"type": "null"}
_NOT_NULL = {"not": _NULL}
_TARGET = {"$ref": "#/definitions/target"}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/definitions/{name}"}


def _opt(kind: str, **more: Any) -> dict[str, Any]:
    return {"type": [kind, "null"], **more}


def _int(minimum: int, *, nullable: bool = False) -> dict[str, Any]:
    return {"type": ["integer", "null"] if nullable else "integer", "minimum": minimum}


def _enum(values: tuple[str, ...], *, nullable: bool = True) -> dict[str, Any]:
    return {"enum": [*values, None] if nullable else list(values)}


def _closed(properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties, **more}


_STRINGS = {"type": "array", "items": {"type": "string"}}
_NUMBER_AT_LEAST_0 = {"type": "number", "minimum": 0}
_BOOL = {"type": "boolean"}
_OBJECT = {"type": "object"}
_OBJECT_OF_OBJECTS = {"type": "object", "additionalProperties": _OBJECT}

_PRUNING = _closed(
    {
        "name": _opt("string"),
        "enabled": _BOOL,
        "suppress_catalog": _BOOL,
        "suppress_claude_md": _BOOL,
    }
)

# One schema per HEAD loop key (legacy keys keep their hand-written `properties`).
HEAD_LOOP_SCHEMAS: dict[str, dict[str, Any]] = {
    "description": _opt("string"),
    "category": {"type": "string"},
    "labels": _STRINGS,
    "visibility": {"type": "string"},
    "parameters": _ref("parameters"),
    "input_key": {"type": "string", "minLength": 1},
    "required_inputs": _STRINGS,
    "max_steps": _int(1),
    "on_max_steps": _TARGET,
    "on_max_iterations": _TARGET,
    "max_edge_revisits": _int(1),
    "default_timeout": _int(1, nullable=True),
    "default_idle_timeout": _int(0),
    "singleton": _BOOL,
    "session_mode": _enum(HEAD_SESSION_MODES),
    "circuit": _closed(
        {
            "repeated_failure": _closed(
                {
                    "window": _int(1),
                    "on_repeated_failure": {"type": "string", "minLength": 1},
                    "progress_paths": _STRINGS,
                    "exclude_paths": _STRINGS,
                    "recurrent_window": _int(2, nullable=True),
                }
            )
        }
    ),
    "import": _STRINGS,
    "fragments": {
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "properties": {"description": _opt("string"), "parameters": _ref("parameters")},
        },
    },
    "from": {"type": "string"},
    "flow": _STRINGS,
    "state_defs": _OBJECT_OF_OBJECTS,
    "commands": {
        "type": "array",
        "items": _closed({"cmd": {"type": "string"}, "comment": _opt("string")}),
    },
    "config": _closed(
        {
            "automation": _closed({"max_continuations": _int(1)}),
            "continuation": _closed({"max_continuations": _int(1)}),
            "commands": _closed(
                {
                    "confidence_gate": _closed(
                        {
                            "readiness_threshold": _NUMBER_AT_LEAST_0,
                            "outcome_threshold": _NUMBER_AT_LEAST_0,
                        }
                    )
                }
            ),
            "handoff_threshold": {},
        }
    ),
    "artifact_versioning": _BOOL,
    **{key: _BOOL for key in HEAD_LINT_SWITCHES},
    "tamper_guard": _enum(HEAD_TAMPER_GUARDS),
    "prepatch_check": _enum(HEAD_PREPATCH_CHECKS),
    "pruning_profile": _PRUNING,
    "host_guard": _OBJECT,
    "prompt_size_guard": _OBJECT,
    "targets": {
        "type": "array",
        "items": _closed({"file": _opt("string"), "glob": _opt("string"), "states": _STRINGS}),
    },
}

_HOST_NAME = {"type": "string", "enum": [*HOST_NAMES, *HOST_ALIASES]}
_HOST = {
    "oneOf": [_HOST_NAME, {"type": "array", "minItems": 1, "items": _HOST_NAME}],
    "description": "The agent CLI(s) this prompt state runs on (wins over the loop's host).",
}

# One schema per HEAD state key that the legacy state does not have (or has otherwise).
HEAD_STATE_SCHEMAS: dict[str, dict[str, Any]] = {
    "action_type": _enum(HEAD_ACTION_TYPES),
    "evaluate": _ref("head_evaluate"),
    "route": _ref("head_route"),
    "on_yes": _TARGET,
    "on_no": _TARGET,
    "failure": _BOOL,
    "idle_timeout": _int(0, nullable=True),
    "loop": _opt("string"),
    "with": _opt("object"),
    "context_passthrough": _BOOL,
    "worktree": _opt("string"),
    "fragment": _opt("string"),
    "parameters": _ref("parameters"),
    "max_retries": _int(1, nullable=True),
    "on_retry_exhausted": _TARGET,
    "retryable_exit_codes": {"type": "array", "items": _int(1)},
    "max_rate_limit_retries": _int(1, nullable=True),
    "on_rate_limit_exhausted": _TARGET,
    "rate_limit_backoff_base_seconds": _int(1, nullable=True),
    "rate_limit_max_wait_seconds": _int(1, nullable=True),
    "rate_limit_long_wait_ladder": {"type": "array", "minItems": 1, "items": _int(1)},
    "throttle": _closed({key: _int(1) for key in ("normal_max", "warn_max", "hard_max")}),
    "on_throttle_hard": _TARGET,
    "agent": _opt("string"),
    "tools": _STRINGS,
    "model": _opt("string"),
    "effort": _opt("string"),
    "host": _HOST,
    "session_mode": _enum(HEAD_SESSION_MODES),
    "append_to_messages": _opt("string", pattern=r"\$\{"),
    "params": _opt("object"),
    "type": _opt("string"),
    "learning": _closed(
        {
            "targets": _STRINGS,
            "targets_csv": _opt("string"),
            "max_retries": _int(0),
            "max_retries_expr": _opt("string"),
        }
    ),
    "pruning_profile": _PRUNING,
    "tamper_guard": _enum(HEAD_TAMPER_GUARDS),
    "prepatch_check": _enum(HEAD_PREPATCH_CHECKS),
    "request_path": _enum(HEAD_REQUEST_PATHS),
    "cost_ceiling": _closed(
        {"cost_ceiling_per_state": _NUMBER_AT_LEAST_0, "cost_warn_at": _NUMBER_AT_LEAST_0}
    ),
    "description": _opt("string"),
    "output": {},
    "with_": {},
}

HEAD_EVALUATE_SCHEMAS: dict[str, dict[str, Any]] = {
    "type": {"type": "string", "enum": list(HEAD_EVALUATOR_TYPES)},
    "error_patterns": _STRINGS,
    "key": _opt("string"),
    "line": {"anyOf": [{"type": "integer"}, {"enum": list(HEAD_LINE_WORDS)}]},
    "scope": _STRINGS,
    "max_stall": _int(1),
    "history_file": _opt("string"),
    "epsilon": _NUMBER_AT_LEAST_0,
    "track": _STRINGS,
    "max_repeat": _int(1),
    "baseline_path": _opt("string"),
    "auto_promote": _BOOL,
    "min_pairs": _int(1),
    "pairs": {},
}


# ---------------------------------------------------------------------------------------
# the dialect (dialect.py, §1.1) as a schema condition
# ---------------------------------------------------------------------------------------


def _any_key(keys: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    return [{"required": [key]} for key in keys]


def _head_state_marker() -> dict[str, Any]:
    new_types = [kind for kind in HEAD_EVALUATOR_TYPES if kind not in EVALUATOR_TYPES]
    markers = sorted({*HEAD_STATE_KEYS, *HEAD_VERDICT_ROUTE_KEYS})
    evaluate = {
        "type": "object",
        "anyOf": [
            {"required": ["type"], "properties": {"type": {"enum": new_types}}},
            *_any_key(HEAD_EVALUATE_KEYS),
        ],
    }
    route = {"type": "object", "anyOf": _any_key(HEAD_ROUTE_KEYS)}
    return {
        "type": "object",
        "anyOf": [
            *_any_key(markers),
            {
                "required": ["action_type"],
                "properties": {"action_type": {"enum": list(HEAD_ONLY_ACTION_TYPES)}},
            },
            {"required": ["evaluate"], "properties": {"evaluate": evaluate}},
            {"required": ["route"], "properties": {"route": route}},
        ],
    }


def head_file_condition() -> dict[str, Any]:
    """True for a mapping `dialect.loop_dialect` calls HEAD."""
    some_head_state = {
        "required": ["states"],
        "properties": {
            "states": {
                "type": "object",
                "not": {"additionalProperties": {"not": _head_state_marker()}},
            }
        },
    }
    llm_effort = {
        "required": ["llm"],
        "properties": {"llm": {"type": "object", "anyOf": _any_key(HEAD_LLM_KEYS)}},
    }
    return {"anyOf": [*_any_key(HEAD_LOOP_KEYS), llm_effort, some_head_state]}


# ---------------------------------------------------------------------------------------
# rules between keys (head_rules.py) that JSON Schema can express
# ---------------------------------------------------------------------------------------


def _set(key: str) -> dict[str, Any]:
    """`key` is written with a non-null value."""
    return {"required": [key], "properties": {key: _NOT_NULL}}


def _equals(key: str, value: str) -> dict[str, Any]:
    return {"required": [key], "properties": {key: {"const": value}}}


def _needs(key: str, *needed: str) -> dict[str, Any]:
    return {"if": _set(key), "then": {"anyOf": [_set(other) for other in needed]}}


def _not_both(first: str, second: str) -> dict[str, Any]:
    both = {
        "required": [first, second],
        "properties": {first: _NOT_NULL, second: {"not": {"enum": [None, False]}}},
    }
    return {"not": both}


def _state_rules() -> list[dict[str, Any]]:
    return [
        _needs("max_retries", "on_retry_exhausted"),
        _needs("on_retry_exhausted", "max_retries"),
        _needs("retryable_exit_codes", "on_error"),
        _needs("max_rate_limit_retries", "on_rate_limit_exhausted"),
        _needs("on_rate_limit_exhausted", "max_rate_limit_retries"),
        _needs("worktree", "loop"),
        _not_both("loop", "action"),
        _not_both("with", "context_passthrough"),
        _needs("with", "loop", "fragment"),
        _needs("parameters", "fragment"),
        {"if": _set("params"), "then": _equals("action_type", "mcp_tool")},
    ]


def _verdict_route_pattern() -> str:
    names = sorted(key[3:] for key in NON_VERDICT_ON_KEYS)
    return f"^on_(?!({'|'.join(names)})$)"


def _head_transitions() -> dict[str, Any]:
    """A HEAD state needs a way on: the legacy ones, a `loop:`, or any verdict route."""
    string_keys = ("on_success", "on_failure", "on_error", "on_yes", "on_no", "next", "loop")
    return {
        "anyOf": [
            {"required": ["route"]},
            *({"required": [key], "properties": {key: {"type": "string"}}} for key in string_keys),
            {"required": ["terminal"], "properties": {"terminal": {"const": True}}},
            {"not": {"patternProperties": {_verdict_route_pattern(): _NULL}}},
        ],
        "description": (
            "A state needs a way on: a route table, an on_<verdict> route, next, loop, "
            "or terminal: true."
        ),
    }


# ---------------------------------------------------------------------------------------
# definitions
# ---------------------------------------------------------------------------------------


def _covered(table: dict[str, Any], schemas: dict[str, Any], legacy: dict[str, Any]) -> None:
    missing = [key for key in table if key not in schemas and key not in legacy]
    if missing:
        raise ValueError(f"no schema for HEAD keys: {', '.join(missing)}")


def _head_state(legacy: dict[str, Any]) -> dict[str, Any]:
    base = legacy["state"]["properties"]
    _covered(HEAD_STATE_CHECKS, HEAD_STATE_SCHEMAS, base)
    properties = {key: HEAD_STATE_SCHEMAS.get(key, base.get(key)) for key in HEAD_STATE_CHECKS}
    return {
        "type": "object",
        "description": "A state of a HEAD file (spec/ll-head-dialect.md §2.2).",
        "properties": properties,
        "patternProperties": {"^on_": _TARGET},
        "additionalProperties": False,
        **_head_transitions(),
        "allOf": [
            *_state_rules(),
            {"if": _set("on_max_visits"), "then": _set("max_visits")},
        ],
    }


def _head_evaluate(legacy: dict[str, Any]) -> dict[str, Any]:
    base = legacy["evaluate"]
    _covered(HEAD_EVALUATE_CHECKS, HEAD_EVALUATE_SCHEMAS, base["properties"])
    properties = {
        key: HEAD_EVALUATE_SCHEMAS.get(key, base["properties"].get(key))
        for key in HEAD_EVALUATE_CHECKS
    }
    required = [
        {
            "if": {"properties": {"type": {"const": kind}}},
            "then": {"required": list(fields), "properties": dict.fromkeys(fields, _NOT_NULL)},
        }
        for kind, fields in HEAD_EVALUATOR_REQUIRED_FIELDS.items()
    ]
    return {
        **{key: value for key, value in base.items() if key not in ("properties", "allOf")},
        "properties": properties,
        "allOf": [*copy.deepcopy(base["allOf"]), *required],
    }


def _head_route(legacy: dict[str, Any]) -> dict[str, Any]:
    route: dict[str, Any] = copy.deepcopy(legacy["route"])
    route["description"] = (
        "Verdict -> target, in either dialect's words ('success' or 'yes', not both); "
        "'_' is the default route, '_error' the route for the error verdict."
    )
    route["allOf"] = [
        {"not": {"required": ["success", "yes"]}},
        {"not": {"required": ["failure", "no"]}},
    ]
    return route


def _parameters() -> dict[str, Any]:
    spec = _closed(
        {
            "type": {"type": "string", "enum": list(PARAMETER_TYPES)},
            "required": _BOOL,
            "default": {},
            "description": _opt("string"),
            "values": _opt("array"),
        },
        required=["type"],
        allOf=[
            {
                "if": {"properties": {"type": {"const": "enum"}}},
                "then": _set("values"),
            },
            {
                "if": {"required": ["required"], "properties": {"required": {"const": True}}},
                "then": {"properties": {"default": _NULL}},
            },
        ],
    )
    return {"type": "object", "additionalProperties": spec}


def _head_llm(legacy: dict[str, Any]) -> dict[str, Any]:
    llm: dict[str, Any] = copy.deepcopy(legacy["llm"])
    llm["properties"].update({key: {"type": "string"} for key in HEAD_LLM_KEYS})
    return llm


# ---------------------------------------------------------------------------------------
# the whole schema
# ---------------------------------------------------------------------------------------


def legacy_part(schema: dict[str, Any]) -> dict[str, Any]:
    """The hand-written legacy schema inside a generated one (or the legacy schema itself)."""
    legacy = copy.deepcopy(schema)
    legacy["required"] = without_paradigm_part(legacy)
    for key in ("patternProperties", "if", "then", "else"):
        legacy.pop(key, None)
    for name in _HEAD_DEFINITIONS:
        legacy["definitions"].pop(name, None)
    legacy["properties"]["states"]["additionalProperties"] = _ref("state")
    legacy["properties"]["llm"] = _ref("llm")
    return legacy


def _dialect_switch() -> dict[str, Any]:
    """`if` the file is HEAD (§1.1) `then` HEAD states and llm, `else` the legacy ones."""

    def checked_by(state: str, llm: str) -> dict[str, Any]:
        return {"properties": {"states": {"additionalProperties": _ref(state)}, "llm": _ref(llm)}}

    return {
        "if": head_file_condition(),
        "then": checked_by("head_state", "head_llm"),
        "else": checked_by("state", "llm"),
    }


def generate_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of both dialects, built over the legacy part of `schema`."""
    legacy = legacy_part(schema)
    definitions = legacy["definitions"]
    _covered(HEAD_LOOP_CHECKS, HEAD_LOOP_SCHEMAS, legacy["properties"])
    generated = copy.deepcopy(legacy)
    generated["description"] = (
        "A little-loops FSM loop file (.loops/<name>.yaml), in the legacy dialect or in "
        "little-loops' current (HEAD) one. Documentation and editor tooling only: ll-loop "
        "itself checks files with little_loops.fsm.validation, which reports the same rules "
        "with key paths."
    )
    generated["properties"]["states"].pop("additionalProperties")
    generated["properties"]["llm"] = {"type": "object"}
    head_keys = [key for key in HEAD_LOOP_CHECKS if key not in LEGACY_LOOP_KEYS]
    generated["patternProperties"] = {f"^{key}$": HEAD_LOOP_SCHEMAS[key] for key in head_keys}
    generated.update(_dialect_switch())
    with_paradigm_part(generated, legacy["required"])
    generated["definitions"].update(
        head_state=_head_state(definitions),
        head_route=_head_route(definitions),
        head_evaluate=_head_evaluate(definitions),
        head_llm=_head_llm(definitions),
        parameters=_parameters(),
    )
    return generated


def schema_json(schema: dict[str, Any]) -> str:
    """The file's text: two-space indentation, non-ASCII kept, a final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def shipped_schema_path() -> Path:
    return Path(str(resources.files("little_loops.fsm").joinpath(SCHEMA_FILE)))


def main() -> int:
    """Rewrite the shipped schema with a freshly generated HEAD part."""
    path = shipped_schema_path()
    schema = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(schema_json(generate_schema(schema)), encoding="utf-8")
    sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
