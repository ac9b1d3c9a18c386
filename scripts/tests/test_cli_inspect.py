"""Tests for `ll-loop list`, `status` and `history` (little_loops.cli.cmd_inspect)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.cli_support import SIMPLE_LOOP, cli_in_process, dead_pid, save_state, write_loop

from little_loops.cli import main_loop
from little_loops.fsm.persistence import StatePersistence


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# --- list ------------------------------------------------------------------------------


def test_list_without_loops_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_in_process(capsys, "list") == (0, "No .loops/ directory found\n", "")
    assert cli_in_process(capsys, "list", "--json") == (0, "[]\n", "")


def test_list_empty_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "notes.txt").write_text("")
    assert cli_in_process(capsys, "list") == (0, "No loops defined\n", "")
    for name in ("b.yaml", "a.yml", "a.yaml", "goal.fsm.yaml"):
        (tmp_path / ".loops" / name).write_text(SIMPLE_LOOP)
    (tmp_path / ".loops" / "dir.yaml").mkdir()
    assert cli_in_process(capsys, "list") == (0, "Available loops:\n  a\n  b\n  goal.fsm\n", "")
    code, out, _ = cli_in_process(capsys, "list", "--json")
    assert code == 0
    assert json.loads(out) == [
        {"loop": "a", "path": ".loops/a.yaml"},
        {"loop": "b", "path": ".loops/b.yaml"},
        {"loop": "goal.fsm", "path": ".loops/goal.fsm.yaml"},
    ]


def test_list_running_shows_unfinished_runs_sorted(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_in_process(capsys, "list", "--running") == (0, "No running loops\n", "")
    dead = dead_pid()
    save_state("zeta", "running", pid=os.getpid())
    save_state("alpha", "running", pid=dead)
    save_state("mid", "awaiting_continuation")
    save_state("done", "completed")
    save_state("old", "interrupted")
    Path(".loops/.running/broken.state.json").write_text("[]")
    assert cli_in_process(capsys, "list", "--running") == (
        0,
        "Unfinished runs:\n"
        f"  alpha: work (iteration 2) - interrupted (process {dead} gone)\n"
        "  mid: work (iteration 2) - awaiting_continuation\n"
        "  old: work (iteration 2) - interrupted\n"
        "  zeta: work (iteration 2) - running (pid N)\n",
        "[T] Skipping unreadable state file .loops/.running/broken.state.json: "
        "expected a JSON object, got an array\n",
    )
    code, out, _ = cli_in_process(capsys, "list", "--running", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(row["loop_name"], row["process_alive"]) for row in rows] == [
        ("alpha", False),
        ("mid", None),
        ("old", None),
        ("zeta", True),
    ]


# --- status ----------------------------------------------------------------------------


def test_status_of_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    main_loop(["simple", "-q"])
    state = StatePersistence("simple").load_state()
    assert state is not None
    assert cli_in_process(capsys, "status", "simple") == (
        0,
        "Loop: simple\n"
        "Status: completed\n"
        "Current state: done\n"
        "Iteration: 1\n"
        f"Started: {state.started_at}\n"
        f"Updated: {state.updated_at}\n"
        "Last verdict: success\n"
        "Elapsed: Ns\n",  # issue 23 item 15
        "",
    )
    code, out, _ = cli_in_process(capsys, "status", ".loops/simple.yaml", "--json")
    data = json.loads(out)
    assert (code, data["status"], data["process_alive"], data["pid"]) == (
        0,
        "completed",
        None,
        os.getpid(),
    )


def test_status_shows_dead_runner_error_and_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    dead = dead_pid()
    save_state("crashed", "running", pid=dead)
    code, out, _ = cli_in_process(capsys, "status", "crashed")
    assert code == 0
    assert (
        out.splitlines()[1] == f"Status: interrupted (process {dead} gone; ll-loop resume crashed)"
    )
    save_state("broke", "failed", error="No valid transition", last_result={"verdict": "error"})
    assert cli_in_process(capsys, "status", "broke")[1].splitlines()[-3:-1] == [
        "Last verdict: error",
        "Error: No valid transition",
    ]
    save_state("paused", "awaiting_continuation", continuation_prompt="p" * 250)
    assert cli_in_process(capsys, "status", "paused")[1].splitlines()[-1] == (
        f"Continuation context: {'p' * 200}..."
    )
    save_state("short", "awaiting_continuation", continuation_prompt="go on")
    assert (
        cli_in_process(capsys, "status", "short")[1].splitlines()[-1]
        == "Continuation context: go on"
    )


def test_status_finds_state_by_file_stem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "alias", SIMPLE_LOOP.replace("name: simple", "name: aliased"))
    save_state("aliased", "interrupted")
    assert cli_in_process(capsys, "status", "alias")[1].splitlines()[:2] == [
        "Loop: aliased",
        "Status: interrupted",
    ]


def test_status_without_state_or_with_a_damaged_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_in_process(capsys, "status", "nosuch") == (1, "", "[T] No state found for: nosuch\n")
    Path(".loops/.running").mkdir(parents=True)
    Path(".loops/.running/bad.state.json").write_text("")
    assert cli_in_process(capsys, "status", "bad") == (
        1,
        "",
        "[T] .loops/.running/bad.state.json: damaged state file: the file is empty\n"
        "  to start over, delete it or run the loop again (ll-loop run <loop>)\n",
    )


# --- history ---------------------------------------------------------------------------


def _events(name: str, events: list[dict[str, object]]) -> None:
    persistence = StatePersistence(name, Path(".loops"))
    persistence.initialize()
    for event in events:
        persistence.append_event(event)


EVENTS: list[dict[str, object]] = [
    {"event": "loop_start", "ts": "2026-11-21T23:18:41.698401+00:00", "loop": "routes"},
    {"event": "action_start", "ts": "2026-11-21T23:18:41.700000+00:00", "action": "echo x"},
    {
        "event": "action_complete",
        "ts": "2026-11-21T23:18:41.710000+00:00",
        "exit_code": 0,
        "duration_ms": 8,
    },
    {"event": "route", "ts": "2026-11-21T23:18:41.720000+00:00", "from": "reduce", "to": "m"},
]


def test_history_raw_keeps_the_reference_format_with_zone_and_tail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--raw`: the reference's `history` lines (`<ts> <event>: {dict}`), with the zone."""
    _events("routes", EVENTS)
    assert cli_in_process(capsys, "history", "routes", "--raw") == (
        0,
        "2026-11-21T23:18:41+00:00 loop_start: {'loop': 'routes'}\n"
        "2026-11-21T23:18:41+00:00 action_start: {'action': 'echo x'}\n"
        "2026-11-21T23:18:41+00:00 action_complete: {'exit_code': 0, 'duration_ms': 8}\n"
        "2026-11-21T23:18:41+00:00 route: {'from': 'reduce', 'to': 'm'}\n",
        "",
    )
    assert cli_in_process(capsys, "history", "routes", "--raw", "-n", "1") == (
        0,
        "2026-11-21T23:18:41+00:00 route: {'from': 'reduce', 'to': 'm'}\n",
        "",
    )


