"""Sub-loops (`loop:`) on the local engine (spec/ll-head-dialect.md §4, §9c, §9d, §9f, §9g).

Parents are HEAD loops built with `HeadLoop.from_dict`; children are real loop files under
`tmp_path/.loops`, run by `FSMExecutor` with the real runner (shell actions run for real).
Children of both dialects go through the real loader (`LoadChild`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import LL_LOOP, cli_env

from little_loops.cli.display import ProgressDisplay
from little_loops.cli.history_lines import readable_lines
from little_loops.fsm.engine.child_binding import clamped_child_timeout
from little_loops.fsm.engine.core import RunCore
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.process.claude_stream import ClaudeRun
from little_loops.fsm.process.runner import ActionResult

CHILD = """\
name: child
initial: work
states:
  work:
    action: "printf 'worked %s' ${context.who}"
    capture: said
    next: check
  check:
    action: "true"
    on_success: done
  done:
    terminal: true
"""

FAILING_CHILD = """\
name: failing-child
initial: work
states:
  work:
    action: "false"
    on_success: done
    on_failure: failed
  done:
    terminal: true
  failed:
    terminal: true
"""

ERROR_CHILD = """\
name: error-child
initial: work
states:
  work:
    action: "exit 3"
    on_success: done
  done:
    terminal: true
"""

BUSY_CHILD = """\
name: busy-child
initial: work
max_iterations: 2
states:
  work:
    action: "true"
    next: work
  done:
    terminal: true
"""


def _strip(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in event.items() if key != "ts"} for event in events]


def _write(root: Path, name: str, text: str) -> None:
    path = root / ".loops" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _parent(states: dict[str, Any], **loop: Any) -> HeadLoop:
    terminals = {"done": {"terminal": True}, "fallback": {"terminal": True}}
    return HeadLoop.from_dict(
        {"name": "parent", "initial": "go", **loop, "states": {**states, **terminals}}
    )


def _run(
    root: Path, parent: HeadLoop, events: list[dict[str, Any]] | None = None
) -> ExecutionResult:
    executor = FSMExecutor(parent, event_callback=(events if events is not None else []).append)
    executor.guards.loops_dir = root / ".loops"
    return executor.run()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_4_child_runs_as_one_step_with_depth_events_and_routes_on_yes(project: Path) -> None:
    """§4, §4.3, §4.7: the child's events carry depth 1 between the parent's state_enter
    and its route; a clean terminal takes on_yes."""
    _write(project, "child", CHILD)
    events: list[dict[str, Any]] = []
    parent = _parent({"go": {"loop": "child", "with": {"who": "me"}, "on_yes": "done"}})
    result = _run(project, parent, events)
    assert (result.terminated_by, result.final_state, result.iterations) == ("terminal", "done", 1)
    assert _strip(events) == [
        {"event": "loop_start", "loop": "parent"},
        {"event": "state_enter", "state": "go", "iteration": 1},
        {"event": "loop_start", "loop": "child", "depth": 1},
        {"event": "state_enter", "state": "work", "iteration": 1, "depth": 1},
        {"event": "action_start", "action": "printf 'worked %s' me", "depth": 1},
        {
            "event": "action_complete",
            "exit_code": 0,
            "duration_ms": events[5]["duration_ms"],
            "depth": 1,
        },
        {"event": "route", "from": "work", "to": "check", "depth": 1},
        {"event": "state_enter", "state": "check", "iteration": 2, "depth": 1},
        {"event": "action_start", "action": "true", "depth": 1},
        {
            "event": "action_complete",
            "exit_code": 0,
            "duration_ms": events[9]["duration_ms"],
            "depth": 1,
        },
        {"event": "evaluate", "type": "default", "verdict": "success", "exit_code": 0, "depth": 1},
        {"event": "route", "from": "check", "to": "done", "verdict": "success", "depth": 1},
        {
            "event": "loop_complete",
            "final_state": "done",
            "iterations": 2,
            "terminated_by": "terminal",
            "depth": 1,
        },
        {"event": "route", "from": "go", "to": "done", "verdict": "yes"},
        {
            "event": "loop_complete",
            "final_state": "done",
            "iterations": 1,
            "terminated_by": "terminal",
        },
    ]


def test_4_4_write_backs_with_bindings_and_capture(project: Path) -> None:
    """§4.4: `capture:` gets the child's events as JSON lines and the verdict; with
    bindings the child's captures replace `captured[<state>]`, plus `terminated_by`."""
    _write(project, "child", CHILD)
    events: list[dict[str, Any]] = []
    parent = _parent(
        {
            "go": {
                "loop": "child",
                "with": {"who": "${context.me}"},
                "capture": "run",
                "on_yes": "show",
            },
            "show": {
                "action": "printf 'got %s' '${captured.go.said.output}'",
                "capture": "shown",
                "next": "done",
            },
        },
        context={"me": "parent-value"},
    )
    result = _run(project, parent, events)
    assert result.terminated_by == "terminal"
    child_events = [event for event in events if event.get("depth") == 1]
    run = result.captured["run"]
    assert run == {
        "output": "\n".join(json.dumps(event) for event in child_events),
        "exit_code": None,
        "verdict": "yes",
    }
    go = result.captured["go"]
    assert go["terminated_by"] == "terminal"
    assert go["said"]["output"] == "worked parent-value"
    assert set(go) == {"said", "terminated_by"}
    assert result.captured["shown"]["output"] == "got worked parent-value"


