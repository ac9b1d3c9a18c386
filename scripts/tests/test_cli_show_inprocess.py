"""`ll-loop show` and `ll-loop schema` in this process (docs/user-guide.md; spec
/ll-head-dialect.md §2.5 `show`, §6 `show --json`, §9e the schema), with the latest run of
a loop (run in this process) marked on the outline and the diagrams; and
`python -m little_loops.cli` (what `run --background` starts).

(test_cli_show.py, test_head_list_show.py and test_cli_schema.py drive the same commands
as subprocesses, where coverage is not kept.)
"""

from __future__ import annotations

import json
import runpy
import sys
from importlib import resources
from pathlib import Path

import pytest
import yaml
from fixtures.cli_support import SIMPLE_LOOP, cli_in_process, write_loop

from little_loops.cli import main_loop

# A HEAD loop with only what it must have: no category, labels, passes cap, parameters,
# required inputs or commands; a state with a fragment and a sub-loop state.
BARE_HEAD = """\
name: bare
max_steps: 7
fragments:
  shell_check: {action_type: shell}
initial: probe
states:
  probe:
    fragment: shell_check
    description: |
      Look once.
      Then decide.
    action: "true"
    on_yes: inner
    on_no: failed
  inner:
    loop: child
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""

CHILD = """\
name: child
max_steps: 3
initial: only
states:
  only:
    action: "true"
    on_yes: done
    on_no: done
  done: {terminal: true}
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_section_2_5_show_of_a_bare_head_loop_says_none_where_nothing_is_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "child", CHILD)
    write_loop(tmp_path, "bare", BARE_HEAD)

    code, out, err = cli_in_process(capsys, "show", "bare")

    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:6] == [
        "Loop: bare",
        "Category: (none)",
        "Labels: (none)",
        "Visibility: public",
        "Caps: max_steps 7",
        "Input: context.input (ll-loop run <loop> INPUT)",
    ]
    states = lines[lines.index("States:") + 1 :]
    assert states[:4] == [
        "  probe",
        "    description: Look once. Then decide.",
        "    fragment: shell_check",
        "    action:   true",
    ]
    assert states[states.index("  inner") + 1] == "    sub-loop: child"


def test_section_6_show_json_of_a_head_loop_is_the_file_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "child", CHILD)
    write_loop(tmp_path, "bare", BARE_HEAD)

    code, out, _ = cli_in_process(capsys, "show", "bare", "--json")

    assert (code, json.loads(out)) == (0, yaml.safe_load(BARE_HEAD))


def test_show_marks_the_latest_run_counting_visits_from_its_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A legacy loop's state file keeps no `visits`: they are counted from `state_enter`."""
    # `check` fails until `fix` has made the file it tests: check, fix, check, done.
    fixing = SIMPLE_LOOP.replace('"echo checking; true"', '"test -f ok"')
    write_loop(tmp_path, "simple", fixing.replace("action: echo fixing", "action: touch ok"))
    assert main_loop(["simple", "-q"]) == 0

    code, out, _ = cli_in_process(capsys, "show", "simple")
    view = json.loads(cli_in_process(capsys, "show", "simple", "--json")[1])

    assert code == 0
    assert "  check (entered 2x)\n" in out
    assert "  fix (entered 1x)\n" in out
    assert "  done [terminal]  <- current\n" in out
    assert view["run"]["visits"] == {"check": 2, "fix": 1}  # a terminal is not entered
    assert (view["run"]["status"], view["run"]["current_state"]) == ("completed", "done")


def test_show_diagrams_mark_the_current_state_and_json_wraps_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert main_loop(["simple", "-q"]) == 0

    code, mermaid, _ = cli_in_process(capsys, "show", "simple", "--diagram", "mermaid")
    dot_code, dot_json, _ = cli_in_process(capsys, "show", "simple", "--diagram", "dot", "--json")

    assert (code, dot_code) == (0, 0)
    assert mermaid.startswith("flowchart TD\n")
    assert '    s0(["check<br>1 visit"])\n' in mermaid
    assert "class s2 current" in mermaid
    document = json.loads(dot_json)
    assert document["format"] == "dot"
    assert document["diagram"].startswith("digraph ")
    assert 's0 [label="check\\n1 visit"' in document["diagram"]


def test_show_with_an_unreadable_state_file_warns_and_shows_the_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    running = tmp_path / ".loops" / ".running"
    running.mkdir()
    (running / "simple.state.json").write_text("{not json")

    code, out, err = cli_in_process(capsys, "show", "simple")

    assert code == 0
    assert out.splitlines()[:2] == ["Loop: simple", "Initial state: check"]
    assert "<- current" not in out
    assert err.startswith(
        "[T] Not showing the run: unreadable state file .loops/.running/simple.state.json: "
    )


