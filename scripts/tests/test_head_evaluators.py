"""HEAD files' evaluators (spec/ll-head-dialect.md §3.1, §3.2, §2.3, §2.2, §9h), run by
`FSMExecutor` with real shell actions: verdict names per dialect, the short-circuits,
classify, key, error_patterns, harbor_scorer, mcp_result, the stall evaluators (memory in
the run's record), the unsupported judges, `contract` and `type: learning` states.

Routes use route tables keyed by the verdict, so each test reads the verdict both in the
`evaluate` event and in the state the run reached."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.engine.core import RunCore
from little_loops.fsm.engine.requests import EvaluateWithIO, Finish, RunAction
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.evaluators import evaluate
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.model.head_loop import HeadEvaluateConfig, HeadLoop
from little_loops.fsm.process.clock import SYSTEM_CLOCK
from little_loops.fsm.process.runner import ActionResult
from little_loops.fsm.schema import EvaluateConfig, FSMLoop
from little_loops.fsm.store.persistent_executor import PersistentExecutor

DONE = {"terminal": True}
# How a HEAD run stopped by its step cap ends: `max_steps` once HEAD's caps are in the
# run core (§7.3), `max_iterations` before.
STEP_CAP_ENDINGS = ("max_iterations", "max_steps")


class Recorder:
    """Event callback that keeps every event (without its time stamp)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append({k: v for k, v in event.items() if k != "ts"})

    def of(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]

    def verdicts(self) -> list[str]:
        return [event["verdict"] for event in self.of("evaluate")]


def run(
    states: dict[str, Any], *, head: bool = True, **top: Any
) -> tuple[ExecutionResult, Recorder, FSMExecutor]:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    loop = HeadLoop.from_dict(data) if head else FSMLoop.from_dict(data)
    recorder = Recorder()
    executor = FSMExecutor(loop, event_callback=recorder)
    return executor.run(), recorder, executor


def judged(action: str, evaluate: dict[str, Any] | None, routes: dict[str, str]) -> dict[str, Any]:
    """One state judging `action`, routed by verdict to terminal states named in `routes`."""
    state: dict[str, Any] = {"action": action, "route": routes}
    if evaluate is not None:
        state["evaluate"] = evaluate
    terminals = {target: DONE for target in set(routes.values())}
    return {"check": state, **terminals}


YES_NO = {"yes": "passed", "no": "failed_check", "error": "broken", "_": "other"}
SUCCESS_FAILURE = {"success": "passed", "failure": "failed_check", "error": "broken"}


# -- §3.1 names -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "verdict", "final"),
    [("exit 0", "yes", "passed"), ("exit 1", "no", "failed_check"), ("exit 3", "error", "broken")],
)
def test_s3_1_exit_code_says_yes_no_in_a_head_file(action: str, verdict: str, final: str) -> None:
    result, events, _ = run(judged(action, {"type": "exit_code"}, YES_NO))
    assert events.of("evaluate") == [
        {"event": "evaluate", "type": "exit_code", "verdict": verdict, "exit_code": int(action[5:])}
    ]
    assert result.final_state == final


def test_s3_1_a_legacy_file_keeps_success_and_failure() -> None:
    _, events, _ = run(judged("exit 0", None, SUCCESS_FAILURE), head=False)
    assert events.verdicts() == ["success"]
    _, events, _ = run(judged("exit 1", {"type": "exit_code"}, SUCCESS_FAILURE), head=False)
    assert events.verdicts() == ["failure"]


def test_s3_1_default_shell_evaluation_and_result_verdict_say_yes() -> None:
    states = {
        "check": {"action": "true", "route": {"yes": "show"}},
        "show": {"action": "echo ${result.verdict} > /dev/null", "route": {"yes": "done"}},
        "done": DONE,
    }
    result, events, executor = run(states)
    assert events.of("evaluate")[0] == {
        "event": "evaluate",
        "type": "default",
        "verdict": "yes",
        "exit_code": 0,
    }
    assert executor.cursor.last_result == {"verdict": "yes", "details": {"exit_code": 0}}
    assert result.final_state == "done"


