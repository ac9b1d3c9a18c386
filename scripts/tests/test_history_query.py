"""`ll-loop history` answers questions: readable lines, `--state`, `--event`, `--since`,
`--runs` and `--run N` (little_loops.cli.cmd_history and its helpers)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fixtures.cli_support import FAILING_LOOP, cli_in_process, run_cli, write_loop

from little_loops.cli.history_query import parse_since
from little_loops.fsm.persistence import StatePersistence


@pytest.fixture(autouse=True)
def _in_tmp_utc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TZ", "UTC")  # lines show local time: make it known
    monkeypatch.setenv("NO_COLOR", "1")
    time.tzset()


def _ts(seconds: float) -> str:
    return (datetime(2020, 5, 1, 2, 14, 0, tzinfo=UTC) + timedelta(seconds=seconds)).isoformat()


# A run of two state visits: `fix` (an LLM verdict with a cost), then `test` (an error).
EVENTS: list[dict[str, object]] = [
    {"event": "loop_start", "ts": _ts(0), "loop": "fixer"},
    {"event": "state_enter", "ts": _ts(7), "state": "fix", "iteration": 1},
    {"event": "action_start", "ts": _ts(7), "action": "claude -p fix"},
    {"event": "action_complete", "ts": _ts(40), "exit_code": 0, "cost_usd": 0.10},
    {"event": "evaluate", "ts": _ts(47), "type": "llm", "verdict": "success", "cost_usd": 0.02},
    {"event": "route", "ts": _ts(48), "from": "fix", "to": "test", "verdict": "success"},
    {"event": "state_enter", "ts": _ts(48), "state": "test", "iteration": 2},
    {"event": "action_start", "ts": _ts(48), "action": "pytset"},
    {"event": "action_complete", "ts": _ts(48.2), "exit_code": 127},
    {"event": "evaluate", "ts": _ts(48.2), "verdict": "error", "error": "exit code 127"},
    {"event": "route", "ts": _ts(48.3), "from": "test", "to": "fix", "verdict": "error"},
    {"event": "loop_complete", "ts": _ts(49), "final_state": "fix", "terminated_by": "signal"},
]


def _write_events(name: str = "fixer") -> None:
    persistence = StatePersistence(name, Path(".loops"))
    persistence.initialize()
    for event in EVENTS:
        persistence.append_event(event)


def test_history_prints_one_readable_line_per_state_visit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _write_events()
    assert cli_in_process(capsys, "history", "fixer") == (
        0,
        "2020-05-01 02:14:00 loop_start loop=fixer\n"
        "2020-05-01 02:14:07 fix  ✓ success -> test  (41s, $C)\n"
        "2020-05-01 02:14:48 test  ✗ error - exit code 127 -> fix  (Ns)\n"
        "2020-05-01 02:14:49 loop_complete final_state=fix terminated_by=signal\n",
        "",
    )
    assert cli_in_process(capsys, "history", "fixer", "-n", "1")[1] == (
        "2020-05-01 02:14:49 loop_complete final_state=fix terminated_by=signal\n"
    )


def test_history_state_event_and_since_filters(capsys: pytest.CaptureFixture[str]) -> None:
    _write_events()
    code, out, _ = cli_in_process(capsys, "history", "fixer", "--state", "test")
    assert (code, out) == (0, "2020-05-01 02:14:48 test  ✗ error - exit code 127 -> fix  (Ns)\n")
    # `--event` shows the events folded into the visit lines too, each on its own line.
    code, out, _ = cli_in_process(
        capsys, "history", "fixer", "--state", "fix", "--event", "action_complete"
    )
    assert out == "2020-05-01 02:14:40 fix  action_complete exit_code=0 cost_usd=0.1\n"
    code, out, _ = cli_in_process(capsys, "history", "fixer", "--since", "2020-05-01T02:14:45")
    assert out.splitlines()[0].startswith("2020-05-01 02:14:07 fix  ✓ success")  # its route
    assert len(out.splitlines()) == 3
    code, out, _ = cli_in_process(capsys, "history", "fixer", "--since", "1h")
    assert (code, out) == (0, "No events match\n")
    code, out, _ = cli_in_process(capsys, "history", "fixer", "--event", "route", "--json")
    assert json.loads(out) == [EVENTS[5], EVENTS[10]]


def test_history_bad_since_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli_in_process(capsys, "history", "fixer", "--since", "yesterday")
    assert code == 2
    assert err.splitlines()[-1] == (
        "ll-loop history: error: argument --since: invalid time 'yesterday': use an ISO time "
        "(2026-11-23T02:00), a time today (02:00) or an age (30m, 2h, 1d)"
    )


def test_parse_since_forms() -> None:
    now = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    assert parse_since("2h", now) == now - timedelta(hours=2)
    assert parse_since("30m", now) == now - timedelta(minutes=30)
    assert parse_since("1d", now) == now - timedelta(days=1)
    assert parse_since("02:00", now) == datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
    assert parse_since("04:00", now) == datetime(2026, 11, 22, 4, 0, tzinfo=UTC)  # yesterday
    assert parse_since("2026-11-20T10:00:00+00:00", now) == datetime(2026, 11, 20, 10, tzinfo=UTC)


@pytest.mark.slow
def test_history_lists_archived_runs_and_reads_any_of_them(tmp_path: Path) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    for _ in range(2):
        assert run_cli(tmp_path, "run", "failing", "-n", "1").returncode == 4
    assert run_cli(tmp_path, "run", "failing").returncode == 4
    listing = run_cli(tmp_path, "history", "failing", "--runs")
    lines = listing.stdout.splitlines()
    assert lines[0].split() == ["run", "started", "status", "iterations", "final", "state"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2", "3"]
    assert "1 iteration " in lines[1] and "(latest)" not in lines[1]
    assert lines[3].endswith("3 iterations   fix  (latest)")
    first = run_cli(tmp_path, "history", "failing", "--run", "1", "--event", "route")
    assert [line.split(" ", 1)[1] for line in first.stdout.splitlines()] == [
        "check  ✗ failure -> fix  " + first.stdout.rsplit("  ", 1)[1].rstrip("\n")
    ]
    runs = json.loads(run_cli(tmp_path, "history", "failing", "--runs", "--json").stdout)
    assert [run["iterations"] for run in runs] == [1, 1, 3]
    missing = run_cli(tmp_path, "history", "failing", "--run", "4")
    assert missing.returncode == 1
    assert "No run 4 of failing (runs 1-3; list them: ll-loop history failing --runs)" in (
        missing.stderr
    )


def test_history_says_why_a_visit_ended_in_error_as_the_progress_does(tmp_path: Path) -> None:
    write_loop(
        tmp_path,
        "typo",
        "name: typo\ninitial: test\nmax_iterations: 1\nstates:\n  test:\n"
        "    action: pytset -q\n    on_success: done\n    on_error: done\n"
        "  done:\n    terminal: true\n",
    )
    run = run_cli(tmp_path, "run", "typo")
    assert "✗ error - exit code 127: " in run.stdout
    lines = run_cli(tmp_path, "history", "typo", "--state", "test").stdout.splitlines()
    assert len(lines) == 1
    assert " test  ✗ error - exit code 127: " in lines[0]
    assert "command not found -> done  (" in lines[0]