def test_section_9e_schema_prints_the_shipped_schema(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = resources.files("little_loops.fsm").joinpath("fsm-loop-schema.json").read_text()

    code, out, err = cli_in_process(capsys, "schema")

    assert (code, err) == (0, "")
    assert out == shipped.rstrip("\n") + "\n"
    assert json.loads(out)["$schema"].startswith("http://json-schema.org/")


def test_python_dash_m_little_loops_cli_runs_ll_loop(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m little_loops.cli <command>` is `ll-loop <command>`: it exits with the
    command's exit code."""
    monkeypatch.setattr(sys, "argv", ["little_loops.cli", "report", "nothing"])
    # Once the Temporal client is loaded (by an earlier test in this process), the real
    # process ends with os._exit past it (`app._exit_past_temporal_client`): not here.
    for loaded in ("little_loops.fsm.temporal.marker_check", "little_loops.cli.temporal_engine"):
        monkeypatch.delitem(sys.modules, loaded, raising=False)

    with pytest.raises(SystemExit) as exited:
        runpy.run_module("little_loops.cli", run_name="__main__")

    assert exited.value.code == 1
    assert capsys.readouterr().err == "No runs of 'nothing' kept\n"


GUARDED = """\
name: guarded
paradigm: goal
initial: work
timeout: 60
backoff: 2
stall_threshold: 2
on_stall: gave_up
states:
  work:
    action: "make test"
    evaluate: {type: exit_code}
    max_visits: 3
    on_max_visits: gave_up
    on_success: done
    on_failure: work
  done: {terminal: true}
  gave_up: {terminal: true}
"""

FAN = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "first item\\nsecond item\\nthird item\\nfourth item\\nfifth item"
      loop: child
      max_workers: 2
    on_success: done
    on_partial: done
    on_failure: done
  done: {terminal: true}
"""

RELEASE = """\
name: release
description: Cut a release.
category: ops
labels: [release, weekly]
max_steps: 20
max_iterations: 3
parameters:
  version: {type: string, required: true, description: the version to cut}
  dry: {type: boolean, default: false}
  kind: {type: enum, values: [major, minor]}
input_key: version
required_inputs: [version]
commands:
  - {cmd: "ll-loop run release 1.2", comment: "cut 1.2"}
  - {cmd: "ll-loop run release 2.0"}
initial: build
states:
  build:
    action: "echo ${context.version}"
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_show_names_paradigm_limits_guards_evaluator_and_max_visits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "guarded", GUARDED)

    assert cli_in_process(capsys, "show", "guarded") == (
        0,
        "Loop: guarded\n"
        "Paradigm: goal\n"
        "Initial state: work\n"
        "Limits: max_iterations 50, timeout 60s, backoff 2s, logs_keep 100\n"
        "Guards: stall_threshold 2, on_stall -> gave_up, max_visits work=3\n"
        "Handoff: pause (at most 5 continuations)\n"
        "\n"
        "States:\n"
        "  work\n"
        "    action:   make test\n"
        "    evaluate: exit_code\n"
        "    max_visits: 3\n"
        "    success -> done\n"
        "    failure -> work\n"
        "    on_max_visits -> gave_up\n"
        "  done [terminal]\n"
        "  gave_up [terminal]\n",
        "",
    )


def test_issue25_item8_show_draws_a_fanout_state_with_its_items_and_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "child", CHILD)
    write_loop(tmp_path, "fan", FAN)

    code, out, _ = cli_in_process(capsys, "show", "fan")
    view = json.loads(cli_in_process(capsys, "show", "fan", "--json")[1])

    assert code == 0
    lines = out.splitlines()
    states = lines[lines.index("States:") + 1 :]
    assert states[:6] == [
        "  go",
        "    parallel: child per item of "
        '"first item\\nsecond item\\nthird item\\nfourth item\\nfifth ite...',  # 60 wide
        "      max_workers 2, isolation none",
        "    success -> done",
        "    failure -> done",
        "    partial -> done",
    ]
    assert view["states"][0]["parallel"]["loop"] == "child"


def test_section_2_5_show_of_a_head_loop_lists_parameters_and_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "release", RELEASE)

    code, out, _ = cli_in_process(capsys, "show", "release")

    assert code == 0
    assert out.splitlines()[:15] == [
        "Loop: release",
        "Description: Cut a release.",
        "Category: ops",
        "Labels: release, weekly",
        "Visibility: public",
        "Caps: max_steps 20, max_iterations (passes) 3",
        "Input: context.version (ll-loop run <loop> INPUT); required: version",
        "Parameters:",
        "  version: string, required - the version to cut",
        "  dry: boolean, default false",
        "  kind: enum (major, minor), optional",
        "Commands:",
        "  ll-loop run release 1.2  # cut 1.2",
        "  ll-loop run release 2.0",
        "Initial state: build",
    ]
    assert "Limits: max_steps 20, no timeout, logs_keep 100\n" in out