def test_4_3_failure_terminal_takes_on_no(project: Path) -> None:
    """§4.3: a terminal named `failed` (a legacy child too) is a failure terminal: on_no,
    and `failure_terminal: true` is written back."""
    _write(project, "failing-child", FAILING_CHILD)
    parent = _parent({"go": {"loop": "failing-child", "on_yes": "done", "on_no": "fallback"}})
    result = _run(project, parent)
    assert (result.terminated_by, result.final_state) == ("terminal", "fallback")
    assert result.captured["go"] == {"terminated_by": "terminal", "failure_terminal": True}


def test_4_3_child_error_takes_on_error_else_on_no(project: Path) -> None:
    """§4.3: a child ending `error` takes on_error; without it, on_no; its message is
    written back (§4.4 step 4)."""
    _write(project, "error-child", ERROR_CHILD)
    message = "No valid transition for verdict 'error' in state 'work'"
    with_error = _parent(
        {"go": {"loop": "error-child", "on_no": "fallback", "on_error": "handled"}},
    )
    with_error.states["handled"] = with_error.states["done"]
    result = _run(project, with_error)
    assert result.final_state == "handled"
    assert result.captured["go"] == {"terminated_by": "error", "error": message}
    without = _parent({"go": {"loop": "error-child", "on_yes": "done", "on_no": "fallback"}})
    assert _run(project, without).final_state == "fallback"


def test_4_3_budget_takes_on_timeout_else_on_no(project: Path) -> None:
    """§4.3: a child that used up its step cap takes on_timeout; without it, on_no."""
    _write(project, "busy-child", BUSY_CHILD)
    timed = _parent({"go": {"loop": "busy-child", "on_no": "fallback", "on_timeout": "done"}})
    result = _run(project, timed)
    assert result.final_state == "done"
    assert result.captured["go"] == {"terminated_by": "max_iterations"}
    plain = _parent({"go": {"loop": "busy-child", "on_yes": "done", "on_no": "fallback"}})
    assert _run(project, plain).final_state == "fallback"


def test_4_5_state_timeout_is_the_child_wall_clock(project: Path) -> None:
    """§4.5: the state's `timeout` caps the child's wall clock; running out is on_timeout."""
    _write(
        project,
        "slow",
        "name: slow\ninitial: wait\nstates:\n  wait:\n    action: sleep 5\n"
        "    next: done\n  done:\n    terminal: true\n",
    )
    parent = _parent(
        {"go": {"loop": "slow", "timeout": 1, "on_no": "fallback", "on_timeout": "done"}}
    )
    result = _run(project, parent)
    assert (result.final_state, result.captured["go"]) == ("done", {"terminated_by": "timeout"})
    assert result.duration_ms < 4000


