"""`ll-loop schema`: prints the JSON Schema the package ships; the examples pass it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from fixtures.cli_support import run_cli
from jsonschema import Draft7Validator

from little_loops.fsm.loading.yaml_text import parse_yaml
from little_loops.fsm.validation import is_paradigm_spec

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_schema_prints_the_shipped_file(tmp_path: Path) -> None:
    shipped = resources.files("little_loops.fsm").joinpath("fsm-loop-schema.json").read_text()

    done = run_cli(tmp_path, "schema")

    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout == shipped if shipped.endswith("\n") else shipped + "\n"
    Draft7Validator.check_schema(json.loads(done.stdout))


def test_every_example_fsm_loop_passes_the_schema(tmp_path: Path) -> None:
    """Paradigm files (compiled on the fly) are not described by the schema."""
    validator = Draft7Validator(json.loads(run_cli(tmp_path, "schema").stdout))
    checked = []
    for path in sorted((REPO_ROOT / ".loops").glob("*.yaml")):
        data = parse_yaml(path.read_text(encoding="utf-8"), path)
        if is_paradigm_spec(data):
            continue
        assert [error.message for error in validator.iter_errors(data)] == [], path
        checked.append(path.stem)

    assert "tour" in checked
    assert "implementer-demo" in checked