@pytest.mark.parametrize(
    ("evaluate", "action", "verdict"),
    [
        ({"type": "output_numeric", "operator": "gt", "target": 3}, "echo 5", "yes"),
        ({"type": "output_numeric", "operator": "gt", "target": 9}, "echo 5", "no"),
        ({"type": "output_json", "path": ".ok", "target": True}, """echo '{"ok": true}'""", "yes"),
        ({"type": "output_contains", "pattern": "PASS"}, "echo all PASS", "yes"),
        ({"type": "output_contains", "pattern": "PASS", "negate": True}, "echo PASS", "no"),
    ],
)
def test_s3_1_output_evaluators_say_yes_no(
    evaluate: dict[str, Any], action: str, verdict: str
) -> None:
    _, events, _ = run(judged(action, evaluate, YES_NO))
    assert events.verdicts() == [verdict]


def test_s3_2_a_state_with_nothing_to_judge_is_yes_without_an_evaluate_event() -> None:
    result, events, _ = run({"decide": {"route": {"yes": "done"}}, "done": DONE})
    assert events.of("evaluate") == []
    assert result.final_state == "done"


# -- §3.2 short-circuits --------------------------------------------------------------


@pytest.mark.parametrize(
    "evaluate",
    [
        {"type": "output_numeric", "operator": "gt", "target": 3},
        {"type": "output_json", "path": ".a", "target": 1},
        {"type": "output_contains", "pattern": "5"},
        {"type": "convergence", "target": 0},
        {"type": "classify"},
        {"type": "exit_code"},
        {"type": "harbor_scorer"},
    ],
)
def test_s3_2_exit_124_is_an_action_timeout_before_any_evaluator(evaluate: dict[str, Any]) -> None:
    result, events, _ = run(judged("echo 5; exit 124", evaluate, YES_NO))
    assert events.of("evaluate") == [
        {
            "event": "evaluate",
            "type": evaluate["type"],
            "verdict": "error",
            "error": "action timed out",
            "exit_code": 124,
        }
    ]
    assert result.final_state == "broken"


@pytest.mark.parametrize(
    "evaluate",
    [
        {"type": "output_numeric", "operator": "gt", "target": 3},
        {"type": "output_json", "path": ".a", "target": 1},
        {"type": "output_contains", "pattern": "5"},
        {"type": "convergence", "target": 0},
        {"type": "classify"},
        {"type": "comparator", "baseline_path": "b"},
    ],
)
def test_s3_2_a_failed_command_is_error_before_evaluators_reading_its_output(
    evaluate: dict[str, Any],
) -> None:
    _, events, _ = run(judged("echo 5; exit 2", evaluate, YES_NO))
    assert events.of("evaluate")[0]["error"] == "action exited with code 2"
    assert events.verdicts() == ["error"]


def test_s3_2_other_evaluators_still_see_a_failed_command() -> None:
    _, events, _ = run(judged("echo 0.5; exit 1", {"type": "harbor_scorer"}, YES_NO))
    assert events.verdicts() == ["no"]


def test_s3_2_a_legacy_file_has_no_short_circuit() -> None:
    evaluate = {"type": "output_numeric", "operator": "gt", "target": 3}
    _, events, _ = run(judged("echo 5; exit 2", evaluate, SUCCESS_FAILURE), head=False)
    assert events.verdicts() == ["success"]


# -- classify, key, error_patterns, source ----------------------------------------------


@pytest.mark.parametrize(
    ("line", "verdict"),
    [(None, "ship it"), ("first", "ANALYSE"), (1, "RETRY"), (-2, "RETRY"), (7, "")],
)
def test_s3_2_classify_takes_the_trimmed_chosen_non_empty_line(
    line: str | int | None, verdict: str
) -> None:
    evaluate: dict[str, Any] = {"type": "classify"}
    if line is not None:
        evaluate["line"] = line
    routes = {"ship it": "a", "ANALYSE": "b", "RETRY": "c", "_": "fallback"}
    result, events, _ = run(
        judged("printf '\\n ANALYSE\\nRETRY\\n\\n  ship it \\n\\n'", evaluate, routes)
    )
    assert events.of("evaluate")[0]["verdict"] == verdict
    assert events.of("evaluate")[0]["token"] == verdict
    assert result.final_state == {"ship it": "a", "ANALYSE": "b", "RETRY": "c"}.get(
        verdict, "fallback"
    )


