"""Loading runs one way: the stages of `fsm/loading/` are called in sequence only by
`pipeline`, and the reference paths `validation` and `compilers` are faces over them
(issue 12, circle 2)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import little_loops.fsm.loading as loading_package
from little_loops.fsm import compilers, validation
from little_loops.fsm.loading import graph_checks, paradigms, pipeline
from little_loops.fsm.loading.yaml_text import compose_yaml, construct_yaml, parse_yaml

LOADING_DIR = Path(loading_package.__file__).parent
STAGES = {
    "source",
    "yaml_text",
    "duplicate_keys",
    "shape",
    "paradigms",
    "graph_checks",
    "loop_name",
    "interpolation_checks",
    "numeric_settings",
    "argument_limits",
}
FACES = {"little_loops.fsm", "little_loops.fsm.validation", "little_loops.fsm.compilers"}


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at the top, under TYPE_CHECKING or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def imported_stages(path: Path) -> set[str]:
    prefix = "little_loops.fsm.loading."
    return {name[len(prefix) :] for name in imported_modules(path) if name.startswith(prefix)} & (
        STAGES
    )


@pytest.mark.parametrize("module", sorted(path.stem for path in LOADING_DIR.glob("*.py")))
def test_no_loading_module_imports_a_face(module: str) -> None:
    assert imported_modules(LOADING_DIR / f"{module}.py") & FACES == set()


def test_only_the_pipeline_calls_the_stages_in_sequence() -> None:
    """No stage imports another stage (the compilers use the shape checks, as the issue
    asks); so no stage can run the next one, and the order lives in `pipeline` alone."""
    chained = {
        stage: imported_stages(LOADING_DIR / f"{stage}.py")
        for stage in sorted(STAGES)
        if imported_stages(LOADING_DIR / f"{stage}.py")
    }
    assert chained == {"paradigms": {"shape"}}
    assert imported_stages(LOADING_DIR / "pipeline.py") == STAGES


def test_the_faces_hand_out_the_loading_objects() -> None:
    assert validation.load_loop is pipeline.load_loop
    assert validation.load_and_validate is pipeline.load_and_validate
    assert validation.validate_fsm is graph_checks.validate_fsm
    assert validation._find_reachable_states is graph_checks.reachable_states
    assert validation._validate_state_routing is graph_checks.transition_errors
    assert validation.logger is pipeline.logger
    assert validation.logger.name == "little_loops.fsm.validation"
    assert compilers.compile_paradigm is paradigms.compile_paradigm
    assert compilers._passthrough_fsm is paradigms.passthrough_fsm


def test_compose_then_construct_is_parse_yaml() -> None:
    """The two halves the pipeline calls build the same values as the one-call loader,
    merge keys and the YAML 1.2 booleans included."""
    text = "base: &b {on: 1, x: yes}\nstate:\n  <<: *b\n  off: true\n"
    assert construct_yaml(compose_yaml(text)) == parse_yaml(text)
    assert parse_yaml(text) == {
        "base": {"on": 1, "x": "yes"},
        "state": {"on": 1, "x": "yes", "off": True},
    }


def test_parse_loop_yaml_reports_a_repeated_key_next_to_a_merge() -> None:
    data, duplicates = pipeline.parse_loop_yaml("a: &a {k: 1}\nb:\n  <<: *a\n  k: 2\n  k: 3\n")
    assert data == {"a": {"k": 1}, "b": {"k": 3}}
    assert [(item.path, item.message) for item in duplicates] == [
        ("b.k", "defined twice (lines 4 and 5)")
    ]
