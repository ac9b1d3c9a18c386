"""Fragments: one state's template, named and shared (spec/ll-head-dialect.md §5).

The namespace is the fragments of each `import:` library in order (a later one replaces
an earlier one whole), then the file's own `fragments:` (local wins). A state with
`fragment: <name>` is deep-merged over the fragment (minus its `description` and
`parameters`): maps merge key by key at every depth, anything else from the state
(scalar, list, null) replaces. The merged state keeps `fragment: <name>` (for `show` and
messages), its `with:` (the fragment bindings) and the fragment's `parameters:` (for
`${param.*}`); `HeadLoop.from_dict` reads them. A `fragment:` inside a fragment is not
expanded.

Libraries are found next to the file (`<dir>/<entry>`, extension included); a missing one
is a load error. The reader of library files is passed in by the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopFileError
from little_loops.fsm.loading.bindings import binding_errors
from little_loops.fsm.loading.mapping_merge import deep_merge
from little_loops.fsm.loading.value_checks import join_path
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.head_parts import ParameterSpec

ReadYaml = Callable[[Path], Any]

# Keys every run provides, so a fragment may require them without a binding (§5).
PROVIDED_PARAMETERS = frozenset({"run_dir", "loop_name", "started_at", "input_hash"})


def library_path(entry: str, base_dir: Path) -> Path:
    """Where an `import:` entry is looked for (no loops are shipped with the package yet)."""
    return base_dir / entry


def library_fragments(data: Any) -> dict[str, Any]:
    """The `fragments:` of a library file (nothing from a file that is not a mapping)."""
    if not isinstance(data, dict):
        return {}
    fragments = data.get("fragments")
    return dict(fragments) if isinstance(fragments, dict) else {}


def fragment_namespace(data: dict[str, Any], path: Path, read_yaml: ReadYaml) -> dict[str, Any]:
    """Imported fragments in order, then the file's own on top."""
    namespace: dict[str, Any] = {}
    imports = data.get("import") or []
    for entry in imports if isinstance(imports, list) else []:
        if not isinstance(entry, str):
            continue  # reported by the shape check
        found = library_path(entry, path.parent)
        if not found.is_file():
            message = f"Fragment library not found: {entry} (checked {found})"
            raise LoopFileError(str(path), message)
        namespace.update(library_fragments(read_yaml(found)))
    own = data.get("fragments")
    if isinstance(own, dict):
        namespace.update(own)
    return namespace


def expand_fragments(
    data: dict[str, Any], path: Path, read_yaml: ReadYaml
) -> tuple[dict[str, Any], list[ValidationError]]:
    """The mapping with every `fragment:` state merged over its fragment, and the findings
    (unknown fragment names as errors; a fragment state that also runs a sub-loop)."""
    states = data.get("states")
    if not isinstance(states, dict) or not _uses_fragments(states):
        return data, []
    namespace = fragment_namespace(data, path, read_yaml)
    findings: list[ValidationError] = []
    expanded: dict[Any, Any] = {}
    for name, state in states.items():
        expanded[name] = state
        if isinstance(state, dict) and isinstance(state.get("fragment"), str):
            merged, problems = _expanded_state(str(name), state, namespace)
            expanded[name] = merged
            findings.extend(problems)
    return {**data, "states": expanded}, findings


def _uses_fragments(states: dict[Any, Any]) -> bool:
    return any(isinstance(state, dict) and "fragment" in state for state in states.values())


def _expanded_state(
    name: str, state: dict[str, Any], namespace: dict[str, Any]
) -> tuple[dict[str, Any], list[ValidationError]]:
    fragment_name = state["fragment"]
    fragment = namespace.get(fragment_name)
    if not isinstance(fragment, dict):
        available = ", ".join(sorted(map(str, namespace))) or "(none)"
        message = (
            f"State '{name}': fragment '{fragment_name}' not found. "
            f"Available fragments: {available}"
        )
        return state, [ValidationError(message)]
    base = {
        key: value for key, value in fragment.items() if key not in ("description", "parameters")
    }
    merged = deep_merge(base, state, none_removes=False)
    merged["fragment"] = fragment_name
    parameters = fragment.get("parameters")
    if parameters is not None:
        merged["parameters"] = parameters
    findings = []
    if merged.get("loop") is not None:
        message = "with: binds the fragment's parameters; the sub-loop gets no bindings"
        findings.append(ValidationError(message, f"states.{name}.loop", ValidationSeverity.WARNING))
    return merged, findings


def fragment_binding_errors(states: dict[str, Any]) -> list[ValidationError]:
    """Bindings of every fragment state against the fragment's parameters (§5), on a
    mapping whose shape is already checked."""
    errors: list[ValidationError] = []
    for name, state in states.items():
        if not isinstance(state, dict) or state.get("fragment") is None:
            continue
        specs = {
            key: ParameterSpec.from_dict(spec)
            for key, spec in (state.get("parameters") or {}).items()
        }
        bindings = state.get("with") or {}
        path = join_path(join_path("states", name), "with")
        errors.extend(binding_errors(bindings, specs, path, exempt=PROVIDED_PARAMETERS))
    return errors
