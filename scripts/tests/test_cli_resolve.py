"""Tests for `little_loops.cli.resolve`: loop argument -> file, loop, or state name."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import SIMPLE_LOOP, write_loop

from little_loops.cli.resolve import (
    candidate_paths,
    load_resolved,
    loop_file_stem,
    loop_name_for,
    resolve_loop_path,
    shadowing_loop_file,
)
from little_loops.fsm.errors import LoopFileError, LoopNotFoundError


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".loops").mkdir()


def _touch(path: str, text: str = SIMPLE_LOOP) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


def test_candidates_in_order() -> None:
    assert [str(path) for path in candidate_paths("x")] == [
        "x",
        ".loops/x.fsm.yaml",
        ".loops/x.yaml",
        ".loops/x.yml",
    ]
    assert [str(path) for path in candidate_paths("x.yaml")][-1] == ".loops/x.yaml"


def test_fsm_yaml_is_preferred_over_yaml_then_yml() -> None:
    _touch(".loops/x.yml")
    assert resolve_loop_path("x") == Path(".loops/x.yml")
    _touch(".loops/x.yaml")
    assert resolve_loop_path("x") == Path(".loops/x.yaml")
    _touch(".loops/x.fsm.yaml")
    assert resolve_loop_path("x") == Path(".loops/x.fsm.yaml")


def test_existing_path_wins_and_name_with_suffix_works() -> None:
    _touch(".loops/fix.yaml")
    _touch("fix")
    assert resolve_loop_path("fix") == Path("fix")
    assert resolve_loop_path("fix.yaml") == Path(".loops/fix.yaml")
    assert resolve_loop_path(".loops/fix.yaml") == Path(".loops/fix.yaml")


def test_directory_is_skipped_when_a_loop_matches_and_refused_otherwise() -> None:
    Path("work").mkdir()
    with pytest.raises(LoopFileError) as raised:
        resolve_loop_path("work")
    assert raised.value.user_lines() == [
        "work: is a directory, not a loop file (give a .yaml file or a name)"
    ]
    _touch(".loops/work.yaml")
    assert resolve_loop_path("work") == Path(".loops/work.yaml")


def test_not_found_says_where_it_looked() -> None:
    with pytest.raises(LoopNotFoundError) as raised:
        resolve_loop_path("nosuch")
    assert raised.value.user_lines() == [
        "Loop not found: nosuch",
        "  looked in: nosuch, .loops/nosuch.fsm.yaml, .loops/nosuch.yaml, .loops/nosuch.yml",
    ]


def test_load_resolved_returns_path_and_loop() -> None:
    write_loop(Path.cwd(), "simple", SIMPLE_LOOP)
    path, fsm = load_resolved("simple")
    assert path == Path(".loops/simple.yaml")
    assert fsm.name == "simple"
    assert list(fsm.states) == ["check", "fix", "done"]


def test_loop_name_for_reads_the_name_field() -> None:
    _touch(".loops/alias.yaml", SIMPLE_LOOP.replace("name: simple", "name: aliased"))
    assert loop_name_for("alias") == "aliased"
    assert loop_name_for(".loops/alias.yaml") == "aliased"
    assert loop_name_for("aliased") == "aliased"  # no such file: the name itself


def test_loop_name_for_compiles_paradigm_files_without_a_name() -> None:
    _touch(".loops/g.yaml", "paradigm: goal\ngoal: Tests pass\ntools: ['true']\n")
    assert loop_name_for("g") == "goal-tests-pass"
    _touch(".loops/bad.yaml", "paradigm: goal\n")
    assert loop_name_for("bad") == "bad"


@pytest.mark.parametrize(
    "text", ["name: [unclosed\n", "- a list\n", "initial: a\n", "name: ''\n", b"\xff\xfe"]
)
def test_loop_name_for_unreadable_file_falls_back_to_the_stem(text: str | bytes) -> None:
    path = Path(".loops/broken.fsm.yaml")
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    assert loop_name_for("broken") == "broken"


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("x.yaml", "x"),
        ("x.yml", "x"),
        ("x.fsm.yaml", "x"),
        ("x.fsm.yml", "x"),
        ("x", "x"),
        (".yaml", ".yaml"),
        ("x.txt", "x.txt"),
    ],
)
def test_loop_file_stem(name: str, stem: str) -> None:
    assert loop_file_stem(Path("dir") / name) == stem


def test_shadowing_loop_file_ignores_the_working_directory() -> None:
    _touch("list")
    assert shadowing_loop_file("list") is None
    _touch(".loops/list.yaml")
    assert shadowing_loop_file("list") == Path(".loops/list.yaml")
