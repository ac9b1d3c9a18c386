"""`ll-loop validate` in this process (spec/ll-head-dialect.md §1.1 and §2.1; docs
/user-guide.md, validate): a HEAD file's caps and dialect line, the warning of a HEAD
file without a description, and the `States:` line of a loop too large to list whole.
(test_cli_validate.py runs `ll-loop` as a subprocess, where coverage is not kept.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop

from little_loops.cli.cmd_validate import STATES_WIDTH, states_text

HEAD_WITH_PASSES = """\
name: rel
description: Cut it.
max_steps: 9
max_iterations: 2
initial: a
states:
  a: {action: "true", on_yes: done, on_no: done}
  done: {terminal: true}
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_section_1_1_a_head_file_prints_its_caps_and_dialect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "rel", HEAD_WITH_PASSES)

    assert cli_in_process(capsys, "validate", "rel") == (
        0,
        "[T] rel is valid\n"
        "  States: a, done\n"
        "  Initial: a\n"
        "  Max steps: 9\n"
        "  Max iterations: 2\n"
        "  dialect: head\n",
        "",
    )


def test_section_2_1_a_head_file_without_description_is_valid_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = HEAD_WITH_PASSES.replace("description: Cut it.\n", "").replace("max_iterations: 2\n", "")
    write_loop(tmp_path, "rel", text)

    assert cli_in_process(capsys, "validate", "rel") == (
        0,
        "[T] rel is valid\n  States: a, done\n  Initial: a\n  Max steps: 9\n  dialect: head\n",
        "[WARNING] .loops/rel.yaml: description: a loop without a description "
        "(list and show print it)\n",
    )


def test_a_loop_of_many_states_lists_those_that_fit_and_counts_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = [f"step_number_{i:02d}" for i in range(20)]
    lines = ["name: many", "initial: step_number_00", "states:"]
    for name, following in zip(names, [*names[1:], "done"], strict=True):
        lines += [f"  {name}:", '    action: "true"', f"    next: {following}"]
    write_loop(tmp_path, "many", "\n".join([*lines, "  done: {terminal: true}", ""]))

    code, out, _ = cli_in_process(capsys, "validate", "many")

    shown = ", ".join(names[:12])
    assert (code, out.splitlines()[1]) == (0, f"  States: {shown}, ... (21 states)")
    assert len(out.splitlines()[1]) - len("  States: ") <= STATES_WIDTH + len(", ... (21 states)")


def test_states_text_of_a_short_list_is_the_whole_list() -> None:
    assert states_text(["a", "b"]) == "a, b"
    assert states_text(["x" * STATES_WIDTH]) == "x" * STATES_WIDTH