def test_history_json_prints_one_array_and_jsonl_one_event_a_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _events("routes", EVENTS)
    code, out, _ = cli_in_process(capsys, "history", "routes", "--json", "-n", "2")
    assert code == 0
    assert json.loads(out) == EVENTS[2:]
    code, out, _ = cli_in_process(capsys, "history", "routes", "--jsonl", "-n", "2")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == EVENTS[2:]


def test_history_without_events_exits_1_like_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reference printed `No history for: <name>` and exited 0, known loop or not;
    like `status` of a loop that never ran, it is exit 1 now (issue 23 item 14), with the
    reference's words."""
    assert cli_in_process(capsys, "history", "nosuch") == (1, "No history for: nosuch\n", "")
    assert cli_in_process(capsys, "history", "nosuch", "--json") == (1, "[]\n", "")
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert cli_in_process(capsys, "history", "simple") == (1, "No history for: simple\n", "")
    assert cli_in_process(capsys, "history", "simple", "-n", "0") == (
        1,
        "No history for: simple\n",
        "",
    )
    save_state("ghost", "interrupted")
    assert cli_in_process(capsys, "history", "ghost") == (1, "No history for: ghost\n", "")
    Path(".loops/.running/ghost.events.jsonl").write_text("\n")
    assert cli_in_process(capsys, "history", "ghost") == (1, "No history for: ghost\n", "")


def test_history_line_without_timestamp() -> None:
    from little_loops.cli.cmd_inspect import history_line

    assert history_line({"event": "x"}) == " x: {}"
    assert history_line({"a": 1}) == " ?: {'a': 1}"
