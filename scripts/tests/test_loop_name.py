"""A loop's `name:` names its run files, so it must be a plain file name (issue 11, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import normalize, run_cli, write_loop

from little_loops.fsm.loading.loop_name import loop_name_problem

_RULE = (
    "must be a plain file name: not empty, '.' or '..', no '/' or NUL "
    "(run files are .loops/.running/<name>.*)"
)


def _loop(name_yaml: str) -> str:
    return (
        f"name: {name_yaml}\ninitial: a\nstates:\n  a:\n    action: echo hi\n    terminal: true\n"
    )


def _files(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file()}


@pytest.mark.parametrize(
    ("name_yaml", "shown"),
    [
        ('"../../escape"', "'../../escape'"),
        ('"x/y"', "'x/y'"),
        ('"."', "'.'"),
        ('".."', "'..'"),
        ('"a\\0b"', "'a\\x00b'"),
        ("ABSOLUTE", "ABSOLUTE"),
    ],
)
def test_run_refuses_a_name_that_is_not_a_file_name_and_writes_nothing(
    tmp_path: Path, name_yaml: str, shown: str
) -> None:
    """The reference wrote `.loops/.running/<name>.*` wherever the name pointed."""
    work = tmp_path / "work"
    work.mkdir()
    absolute = str(tmp_path / "abs" / "name")
    name_yaml = name_yaml.replace("ABSOLUTE", absolute)
    shown = shown.replace("ABSOLUTE", repr(absolute))
    write_loop(work, "odd", _loop(name_yaml))
    before = _files(tmp_path)

    result = run_cli(work, "run", "odd")

    assert (result.returncode, result.stdout) == (1, "")
    assert normalize(result.stderr) == f"[T] .loops/odd.yaml: name: {_RULE}, got {shown}\n"
    written = _files(tmp_path) - before
    assert not [path for path in written if (work / ".loops" / ".running") not in path.parents]


def test_plain_names_pass() -> None:
    for name in ("tour", "goal-demo", "v1.2_x", ".hidden", "..x"):
        assert loop_name_problem(name) is None