def test_4_5_clamp_arithmetic() -> None:
    """§4.5: cap = max(1, parent's remaining seconds), lowered to the state's timeout; the
    child's own timeout stays when it is smaller."""
    assert (
        clamped_child_timeout(
            None, parent_timeout=100, parent_elapsed_ms=40_000, state_timeout=None
        )
        == 60
    )
    assert (
        clamped_child_timeout(
            None, parent_timeout=100, parent_elapsed_ms=99_900, state_timeout=None
        )
        == 1
    )
    assert (
        clamped_child_timeout(500, parent_timeout=100, parent_elapsed_ms=0, state_timeout=30) == 30
    )
    assert (
        clamped_child_timeout(10, parent_timeout=100, parent_elapsed_ms=0, state_timeout=30) == 10
    )
    assert (
        clamped_child_timeout(10, parent_timeout=None, parent_elapsed_ms=0, state_timeout=None)
        == 10
    )


def test_4_3_unresolved_name_takes_on_error_or_ends_the_run(project: Path) -> None:
    """§4.1, §4.3: an unresolvable name is a load failure: on_error, else the run ends
    `error` with the message naming the places tried."""
    (project / ".loops").mkdir()
    loops = project / ".loops"
    message = (
        f"sub-loop 'nowhere' not found (tried: {project / 'nowhere'}, "
        f"{project / 'nowhere.fsm.yaml'}, {project / 'nowhere.yaml'}, "
        f"{loops / 'nowhere.fsm.yaml'}, {loops / 'nowhere.yaml'})"
    )
    routed = _run(
        project, _parent({"go": {"loop": "nowhere", "on_yes": "done", "on_error": "fallback"}})
    )
    assert routed.final_state == "fallback"
    assert routed.captured["go"] == {"terminated_by": "error", "error": message}
    ended = _run(project, _parent({"go": {"loop": "nowhere", "on_yes": "done", "on_no": "done"}}))
    assert (ended.terminated_by, ended.error) == ("error", message)


def test_4_1_name_is_interpolated_and_may_hold_a_slash(project: Path) -> None:
    """§4.1: `${…}` in the name, and `<loops dir>/<a/b>.yaml`."""
    _write(project, "writers/child", CHILD)
    parent = _parent(
        {"go": {"loop": "${context.kind}/child", "with": {"who": "x"}, "on_yes": "done"}},
        context={"kind": "writers"},
    )
    assert _run(project, parent).final_state == "done"


def test_4_2_passthrough_gives_parent_context_and_captures(project: Path) -> None:
    """§4.2: passthrough gives the parent's context and captures (a capture as its
    output); the child's own literals win."""
    _write(
        project,
        "reader",
        "name: reader\ninitial: read\ncontext:\n  mine: child-literal\nstates:\n  read:\n"
        '    action: "echo ${context.who} ${context.first} ${context.mine}"\n'
        "    capture: line\n    next: done\n  done:\n    terminal: true\n",
    )
    parent = _parent(
        {
            "first": {"action": "printf one", "capture": "first", "next": "go"},
            "go": {"loop": "reader", "context_passthrough": True, "on_yes": "done"},
        },
        context={"who": "parent", "mine": "parent-literal"},
    )
    parent.initial = "first"
    result = _run(project, parent)
    assert result.captured["go"]["line"]["output"] == "parent one child-literal\n"


def test_4_2_no_binding_gives_the_child_only_its_own_context(project: Path) -> None:
    """§4.2: neither `with:` nor passthrough: the child's own context, no `run_dir`."""
    _write(
        project,
        "own",
        "name: own\ninitial: read\ncontext:\n  who: own\nstates:\n  read:\n"
        '    action: "echo ${context.who}"\n    capture: line\n    next: done\n'
        "  done:\n    terminal: true\n",
    )
    parent = _parent(
        {"go": {"loop": "own", "on_yes": "done"}}, context={"who": "parent", "run_dir": "/r/"}
    )
    result = _run(project, parent)
    assert result.final_state == "done"
    assert result.captured["go"] == {"terminated_by": "terminal"}  # no binding: no captures


