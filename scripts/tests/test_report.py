"""`ll-loop report` (issue 26 item 3; docs/report.md): per run and per state figures, and
the cost of a completed run and of each state's `yes` across runs.

Real `ll-loop` processes in `tmp_path`: 100 generated archived runs (whose figures the
test computes on its own), and real runs with the scripted stream-json `claude`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from fixtures import scripted_claude
from fixtures.cli_support import cli_env, run_cli, write_loop

RUNS = 100


def _event(name: str, second: int, **keys: Any) -> dict[str, Any]:
    return {"event": name, "ts": f"2026-11-{1 + second // 86400:02d}T00:00:00+00:00", **keys}


def _generated_run(i: int) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Run `i`: its events, its state file and the figures the report must give."""
    cost, visits = 0.01 * (i % 5 + 1), 1 + i % 3
    day = i * 3600  # runs an hour apart
    events = [_event("loop_start", day, loop="gen")]
    for visit in range(visits):
        events.append(_event("state_enter", day, state="a", iteration=visit + 1))
        tokens = {"input": 10, "output": 5, "cache_read": 7, "cache_creation": 0}
        events.append(_event("action_complete", day, exit_code=0, cost_usd=cost, tokens=tokens))
        verdict = "yes" if visit == visits - 1 else "no"
        events.append(_event("evaluate", day, type="exit_code", verdict=verdict))
    events.append(_event("state_enter", day, state="b", iteration=visits + 1))
    # b runs a sub-loop: the child's action counts for b, the child's state is not b's visit
    events.append(_event("state_enter", day, state="inner", iteration=1, depth=1))
    limited = i % 10 == 0
    if limited:  # one run hits a limit, waits, and runs its action again
        events.append(_event("action_complete", day, exit_code=1, limit="rate_limit", depth=1))
        events.append(_event("limit_wait", day, state="inner", depth=1))
    child_tokens = {"input": 1, "output": 1}
    events.append(_event("action_complete", day, cost_usd=0.002, tokens=child_tokens, depth=1))
    events.append(_event("evaluate", day, type="exit_code", verdict="success", depth=1))
    events.append(_event("evaluate", day, type="sub_loop", verdict="success"))
    status = "failed" if i % 4 == 0 else "completed"
    events.append(_event("loop_complete", day, terminated_by=status))
    run_cost = cost * visits + 0.002 + 0.001  # + an LLM judgement the events do not carry
    spending = {
        "cost_usd": run_cost,
        "tokens": {"input": 10 * visits + 1, "output": 5 * visits + 1},
    }
    state = {
        "loop_name": "gen",
        "current_state": "done",
        "iteration": visits + 1,
        "started_at": events[0]["ts"],
        "status": status,
        "elapsed_ms": 1000 + i,
        "spending": spending,
    }
    expected = {
        "status": status,
        "duration_ms": 1000 + i,
        "actions": visits + 1 + (1 if limited else 0),
        "retries": 1 if limited else 0,
        "limit_waits": 1 if limited else 0,
        "cost_usd": round(run_cost, 6),
        "tokens": 15 * visits + 2,
        "states": {
            "a": {
                "visits": visits,
                "cost_usd": round(cost * visits, 6),
                "tokens": 15 * visits,
                "verdicts": {"no": visits - 1, "yes": 1} if visits > 1 else {"yes": 1},
            },
            "b": {"visits": 1, "cost_usd": 0.002, "tokens": 2, "verdicts": {"success": 1}},
        },
    }
    return events, state, expected


def _write_runs(root: Path) -> list[dict[str, Any]]:
    """100 archived runs of `gen`; the figures expected of each."""
    history = root / ".loops/.history/gen"
    expected = []
    for i in range(RUNS):
        events, state, figures = _generated_run(i)
        folder = history / f"20261101T{i:04d}"
        folder.mkdir(parents=True)
        lines = "".join(json.dumps(event) + "\n" for event in events)
        (folder / "gen.events.jsonl").write_text(lines)
        (folder / "gen.state.json").write_text(json.dumps(state))
        expected.append(figures)
    return expected