def test_s3_2_classify_of_an_empty_output_reaches_the_catch_all() -> None:
    result, events, _ = run(judged("true", {"type": "classify"}, {"x": "a", "_": "fallback"}))
    assert events.verdicts() == [""]
    assert result.final_state == "fallback"


def test_s2_3_output_numeric_key_reads_the_last_key_value() -> None:
    evaluate = {"type": "output_numeric", "key": "score", "operator": "ge", "target": 7}
    action = "echo 'score = 3'; echo 'best_score = 1'; echo 'score=7.5 (final)'"
    _, events, _ = run(judged(action, evaluate, YES_NO))
    assert events.of("evaluate") == [
        {
            "event": "evaluate",
            "type": "output_numeric",
            "verdict": "yes",
            "value": 7.5,
            "target": 7.0,
            "operator": "ge",
        }
    ]


def test_s2_3_output_numeric_key_missing_is_an_error() -> None:
    evaluate = {"type": "output_numeric", "key": "score", "operator": "ge", "target": 7}
    _, events, _ = run(judged("echo 'points = 9'", evaluate, YES_NO))
    assert events.of("evaluate")[0]["error"] == "No 'score = <number>' in output"
    assert events.verdicts() == ["error"]


@pytest.mark.parametrize(
    ("output", "negate", "verdict"),
    [
        ("build FAILED: Traceback", False, "error"),
        ("build ok", False, "no"),
        ("all PASS, Traceback in a test name", False, "yes"),
        ("build FAILED: Traceback", True, "yes"),
    ],
)
def test_s2_3_output_contains_error_patterns(output: str, negate: bool, verdict: str) -> None:
    evaluate = {
        "type": "output_contains",
        "pattern": "PASS",
        "negate": negate,
        "error_patterns": ["Segfault", "Traceback"],
    }
    _, events, _ = run(judged(f"echo '{output}'", evaluate, YES_NO))
    assert events.verdicts() == [verdict]
    if verdict == "error":
        assert events.of("evaluate")[0]["error"] == "error pattern found: Traceback"


def test_s2_3_an_unresolvable_source_judges_the_action_output_in_a_head_file() -> None:
    evaluate = {"type": "output_contains", "pattern": "ready", "source": "${captured.nope.output}"}
    _, events, _ = run(judged("echo ready", evaluate, YES_NO))
    assert events.verdicts() == ["yes"]
    _, events, _ = run(judged("echo ready", evaluate, SUCCESS_FAILURE), head=False)
    assert events.verdicts() == ["error"]


# -- harbor_scorer, mcp_result, unsupported ---------------------------------------------


@pytest.mark.parametrize(
    ("action", "verdict", "details"),
    [
        ("echo 0.75", "yes", {"score": 0.75}),
        ("echo 0.75; exit 1", "no", {"exit_code": 1}),
        ("echo n/a", "error", {"error": "Cannot parse score as number: n/a"}),
    ],
)
def test_s3_2_harbor_scorer(action: str, verdict: str, details: dict[str, Any]) -> None:
    _, events, _ = run(judged(action, {"type": "harbor_scorer"}, YES_NO))
    assert events.of("evaluate") == [
        {"event": "evaluate", "type": "harbor_scorer", "verdict": verdict, **details}
    ]


@pytest.mark.parametrize("kind", ["comparator", "contract"])
def test_s2_3_comparator_and_contract_evaluators_are_not_supported(kind: str) -> None:
    result, events, _ = run(judged("echo hi", {"type": kind}, YES_NO))
    assert events.of("evaluate") == [
        {
            "event": "evaluate",
            "type": kind,
            "verdict": "error",
            "error": f"{kind} evaluator not supported",
        }
    ]
    assert result.final_state == "broken"