def test_9g_current_in_a_loop_state_route(project: Path) -> None:
    """§9g: `$current` in a route of a `loop:` state runs the child again."""
    _write(
        project,
        "twice",
        "name: twice\ninitial: count\nstates:\n  count:\n"
        '    action: "echo x >> tally; test $(wc -l < tally) -ge 2"\n'
        "    on_success: done\n    on_failure: failed\n  done:\n    terminal: true\n"
        "  failed:\n    terminal: true\n",
    )
    parent = _parent({"go": {"loop": "twice", "on_yes": "done", "on_no": "$current"}})
    events: list[dict[str, Any]] = []
    result = _run(project, parent, events)
    assert (result.final_state, result.iterations) == ("done", 2)
    routes = [
        event for event in _strip(events) if event["event"] == "route" and "depth" not in event
    ]
    assert routes == [
        {"event": "route", "from": "go", "to": "go", "verdict": "no"},
        {"event": "route", "from": "go", "to": "done", "verdict": "yes"},
    ]


def test_9f_fatal_error_in_a_child_fails_the_run(project: Path) -> None:
    """§9f: FATAL_ERROR printed by a child's action ends the whole run `error` (failed),
    not the parent's on_error route."""
    _write(
        project,
        "fatal",
        "name: fatal\ninitial: boom\nstates:\n  boom:\n"
        '    action: "echo FATAL_ERROR: disk full"\n    next: done\n  done:\n    terminal: true\n',
    )
    parent = _parent(
        {"go": {"loop": "fatal", "on_yes": "done", "on_error": "done", "on_no": "done"}}
    )
    parent.states["go"].on_error = "done"
    from little_loops.fsm.signal_detector import SignalDetector

    executor = FSMExecutor(parent, signal_detector=SignalDetector())
    executor.guards.loops_dir = project / ".loops"
    result = executor.run()
    assert (result.terminated_by, result.final_state, result.error) == ("error", "go", "disk full")


def test_9f_loop_stop_in_a_child_stops_the_run(project: Path) -> None:
    """§9f: LOOP_STOP printed in a child ends the whole run `signal_stop` after the state."""
    _write(
        project,
        "stopper",
        "name: stopper\ninitial: halt\nstates:\n  halt:\n"
        '    action: "echo LOOP_STOP: enough"\n    next: after\n  after:\n'
        '    action: "touch after-ran"\n    next: done\n  done:\n    terminal: true\n',
    )
    from little_loops.fsm.signal_detector import SignalDetector

    parent = _parent({"go": {"loop": "stopper", "on_yes": "done", "on_no": "done"}})
    executor = FSMExecutor(parent, signal_detector=SignalDetector())
    executor.guards.loops_dir = project / ".loops"
    result = executor.run()
    assert (result.terminated_by, result.stop_reason) == ("signal_stop", "enough")
    assert not (project / "after-ran").exists()


def test_9d_required_parameter_unbound_is_a_load_failure(project: Path) -> None:
    """§4.2: a required parameter not bound in `with:` is a load failure with HEAD's
    message; on_error is taken."""
    _write(
        project,
        "needs",
        "name: needs\ninitial: work\nparameters:\n  version: {type: string, required: true}\n"
        "  rounds: {type: integer, default: 2}\nstates:\n  work:\n"
        "    action: \"printf '%s %s' ${context.version} ${context.rounds}\"\n    capture: out\n"
        "    next: done\n  done:\n    terminal: true\n",
    )
    missing = _parent(
        {"go": {"loop": "needs", "with": {"other": 1}, "on_yes": "done", "on_error": "fallback"}}
    )
    result = _run(project, missing)
    assert result.final_state == "fallback"
    assert result.captured["go"]["error"] == (
        "Sub-loop 'needs' requires parameter 'version' but it is not bound in 'with'"
    )
    bound = _parent({"go": {"loop": "needs", "with": {"version": "2.3"}, "on_yes": "done"}})
    result = _run(project, bound)
    assert result.captured["go"]["out"]["output"] == "2.3 2"


def test_9d_types_are_checked_after_interpolation(project: Path) -> None:
    """§9d: `"6"` reads as an integer; `true` does not; the message names parameter,
    type and value."""
    _write(
        project,
        "typed",
        "name: typed\ninitial: work\nparameters:\n  rounds: {type: integer}\nstates:\n"
        '  work:\n    action: "printf ${context.rounds}"\n    capture: out\n    next: done\n'
        "  done:\n    terminal: true\n",
    )
    good = _parent(
        {"go": {"loop": "typed", "with": {"rounds": "${context.n}"}, "on_yes": "done"}},
        context={"n": 6},
    )
    assert _run(project, good).captured["go"]["out"]["output"] == "6"
    bad = _parent(
        {
            "go": {
                "loop": "typed",
                "with": {"rounds": True},
                "on_yes": "done",
                "on_error": "fallback",
            }
        }
    )
    result = _run(project, bad)
    assert (
        result.captured["go"]["error"]
        == "Sub-loop 'typed' parameter 'rounds' must be an integer, got True"
    )