def _report(root: Path, *args: str) -> dict[str, Any]:
    done = run_cli(root, "report", *args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_report_json_sums_cost_and_tokens_per_state_and_per_run_over_100_runs(
    tmp_path: Path,
) -> None:
    expected = _write_runs(tmp_path)

    document = _report(tmp_path, "gen")

    runs = document["runs"]
    assert [run["run"] for run in runs] == list(range(1, RUNS + 1))
    for run, figures in zip(runs, expected, strict=True):
        got = {key: run[key] for key in figures}
        assert got == figures, run["run"]
    totals = document["loops"]["gen"]
    all_cost = sum(figures["cost_usd"] for figures in expected)
    completed = sum(figures["status"] == "completed" for figures in expected)
    yes_a = RUNS  # one `yes` of `a` a run
    assert totals["runs"] == RUNS
    assert totals["completed"] == completed == 75
    assert totals["cost_usd"] == round(all_cost, 6)
    assert totals["tokens"] == sum(figures["tokens"] for figures in expected)
    assert totals["cost_per_completed_run"] == round(all_cost / completed, 6)
    a = totals["states"]["a"]
    assert a["visits"] == sum(figures["states"]["a"]["visits"] for figures in expected)
    expected_a_cost = sum(figures["states"]["a"]["cost_usd"] for figures in expected)
    assert a["cost_usd"] == round(expected_a_cost, 6)
    assert (a["yes"], a["cost_per_yes"]) == (yes_a, round(all_cost / yes_a, 6))
    b = totals["states"]["b"]
    assert (b["visits"], b["tokens"], b["yes"]) == (RUNS, 2 * RUNS, RUNS)  # `success` is yes


def test_report_since_keeps_the_runs_started_then_or_later(tmp_path: Path) -> None:
    _write_runs(tmp_path)  # run i starts on day 1 + i // 24

    document = _report(tmp_path, "gen", "--since", "2026-11-05T00:00:00+00:00")

    assert [run["run"] for run in document["runs"]] == list(range(97, RUNS + 1))
    assert document["since"] == "2026-11-05T00:00:00+00:00"
    assert document["loops"]["gen"]["runs"] == 4


def test_a_run_without_a_state_file_is_read_from_the_ends_of_its_events(tmp_path: Path) -> None:
    _write_runs(tmp_path)
    (tmp_path / ".loops/.history/gen/20261101T0001/gen.state.json").unlink()

    run = _report(tmp_path, "gen")["runs"][1]

    assert (run["status"], run["started_at"], run["duration_ms"]) == (
        "completed",
        "2026-11-01T00:00:00+00:00",
        0,
    )
    assert run["states"]["a"]["visits"] == 2
    assert run["cost_usd"] == 0.0  # the events' loop_complete carried no spending


# --- real runs --------------------------------------------------------------------------------

LOOP = """\
name: work
initial: fix
states:
  fix:
    action: /ll:fix
    evaluate:
      type: output_contains
      pattern: fixed
    on_success: check
    on_failure: fix
  check:
    action: "true"
    next: done
  done:
    terminal: true
"""


def _two_real_runs(root: Path) -> None:
    write_loop(root, "work", LOOP)
    env = cli_env(root)
    steps = [{"cost": 0.25, "text": "not yet"}, {"cost": 0.5, "text": "fixed"}]
    env["LL_CLAUDE_BIN"] = str(scripted_claude.install(root / "fake", steps))
    assert run_cli(root, "run", "work", env=env).returncode == 0
    assert run_cli(root, "run", "work", env=env).returncode == 0  # archives the first


def test_report_of_real_runs_sums_what_the_scripted_claude_spent(tmp_path: Path) -> None:
    """Run 1: fix ($0.25, no), fix ($0.50, yes); run 2: fix ($0.50, yes), 120 tokens a call."""
    _two_real_runs(tmp_path)

    document = _report(tmp_path, "work")

    first, second = document["runs"]
    assert (first["latest"], second["latest"]) == (False, True)
    assert first["states"]["fix"] == {
        "visits": 2,
        "cost_usd": 0.75,
        "tokens": 240,
        "verdicts": {"failure": 1, "success": 1},  # a legacy loop: `success` is its yes
    }
    assert (first["cost_usd"], first["tokens"], first["actions"]) == (0.75, 240, 3)
    assert (second["cost_usd"], second["tokens"]) == (0.5, 120)
    totals = document["loops"]["work"]
    assert (totals["completed"], totals["cost_per_completed_run"]) == (2, 0.625)
    assert (totals["states"]["fix"]["yes"], totals["states"]["fix"]["cost_per_yes"]) == (2, 0.625)


def test_report_table_shows_each_run_its_states_and_the_totals(tmp_path: Path) -> None:
    _two_real_runs(tmp_path)

    done = run_cli(tmp_path, "report", "work", env=cli_env(tmp_path))

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("work run 1: completed, started ")
    assert lines[0].endswith(", 3 actions, 0 retries, 0 limit waits, $0.7500, 240 tokens")
    assert lines[1:4] == [
        "  state  visits       cost         tokens  verdicts",
        "  fix         2    $0.7500     240 tokens  failure 1, success 1",
        "  check       1    $0.0000       0 tokens  -",
    ]
    totals = lines.index(
        "work totals: 2 runs, 2 completed, $1.25, 360 tokens; $0.6250 per completed run"
    )
    assert lines[totals + 1 : totals + 4] == [
        "  state  visits       cost         tokens    per yes  verdicts",
        "  fix         3      $1.25     360 tokens    $0.6250  failure 1, success 2",
        "  check       2    $0.0000       0 tokens          -  -",
    ]


def test_report_without_runs_says_so_in_one_line(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "report", "nothing")

    assert (done.returncode, done.stdout, done.stderr) == (1, "", "No runs of 'nothing' kept\n")


def test_a_sub_loops_and_a_fan_outs_verdicts_are_their_states_verdicts(tmp_path: Path) -> None:
    """Neither writes a top-level `evaluate`: the verdict is the one their `route` names
    (the child's, the fan-out's), so "cost per yes" works for a verifying child loop."""
    loops = Path(__file__).resolve().parents[2] / ".loops"
    shutil.copytree(loops, tmp_path / ".loops", ignore=shutil.ignore_patterns(".*"))
    _commit_all(tmp_path)  # the fan-out's items run in git worktrees of HEAD
    for name in ("parallel-demo", "subloop-demo"):
        assert run_cli(tmp_path, "run", name).returncode == 0

    fan = _report(tmp_path, "parallel-demo")["loops"]["parallel-demo"]["states"]["fan"]
    count = _report(tmp_path, "subloop-demo")["loops"]["subloop-demo"]["states"]["count"]

    assert (fan["verdicts"], fan["yes"]) == ({"yes": 1}, 1)
    assert (count["verdicts"], count["yes"]) == ({"yes": 1}, 1)


def _commit_all(root: Path) -> None:
    (root / ".gitignore").write_text(".loops/.running/\n.loops/.worktrees/\n")
    who = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
    for args in (["init", "-q"], ["add", "."], [*who, "commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, timeout=30)


def test_report_on_temporal_names_its_loop(tmp_path: Path) -> None:
    """The latest run of a loop's workflow: `--engine temporal` needs the loop's name."""
    done = run_cli(tmp_path, "report", "--engine", "temporal")

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip().endswith("--engine temporal: name the loop to report")