def test_s2_2_a_contract_state_runs_nothing_and_is_an_error(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    states = {
        "agree": {
            "action_type": "contract",
            "action": f"touch {marker}",
            "evaluate": {"type": "contract", "pairs": [["a.py", "b.py"]]},
            "route": {"error": "broken", "_": "other"},
        },
        "broken": DONE,
        "other": DONE,
    }
    result, events, _ = run(states)
    assert not marker.exists()
    assert events.of("action_start") == []
    assert events.of("evaluate")[0]["error"] == "contract evaluator not supported"
    assert result.final_state == "broken"


@pytest.mark.parametrize(
    ("routes", "verdict", "final"),
    [
        ({"on_blocked": "stuck", "on_no": "not_proven"}, "blocked", "stuck"),
        ({"on_no": "not_proven"}, "no", "not_proven"),
    ],
)
def test_s2_2_a_learning_state_runs_nothing_and_routes_blocked_else_no(
    tmp_path: Path, routes: dict[str, str], verdict: str, final: str
) -> None:
    marker = tmp_path / "ran"
    states = {
        "prove": {
            "type": "learning",
            "learning": {"targets": ["requests.get"]},
            "action": f"touch {marker}",
            "route": {key[3:]: target for key, target in routes.items()},
        },
        "stuck": DONE,
        "not_proven": DONE,
    }
    result, events, _ = run(states)
    assert not marker.exists()
    assert events.verdicts() == [verdict]
    assert result.final_state == final


# -- mcp_tool and mcp_result --------------------------------------------------------------


@pytest.fixture
def mcp_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `mcp-call` on PATH that records its arguments and answers what `answer` holds."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "mcp-call"
    script.write_text(
        "#!/bin/bash\n"
        f'printf "%s\\n" "$@" > {tmp_path}/args\n'
        f"cat {tmp_path}/answer\n"
        f"exit $(cat {tmp_path}/exit_code 2>/dev/null || echo 0)\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return tmp_path


def mcp_states(**extra: Any) -> dict[str, Any]:
    state = {
        "action_type": "mcp_tool",
        "action": "github/create_issue",
        "params": {"title": "Fix ${context.topic}", "labels": ["bug"]},
        "route": {
            "success": "ok",
            "tool_error": "tool_failed",
            "not_found": "missing",
            "timeout": "slow",
        },
        **extra,
    }
    terminals = {name: DONE for name in ("ok", "tool_failed", "missing", "slow")}
    return {"call": state, **terminals}


@pytest.mark.parametrize(
    ("answer", "exit_code", "final"),
    [
        ('{"content": [{"type": "text", "text": "#12"}]}', 0, "ok"),
        ('{"isError": true, "content": []}', 0, "tool_failed"),
        ("not json", 0, "tool_failed"),
        ('{"content": []}', 1, "tool_failed"),
        ("", 124, "slow"),
    ],
)
def test_s2_2_mcp_tool_runs_mcp_call_and_is_judged_by_mcp_result(
    mcp_call: Path, answer: str, exit_code: int, final: str
) -> None:
    (mcp_call / "answer").write_text(answer)
    (mcp_call / "exit_code").write_text(str(exit_code))
    result, events, _ = run(mcp_states(), context={"topic": "login"})
    assert (mcp_call / "args").read_text().splitlines() == [
        "github/create_issue",
        json.dumps({"title": "Fix login", "labels": ["bug"]}),
    ]
    assert events.of("evaluate")[0]["type"] == "default"
    assert result.final_state == final


def test_s2_2_mcp_tool_without_mcp_call_on_path_is_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    result, events, _ = run(mcp_states(), context={"topic": "login"})
    assert events.of("evaluate")[0] == {
        "event": "evaluate",
        "type": "default",
        "verdict": "not_found",
        "exit_code": 127,
    }
    assert result.final_state == "missing"


# -- stall evaluators (§3.2, §9h) ---------------------------------------------------------


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree with one committed file, as the working directory."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "notes.txt").write_text("start\n")
    (repo / "other.txt").write_text("start\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    monkeypatch.chdir(repo)
    return repo


def counted(action_for_run: dict[int, str], counter: Path) -> str:
    """A shell action that does `action_for_run[n]` on its n-th run (nothing otherwise)."""
    cases = " ".join(f"{n}) {action};;" for n, action in action_for_run.items())
    bump = f"n=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 )); echo $n > {counter}"
    return f"{bump}; case $n in {cases} esac"


def test_s3_2_diff_stall_snapshots_then_counts_unchanged_diffs(repo: Path, tmp_path: Path) -> None:
    action = counted({1: "echo a >> notes.txt", 2: "echo b >> notes.txt"}, tmp_path / "n")
    states = {
        "work": {
            "action": action,
            "evaluate": {"type": "diff_stall", "max_stall": 2},
            "route": {"yes": "work", "no": "stalled"},
        },
        "stalled": DONE,
    }
    result, events, executor = run(states)
    details = [
        {k: v for k, v in e.items() if k not in ("event", "type")} for e in events.of("evaluate")
    ]
    assert details == [
        {"verdict": "yes", "stall_count": 0, "max_stall": 2, "snapshot": True},
        {"verdict": "yes", "stall_count": 0, "max_stall": 2},
        {"verdict": "yes", "stall_count": 1, "max_stall": 2},
        {"verdict": "no", "stall_count": 2, "max_stall": 2},
    ]
    assert result.final_state == "stalled"
    memory = executor.cursor.head.evaluator_memory["work"]
    assert memory["count"] == 2
    assert "notes.txt" in memory["last_stat"]


def test_s2_3_diff_stall_scope_limits_the_diff(repo: Path, tmp_path: Path) -> None:
    # Only other.txt changes: watching notes.txt sees no progress after the snapshot.
    action = counted({1: "echo a >> other.txt", 2: "echo b >> other.txt"}, tmp_path / "n")
    states = {
        "work": {
            "action": action,
            "evaluate": {"type": "diff_stall", "scope": ["notes.txt"]},
            "route": {"yes": "work", "no": "stalled"},
        },
        "stalled": DONE,
    }
    result, events, _ = run(states)
    assert events.verdicts() == ["yes", "no"]
    assert result.final_state == "stalled"


def test_s3_2_diff_stall_outside_a_git_work_tree_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    _, events, _ = run(judged("true", {"type": "diff_stall"}, YES_NO))
    assert events.of("evaluate")[0]["error"] == (
        "git diff --stat failed: warning: Not a git repository. "
        "Use --no-index to compare two paths outside a working tree"
    )


def test_s9h_stall_memory_is_per_run(repo: Path, tmp_path: Path) -> None:
    # A second run of the same loop starts from its own snapshot (no shared tmp files).
    states = {
        "work": {
            "action": "true",
            "evaluate": {"type": "diff_stall"},
            "route": {"yes": "done", "no": "stalled"},
        },
        "done": DONE,
        "stalled": DONE,
    }
    first, _, _ = run(states)
    second, events, _ = run(states)
    assert (first.final_state, second.final_state) == ("done", "done")
    assert events.of("evaluate")[0]["snapshot"] is True


@pytest.mark.parametrize(
    ("kind", "history", "verdict", "best", "stall"),
    [
        ("score_stall", "1\n5\nnot a number\n5.2\n", "no", 5.2, 1),
        ("score_stall", "1\n5\n5.6\n", "yes", 5.6, 0),
        ("open_question_stall", "10\n6\n5.8\n", "no", 5.8, 1),
        ("open_question_stall", "10\n6\n5\n", "yes", 5.0, 0),
    ],
)
def test_s3_2_score_walks(
    tmp_path: Path, kind: str, history: str, verdict: str, best: float, stall: int
) -> None:
    path = tmp_path / "history"
    path.write_text(history)
    evaluate = {"type": kind, "history_file": "${context.hist}"}
    _, events, _ = run(judged("true", evaluate, YES_NO), context={"hist": str(path)})
    assert events.of("evaluate") == [
        {
            "event": "evaluate",
            "type": kind,
            "verdict": verdict,
            "scores": 3,
            "best": best,
            "stall_count": stall,
            "max_stall": 1,
            "history_file": str(path),
        }
    ]


def test_s3_2_score_stall_reads_the_default_history_in_run_dir(tmp_path: Path) -> None:
    run_dir = f"{tmp_path}/"
    (tmp_path / ".score_history").write_text("3\n3.1\n3.2\n3.3\n")
    evaluate = {"type": "score_stall", "max_stall": 3, "epsilon": 0.05}
    _, events, _ = run(judged("true", evaluate, YES_NO), context={"run_dir": run_dir})
    assert events.of("evaluate")[0]["verdict"] == "yes"
    assert events.of("evaluate")[0]["best"] == 3.3


def test_s3_2_score_stall_without_history_is_yes(tmp_path: Path) -> None:
    evaluate = {"type": "score_stall"}
    _, events, _ = run(judged("true", evaluate, YES_NO), context={"run_dir": f"{tmp_path}/"})
    assert events.of("evaluate")[0]["verdict"] == "yes"
    assert events.of("evaluate")[0]["scores"] == 0


def test_s3_2_action_stall_counts_identical_tracked_values(tmp_path: Path) -> None:
    action = counted(
        {1: "echo first", 2: "echo same", 3: "echo same", 4: "echo same"}, tmp_path / "n"
    )
    states = {
        "work": {
            "action": action,
            "capture": "out",
            "evaluate": {
                "type": "action_stall",
                "track": ["captured.out.output", "plan"],
                "max_repeat": 3,
            },
            "route": {"yes": "work", "no": "stalled"},
        },
        "stalled": DONE,
    }
    result, events, executor = run(states, context={"plan": "fix"})
    assert [(e["verdict"], e["repeat_count"]) for e in events.of("evaluate")] == [
        ("yes", 1),
        ("yes", 1),
        ("yes", 2),
        ("no", 3),
    ]
    assert result.final_state == "stalled"
    assert executor.cursor.head.evaluator_memory["work"]["count"] == 3


def test_s2_2_on_blocked_shorthand_makes_a_learning_state_blocked() -> None:
    states = {
        "prove": {"type": "learning", "learning": {"targets_csv": "a,b"}, "on_blocked": "stuck"},
        "stuck": DONE,
    }
    _, events, _ = run(states)
    assert events.verdicts() == ["blocked"]


def test_s2_2_type_learning_without_learning_runs_its_action(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    states = {"work": {"type": "learning", "action": f"touch {marker}", "route": {"yes": "done"}}}
    result, _, _ = run({**states, "done": DONE})
    assert marker.exists()
    assert result.final_state == "done"


def test_s9h_stall_memory_is_saved_in_the_state_file_and_restored_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    states = {
        "work": {
            "action": "echo same",
            "evaluate": {"type": "action_stall", "track": ["prev.output"], "max_repeat": 3},
            "route": {"yes": "work", "no": "stalled"},
        },
        "stalled": DONE,
    }

    def loop(steps: int) -> HeadLoop:
        data = {"name": "demo", "initial": "work", "states": states, "max_steps": steps}
        return HeadLoop.from_dict(data)

    first = PersistentExecutor(loop(3)).run()
    assert first.terminated_by in STEP_CAP_ENDINGS
    saved = json.loads((tmp_path / ".loops/.running/demo.state.json").read_text())
    memory = saved["head"]["evaluator_memory"]["work"]
    assert memory["count"] == 2  # the first round saw no `prev` yet, then "same" twice
    resumed = PersistentExecutor(loop(10)).resume()
    assert resumed is not None
    assert resumed.final_state == "stalled"
    assert resumed.iterations == 4


def test_s3_1_yes_builds_no_stall_streak_as_success_does() -> None:
    states = {"poll": {"action": "echo same", "route": {"yes": "poll"}}}
    result, _, _ = run(states, max_steps=5, stall_threshold=2)
    assert result.terminated_by in STEP_CAP_ENDINGS
    assert result.iterations == 5
    legacy, _, _ = run(
        {"poll": {"action": "echo same", "on_success": "poll"}},
        head=False,
        max_iterations=5,
        stall_threshold=2,
    )
    assert (legacy.terminated_by, legacy.iterations) == ("max_iterations", 5)


# -- the reference face: `evaluators.evaluate` with a HEAD file's `evaluate:` ---------------


@pytest.mark.parametrize(
    ("data", "output", "exit_code", "verdict"),
    [
        ({"type": "exit_code"}, "", 0, "yes"),
        ({"type": "exit_code"}, "", 1, "no"),
        ({"type": "output_numeric", "operator": "lt", "target": 3}, "5", 0, "no"),
        ({"type": "output_numeric", "operator": "lt", "target": 3}, "1", 2, "error"),
        ({"type": "classify", "line": "first"}, "GO\nSTOP\n", 0, "GO"),
        ({"type": "mcp_result"}, "", 127, "not_found"),
        ({"type": "harbor_scorer"}, "0.9", 0, "yes"),
        ({"type": "contract", "pairs": []}, "", 0, "error"),
    ],
)
def test_s3_2_the_evaluate_face_judges_a_head_config_as_head_does(
    data: dict[str, Any], output: str, exit_code: int, verdict: str
) -> None:
    result = evaluate(HeadEvaluateConfig.from_dict(data), output, exit_code, InterpolationContext())
    assert result.verdict == verdict


def test_s3_1_the_evaluate_face_keeps_legacy_names_for_a_legacy_config() -> None:
    config = EvaluateConfig.from_dict({"type": "exit_code"})
    assert evaluate(config, "", 0, InterpolationContext()).verdict == "success"


# -- the run core does no I/O: the stall evaluators that read the host are asked of the driver


def core_requests(evaluate: dict[str, Any], observed: Any) -> tuple[list[str], list[str]]:
    """The requests of a two-round run of one state judged by `evaluate`, each host
    judgement answered with `observed`; and the verdicts the core settled."""
    states = {
        "work": {"action": "x", "evaluate": evaluate, "route": {"yes": "work", "no": "done"}},
        "done": DONE,
    }
    loop = HeadLoop.from_dict({"name": "t", "initial": "work", "states": states, "max_steps": 2})
    events: list[dict[str, Any]] = []
    core = RunCore(loop, clock=SYSTEM_CLOCK, emit=events.append)
    seen: list[str] = []
    request = core.next_request()
    while not isinstance(request, Finish):
        seen.append(type(request).__name__)
        if isinstance(request, RunAction):
            core.submit(ActionResult(output="same", stderr="", exit_code=0, duration_ms=1))
        else:
            assert isinstance(request, EvaluateWithIO)
            core.submit(("yes", {"observed": observed}))
        request = core.next_request()
    return seen, [event["verdict"] for event in events if event["event"] == "evaluate"]


def test_s3_2_diff_stall_asks_the_driver_for_the_diff_and_the_core_remembers_it() -> None:
    seen, verdicts = core_requests({"type": "diff_stall"}, " a | 1 +\n")
    assert seen == ["RunAction", "EvaluateWithIO", "RunAction", "EvaluateWithIO"]
    assert verdicts == ["yes", "no"]


@pytest.mark.parametrize("kind", ["score_stall", "open_question_stall"])
def test_s3_2_history_walks_are_asked_of_the_driver(kind: str) -> None:
    seen, _ = core_requests({"type": kind}, None)
    assert seen.count("EvaluateWithIO") == 2


def test_s3_2_action_stall_is_judged_inside_the_core() -> None:
    seen, verdicts = core_requests({"type": "action_stall", "track": ["prev.output"]}, None)
    assert seen == ["RunAction", "RunAction"]
    assert verdicts == ["yes", "yes"]  # no prev, then "same": a first value each