def test_9c_depth_limit_names_the_chain(project: Path) -> None:
    """§9c: a child that calls itself (a dynamic name) fails at depth 9, naming the chain;
    every level routes on_error up."""
    _write(
        project,
        "deep",
        "name: deep\ninitial: down\nstates:\n  down:\n    loop: '${context.me}'\n"
        "    context_passthrough: true\n    on_yes: done\n    on_error: failed\n"
        "  done:\n    terminal: true\n  failed:\n    terminal: true\n",
    )
    parent = _parent(
        {
            "go": {
                "loop": "deep",
                "context_passthrough": True,
                "on_yes": "done",
                "on_no": "fallback",
            }
        },
        context={"me": "deep"},
    )
    parent.name = "top"
    events: list[dict[str, Any]] = []
    result = _run(project, parent, events)
    assert result.final_state == "fallback"
    chain = " -> ".join(["top", *["deep"] * 9])
    deepest = [event for event in events if event.get("depth") == 8 and event["event"] == "route"]
    assert deepest == [
        {
            "event": "route",
            "ts": deepest[0]["ts"],
            "from": "down",
            "to": "failed",
            "verdict": "error",
            "depth": 8,
        }
    ]
    assert max(event.get("depth", 0) for event in events) == 8
    assert f"sub-loop depth limit (8) exceeded: {chain}" in json.dumps(result.captured)


def test_9b_head_sub_loops_is_empty_once_the_child_is_done(project: Path) -> None:
    """§9b: the child's place is in `head.sub_loops` only while it runs."""
    _write(project, "child", CHILD)
    seen: list[list[dict[str, Any]]] = []
    parent = _parent({"go": {"loop": "child", "with": {"who": "me"}, "on_yes": "done"}})
    executor = FSMExecutor(parent)
    executor.guards.loops_dir = project / ".loops"

    def watch(event: dict[str, Any]) -> None:
        if event.get("depth") == 1 and event["event"] == "route":
            seen.append([dict(record) for record in executor.cursor.head.sub_loops])

    executor.event_callback = watch
    executor.run()
    assert [(r[0]["parent_state"], r[0]["loop_name"], r[0]["current_state"]) for r in seen] == [
        ("go", "child", "check"),
        ("go", "child", "done"),
    ]
    assert seen[0][0]["iteration"] == 1 and seen[0][0]["context"]["who"] == "me"
    assert executor.cursor.head.sub_loops == []


