"""The paradigm part of the shipped JSON schema: files that `compile` turns into an FSM.

A paradigm file (`paradigm: goal`, `convergence`, `invariants` or `imperative`, with no
`initial` or `states`: `shape.is_paradigm_spec`) has no states of its own, so the
reference's schema, which requires `name`, `initial` and `states`, refused every one of
them (issue 23, item 20). The root's `required` now applies to FSM files only; a paradigm
file is checked against its paradigm's keys (`PARADIGM_SPEC_KEYS`) and what its compiler
requires. The loop-level keys it shares with FSM files keep their root `properties`.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.model.loop_vocabulary import PARADIGM_SPEC_KEYS

__all__ = [
    "PARADIGM_PART",
    "paradigm_keys",
    "paradigm_spec_condition",
    "with_paradigm_part",
    "without_paradigm_part",
]

PARADIGM_PART = "paradigm_spec"
"""The definition that holds a paradigm file's rules."""

_STRING: dict[str, Any] = {"type": "string"}
_STRINGS: dict[str, Any] = {"type": "array", "items": _STRING, "minItems": 1}
_NUMBER_OR_STRING: dict[str, Any] = {"type": ["number", "string"]}

# Each paradigm's own keys: (schema, required by its compiler).
_OWN_KEYS: dict[str, dict[str, tuple[dict[str, Any], bool]]] = {
    "goal": {"goal": (_STRING, True), "tools": (_STRINGS, True)},
    "convergence": {
        "name": (_STRING, True),
        "check": (_STRING, True),
        "toward": (_NUMBER_OR_STRING, True),
        "using": (_STRING, True),
        "tolerance": ({"anyOf": [{"type": "number", "minimum": 0}, _STRING]}, False),
        "direction": ({"enum": ["minimize", "maximize", None]}, False),
    },
    "invariants": {
        "name": (_STRING, True),
        "constraints": (
            {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["name", "check", "fix"],
                    "additionalProperties": False,
                    "properties": {"name": _STRING, "check": _STRING, "fix": _STRING},
                },
            },
            True,
        ),
    },
    "imperative": {
        "name": (_STRING, True),
        "steps": (_STRINGS, True),
        "until": (
            {
                "type": "object",
                "required": ["check"],
                "additionalProperties": False,
                "properties": {"check": _STRING},
            },
            True,
        ),
    },
}


def paradigm_keys() -> list[str]:
    """Every key that only paradigm files use, in a stable order."""
    keys = {key for own in _OWN_KEYS.values() for key in own}
    return sorted(keys - {"name"})


def paradigm_spec_condition() -> dict[str, Any]:
    """A file `compile` turns into an FSM: a paradigm other than `fsm`, no FSM keys."""
    return {
        "required": ["paradigm"],
        "properties": {"paradigm": {"enum": sorted(_OWN_KEYS)}},
        "not": {"anyOf": [{"required": ["initial"]}, {"required": ["states"]}]},
    }


def _paradigm_rules(paradigm: str) -> dict[str, Any]:
    own = _OWN_KEYS[paradigm]
    return {
        "if": {"properties": {"paradigm": {"const": paradigm}}},
        "then": {
            "propertyNames": {"enum": list(PARADIGM_SPEC_KEYS[paradigm])},
            "required": [key for key, (_, required) in own.items() if required],
            "properties": {key: schema for key, (schema, _) in own.items()},
        },
    }


def _paradigm_definition() -> dict[str, Any]:
    return {"allOf": [_paradigm_rules(paradigm) for paradigm in _OWN_KEYS]}


def with_paradigm_part(schema: dict[str, Any], required: list[str]) -> None:
    """Move the root's `required` (`required`) under "not a paradigm file", allow the
    paradigm keys at the root, and check paradigm files by `paradigm_spec`."""
    schema.pop("required", None)
    schema["patternProperties"].update({f"^{key}$": {} for key in paradigm_keys()})
    schema["definitions"][PARADIGM_PART] = _paradigm_definition()
    schema["allOf"] = [
        {
            "if": paradigm_spec_condition(),
            "then": {"$ref": f"#/definitions/{PARADIGM_PART}"},
            "else": {
                "required": required,
                "not": {"anyOf": [{"required": [key]} for key in paradigm_keys()]},
            },
        }
    ]


def without_paradigm_part(schema: dict[str, Any]) -> list[str]:
    """Undo `with_paradigm_part`; the root's `required` it had moved (or the root's own)."""
    switch = schema.pop("allOf", None)
    schema["definitions"].pop(PARADIGM_PART, None)
    for key in paradigm_keys():
        schema.get("patternProperties", {}).pop(f"^{key}$", None)
    if switch:
        return list(switch[0]["else"]["required"])
    return list(schema.pop("required", []))
