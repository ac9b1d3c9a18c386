"""Tests for `ll-loop validate` (little_loops.cli.cmd_validate), in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import SIMPLE_LOOP, cli_in_process, run_cli, write_loop


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _validate(capsys: pytest.CaptureFixture[str], arg: str) -> tuple[int, str, str]:
    return cli_in_process(capsys, "validate", arg)


def test_valid_loop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    expected = (
        "[T] {arg} is valid\n  States: check, fix, done\n  Initial: check\n  Max iterations: 5\n"
    )
    assert _validate(capsys, "simple") == (0, expected.format(arg="simple"), "")
    path = ".loops/simple.yaml"
    assert _validate(capsys, path) == (0, expected.format(arg=path), "")


def test_name_differing_from_the_file_stem_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "alias", SIMPLE_LOOP.replace("name: simple", "name: aliased"))
    code, _, err = _validate(capsys, "alias")
    assert code == 0
    assert err == (
        "[T] loop name 'aliased' differs from the file name 'alias': "
        "its state and history are kept under 'aliased'\n"
    )


def test_unreachable_state_warning_goes_to_stderr_bare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    island = SIMPLE_LOOP.replace("name: simple", "name: island")
    write_loop(tmp_path, "island", island + "  island:\n    terminal: true\n")
    code, _, err = _validate(capsys, "island")
    assert code == 0
    assert err == "[WARNING] states.island: State is not reachable from initial state\n"


def test_invalid_loop_lists_every_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(
        tmp_path,
        "badref",
        "name: badref\ninitial: start\nstates:\n  start:\n    action: x\n"
        "    on_success: nowhere\n  orphan:\n    action: y\n",
    )
    assert _validate(capsys, "badref") == (
        1,
        "",
        "[T] badref is invalid:\n"
        "  .loops/badref.yaml: states: No terminal state defined. "
        "At least one state must have 'terminal: true'\n"
        "  .loops/badref.yaml: states.start: References unknown state 'nowhere' "
        "(states are: start, orphan)\n"
        "  .loops/badref.yaml: states.orphan: State has no transition defined. "
        "Add routing, 'next', or mark as 'terminal: true'\n",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: [x\n",
            "YAML syntax error at line 2, column 1: expected ',' or ']', but got '<stream end>'",
        ),
        ("- a\n", "top level is a list; a loop file is a mapping (name:, initial:, states:)"),
        ("name: m\n", "FSM file missing required fields: initial, states"),
    ],
)
def test_unusable_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    write_loop(tmp_path, "broken", text)
    assert _validate(capsys, "broken") == (
        1,
        "",
        f"[T] broken is invalid:\n  .loops/broken.yaml: {message}\n",
    )


def test_directory_and_missing_loop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "somedir").mkdir()
    assert _validate(capsys, "somedir") == (
        1,
        "",
        "[T] somedir is invalid:\n"
        "  somedir: is a directory, not a loop file (give a .yaml file or a name)\n",
    )
    assert _validate(capsys, "nosuch") == (
        1,
        "",
        "[T] Loop not found: nosuch\n"
        "  looked in: nosuch, .loops/nosuch.fsm.yaml, .loops/nosuch.yaml, .loops/nosuch.yml\n",
    )


def test_paradigm_file_is_compiled_on_the_fly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "goal", "paradigm: goal\ngoal: Tests pass\ntools: ['true']\n")
    code, out, _ = _validate(capsys, "goal")
    assert code == 0
    assert out.splitlines()[:4] == [
        "[T] goal is valid",
        "  States: evaluate, fix, done",
        "  Initial: evaluate",
        "  Max iterations: 50",
    ]


def test_validate_of_a_thousand_states_prints_no_huge_line(tmp_path: Path) -> None:
    """Issue 23 item 25 (earlier finding 30): the `States:` line of a 1000-state loop was
    5,898 characters long."""
    import yaml

    states: dict[str, Any] = {f"s{i}": {"action": "true", "next": f"s{i + 1}"} for i in range(999)}
    states["s999"] = {"terminal": True}
    write_loop(tmp_path, "big", yaml.safe_dump({"name": "big", "initial": "s0", "states": states}))
    done = run_cli(tmp_path, "validate", "big")
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) < 250
    assert lines[1].startswith("  States: s0, s1, s10, s100, s101")
    assert lines[1].endswith(", ... (1000 states)")