def test_4_7_live_display_indents_a_child_by_its_depth(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """§4.7: the live display shows the child's steps indented under the `loop:` state,
    numbered by the child's own count, and the parent's route after them."""
    _write(project, "child", CHILD)
    display = ProgressDisplay(max_iterations=5, clock=lambda: 0.0)
    parent = _parent({"go": {"loop": "child", "with": {"who": "me"}, "on_yes": "done"}})
    executor = FSMExecutor(parent, event_callback=display)
    executor.guards.loops_dir = project / ".loops"
    executor.run()
    display.finish()
    assert capsys.readouterr().out == (
        "[1/5] go\n"
        "    sub-loop child\n"
        "    [1] work -> printf 'worked %s' me\n"
        "           -> check (0.0s)\n"
        "    [2] check -> true\n"
        "           ✓ success\n"
        "           -> done (0.0s)\n"
        "       -> done (0.0s)\n"
    )


def test_4_7_history_indents_a_child_by_its_depth(project: Path) -> None:
    """§4.7: `ll-loop history` lines of a child are indented by depth; the parent's
    `loop:` state line spans the child's visits."""
    _write(project, "child", CHILD)
    events: list[dict[str, Any]] = []
    parent = _parent({"go": {"loop": "child", "with": {"who": "me"}, "on_yes": "done"}})
    _run(project, parent, events)
    lines = [line.split(" ", 1)[1] for line in readable_lines(events, lambda _: True, fold=True)]
    took = [line.rsplit("  (", 1) for line in lines]
    assert [text for text, *_ in took] == [
        "loop_start loop=parent",
        "    loop_start loop=child",
        "    work  -> check (next)",
        "    check  ✓ success -> done",
        "    loop_complete final_state=done iterations=2 terminated_by=terminal",
        "go  ✓ yes -> done",
        "loop_complete final_state=done iterations=1 terminated_by=terminal",
    ]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def repo(project: Path) -> Path:
    """A git project whose branch `feature` has a file `main` lacks."""
    _git(project, "init", "-q", "-b", "main")
    (project / ".gitignore").write_text(".loops/\n")
    _git(project, "add", ".gitignore")
    _git(project, "commit", "-q", "-m", "first")
    _git(project, "checkout", "-q", "-b", "feature")
    (project / "only-on-feature").write_text("feature file\n")
    _git(project, "add", "only-on-feature")
    _git(project, "commit", "-q", "-m", "feature")
    _git(project, "checkout", "-q", "main")
    return project


WHERE_CHILD = """\
name: where
initial: look
states:
  look:
    action: "git rev-parse --abbrev-ref HEAD; cat only-on-feature; echo ${context.run_dir}"
    capture: seen
    next: done
  done:
    terminal: true
"""


def test_4_6_worktree_runs_the_child_on_its_branch_and_removes_it(repo: Path) -> None:
    """§4.6: `worktree:` attaches a fresh worktree of the branch, runs the child there
    (a relative run_dir made absolute), removes it afterwards; the branch stays."""
    _write(repo, "where", WHERE_CHILD)
    events: list[dict[str, Any]] = []
    parent = _parent(
        {
            "go": {
                "loop": "where",
                "worktree": " ${context.branch} ",
                "with": {"run_dir": "runs/x/"},
                "on_yes": "done",
            }
        },
        context={"branch": "feature"},
    )
    result = _run(repo, parent, events)
    assert result.final_state == "done"
    assert result.captured["go"]["seen"]["output"] == f"feature\nfeature file\n{repo}/runs/x/\n"
    attached = [event for event in events if event["event"].startswith("sub_loop_worktree")]
    path = attached[0]["path"]
    assert path.startswith(str(repo / ".loops" / ".worktrees" / "parent-go-"))
    assert _strip(attached) == [
        {"event": "sub_loop_worktree_attached", "branch": "feature", "path": path},
        {"event": "sub_loop_worktree_detached", "branch": "feature", "path": path},
    ]
    assert not Path(path).exists()
    assert "feature" in _git(repo, "branch", "--list", "feature")
    assert not (repo / "only-on-feature").exists()


def test_4_3_worktree_attach_failure_takes_on_error(repo: Path) -> None:
    """§4.3: a worktree that cannot be attached sets `captured[<state>].error`, emits
    `sub_loop_worktree_error` and takes on_error (else on_no); the child never runs."""
    _write(repo, "where", WHERE_CHILD)
    events: list[dict[str, Any]] = []
    parent = _parent(
        {
            "go": {
                "loop": "where",
                "worktree": "nosuch",
                "with": {"run_dir": "r/"},
                "on_yes": "done",
                "on_no": "fallback",
            }
        }
    )
    result = _run(repo, parent, events)
    message = (
        "worktree of branch 'nosuch': git worktree add failed: fatal: invalid reference: nosuch"
    )
    assert result.final_state == "fallback"
    assert result.captured["go"] == {"terminated_by": "error", "error": message}
    assert [_strip([event])[0] for event in events if event["event"].startswith("sub_loop")] == [
        {"event": "sub_loop_worktree_error", "branch": "nosuch", "error": message}
    ]
    assert not [event for event in events if event.get("depth")]


class _PricedRunner:
    """A runner whose every action reports a claude run's cost and tokens."""

    def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult:
        claude = ClaudeRun(cost_usd=0.25, input_tokens=10, output_tokens=3)
        return ActionResult(output="", stderr="", exit_code=0, duration_ms=1, claude=claude)


def test_4_7_child_spending_rolls_up_into_the_run(project: Path) -> None:
    """Design "Composition on the core": what the child spent counts as the run's."""
    _write(project, "child", CHILD)
    parent = _parent({"go": {"loop": "child", "with": {"who": "me"}, "on_yes": "done"}})
    executor = FSMExecutor(parent, action_runner=_PricedRunner())
    executor.guards.loops_dir = project / ".loops"
    result = executor.run()
    assert result.final_state == "done"
    assert result.spending == {
        "cost_usd": 0.5,
        "tokens": {"input": 20, "output": 6, "cache_read": 0, "cache_creation": 0},
    }


def test_4_7_the_run_budget_stops_a_child_and_resume_goes_on_inside_it(project: Path) -> None:
    """The run's budget (`max_cost_usd`) covers its children: a child that reaches it stops
    the whole run `budget_exhausted` with its place kept (its spending counted), and a
    resume with a higher budget goes on inside the child."""
    _write(
        project,
        "spender",
        "name: spender\ninitial: a\nstates:\n  a:\n    action: a\n    next: b\n"
        "  b:\n    action: b\n    next: c\n  c:\n    action: c\n    next: done\n"
        "  done:\n    terminal: true\n",
    )
    parent = _parent({"go": {"loop": "spender", "on_yes": "done"}}, max_cost_usd=0.3)
    executor = FSMExecutor(parent, action_runner=_PricedRunner())
    executor.guards.loops_dir = project / ".loops"
    result = executor.run()
    assert (result.terminated_by, result.final_state) == ("budget_exhausted", "go")
    assert result.spending is not None and result.spending["cost_usd"] == 0.5
    [record] = executor.cursor.head.sub_loops
    assert (record["current_state"], record["spending"]) == ("c", {})
    parent.max_cost_usd = 1.0
    events: list[dict[str, Any]] = []
    again = FSMExecutor(parent, event_callback=events.append, action_runner=_PricedRunner())
    again.guards.loops_dir = project / ".loops"
    again.restore(executor.snapshot())
    again.cursor.iteration -= 1  # the `loop:` state was cut off: it is entered again
    resumed = again.run()
    assert (resumed.terminated_by, resumed.final_state) == ("terminal", "done")
    assert resumed.spending is not None and resumed.spending["cost_usd"] == 0.75
    ran = [event["state"] for event in events if event["event"] == "state_enter"]
    assert ran == ["go", "c"]


def test_4_8_dry_run_shows_the_sub_loop_without_loading_it(project: Path) -> None:
    """§4.8: `ll-loop run --dry-run` names the sub-loop and never loads it (the child
    file here does not even exist)."""
    (project / ".loops").mkdir()
    (project / ".loops" / "parent.yaml").write_text(
        "name: parent\ndescription: p\ninitial: go\nstates:\n  go:\n"
        "    loop: '${context.kind}/child'\n    on_yes: done\n  done: {terminal: true}\n"
    )
    shown = subprocess.run(
        [str(LL_LOOP), "run", "parent", "--dry-run", "--context", "kind=writers"],
        cwd=project,
        env=cli_env(project),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "  [go]\n    [sub-loop: ${context.kind}/child]\n    on_yes -> done\n" in shown.stdout


def test_7_6_rate_limit_memory_is_shared_with_the_child(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§7.6 (§4.6): the rate-limit wait memory is the run's: the child's cursor holds the
    same record as the run's, and a child's saved place does not keep a copy of it."""
    _write(project, "child", CHILD)
    parent = _parent({"go": {"loop": "child", "with": {"who": "me"}, "on_yes": "done"}})
    executor = FSMExecutor(parent)
    executor.guards.loops_dir = project / ".loops"
    executor.cursor.head.rate_limit["work"] = {"waited": 5}
    children: list[RunCore] = []
    nested = RunCore.nested

    def keep_child(core: RunCore, fsm: Any, **kwargs: Any) -> RunCore:
        children.append(nested(core, fsm, **kwargs))
        return children[-1]

    monkeypatch.setattr(RunCore, "nested", keep_child)
    saved: list[dict[str, Any]] = []

    def watch(event: dict[str, Any]) -> None:
        if event.get("depth") == 1 and event["event"] == "route":
            saved.append(executor.cursor.head.sub_loops[0]["counters"]["head"])

    executor.event_callback = watch
    executor.run()
    [child] = children
    assert child.cursor.head.rate_limit is executor.cursor.head.rate_limit
    assert saved == [{}, {}]
