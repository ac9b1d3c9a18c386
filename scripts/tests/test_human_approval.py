"""A person's approval as a state (issue 26 item 2), through the real `ll-loop`.

Each run is a real process waiting on its question; the answers come from a second
process (`ll-loop approve` / `reject`), from the run's terminal (a tmux pane), or from
nobody (the timeout). Durable: a run killed (-9) or stopped while waiting is resumed
without running earlier states again and without asking twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, normalize, run_cli, write_loop
from fixtures.external_tools import find_program, require_tool
from test_cli_watch import wait_for
from test_watch_terminal import Tmux

from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.model.approval import ApprovalAnswer
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.validation import load_and_validate

# A legacy file (no HEAD key): the approval state's keys do not make it HEAD.
LEGACY_LOOP = """\
name: gate
initial: build
states:
  build:
    action: echo run >> builds.txt; printf candidate-7
    capture: build
    next: review
  review:
    action_type: human_approval
    action: "Ship ${captured.build.output}?"
    on_yes: ship
    on_no: rework
    on_edit: revise
  ship:
    action: echo shipped
    next: done
  rework:
    action: "echo reworked: ${captured.review.reason}"
    next: done
  revise:
    action: "echo revised: ${captured.review.edit}"
    next: done
  done:
    terminal: true
"""

# The same loop in the HEAD dialect (`max_steps` makes it HEAD).
HEAD_LOOP = LEGACY_LOOP.replace("initial: build\n", "initial: build\nmax_steps: 20\n", 1)

TIMED_LOOP = """\
name: timed
initial: review
states:
  review:
    action_type: human_approval
    action: "Merge?"
    timeout: 1
    on_yes: merged
    on_no: declined
  merged:
    terminal: true
  declined:
    terminal: true
"""


@pytest.fixture
def runs() -> Iterator[list[subprocess.Popen[str]]]:
    """The runs a test started; any still alive at the end are killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def start(runs: list[subprocess.Popen[str]], root: Path, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [str(LL_LOOP), *args],
        cwd=root,
        env=cli_env(root),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs.append(process)
    return process


def awaiting(root: Path, name: str) -> bool:
    return "Status: awaiting approval (pid" in run_cli(root, "status", name).stdout


def events(root: Path, name: str) -> list[dict[str, object]]:
    path = root / ".loops" / ".running" / f"{name}.events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def named(root: Path, name: str, kind: str) -> list[dict[str, object]]:
    return [event for event in events(root, name) if event["event"] == kind]


def finished(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = process.communicate(timeout=60)
    return process.returncode, out


def run_and_answer(
    runs: list[subprocess.Popen[str]], root: Path, loop: str, *answer: str
) -> tuple[int, str, subprocess.CompletedProcess[str]]:
    write_loop(root, "gate", loop)
    process = start(runs, root, "run", "gate")
    wait_for(lambda: awaiting(root, "gate"), "the question")
    answered = run_cli(root, *answer)
    code, out = finished(process)
    return code, out, answered


# --- approve / reject / edit / timeout, each from a second process ----------------------


def test_approve_from_a_second_process_routes_on_yes(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    code, out, answered = run_and_answer(runs, tmp_path, LEGACY_LOOP, "approve", "gate")

    assert (answered.returncode, normalize(answered.stdout)) == (
        0,
        "[T] Approved: Ship candidate-7?\n",
    )
    assert code == 0
    assert "       ? Ship candidate-7?\n" in out
    assert "       answer: yes\n" in out
    assert [(e["from"], e["to"]) for e in named(tmp_path, "gate", "route")] == [
        ("build", "review"),
        ("review", "ship"),
        ("ship", "done"),
    ]
    assert [e["verdict"] for e in named(tmp_path, "gate", "approval_answered")] == ["yes"]


def test_reject_with_a_reason_routes_on_no_and_the_reason_is_captured(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    code, _, answered = run_and_answer(
        runs, tmp_path, HEAD_LOOP, "reject", "gate", "--reason", "too risky"
    )

    assert normalize(answered.stdout) == "[T] Rejected (too risky): Ship candidate-7?\n"
    assert code == 0
    rework = [e for e in named(tmp_path, "gate", "action_start")][-1]
    assert rework["action"] == "echo reworked: too risky"
    assert named(tmp_path, "gate", "route")[1]["to"] == "rework"


def test_approve_with_an_edit_routes_on_edit_with_the_text_in_captured_edit(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    code, out, answered = run_and_answer(
        runs, tmp_path, LEGACY_LOOP, "approve", "gate", "--edit", "ship 7b instead"
    )

    assert normalize(answered.stdout) == "[T] Approved with changes: Ship candidate-7?\n"
    assert code == 0
    assert "       answer: edit: ship 7b instead\n" in out
    assert named(tmp_path, "gate", "action_start")[-1]["action"] == "echo revised: ship 7b instead"


def test_a_timeout_without_on_timeout_routes_on_no(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    write_loop(tmp_path, "timed", TIMED_LOOP)

    result = run_cli(tmp_path, "run", "timed")

    assert result.returncode == 0, result.stderr
    answered = named(tmp_path, "timed", "approval_answered")
    assert [(e["answer"], e["verdict"]) for e in answered] == [("timeout", "no")]
    assert named(tmp_path, "timed", "route")[-1]["to"] == "declined"


def test_a_timeout_routes_on_timeout_when_the_state_has_one(tmp_path: Path) -> None:
    loop = TIMED_LOOP.replace(
        "    on_no: declined\n", "    on_no: declined\n    on_timeout: merged\n"
    )
    write_loop(tmp_path, "timed", loop)

    assert run_cli(tmp_path, "run", "timed").returncode == 0

    answered = named(tmp_path, "timed", "approval_answered")
    assert [(e["answer"], e["verdict"]) for e in answered] == [("timeout", "timeout")]
    assert named(tmp_path, "timed", "route")[-1]["to"] == "merged"


@pytest.mark.slow
def test_approve_exits_1_with_one_line_when_nothing_waits(tmp_path: Path) -> None:
    write_loop(tmp_path, "timed", TIMED_LOOP)
    assert run_cli(tmp_path, "run", "timed").returncode == 0  # it timed out: nothing waits

    for command in (("approve", "timed"), ("reject", "timed"), ("approve", "never-ran")):
        result = run_cli(tmp_path, *command)
        assert result.returncode == 1
        assert result.stdout == ""
        name = command[1]
        assert normalize(result.stderr) == f"[T] Nothing waits for approval in loop '{name}'\n"


# --- status, notify, validate ----------------------------------------------------------


def test_status_and_status_json_show_the_question(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    write_loop(tmp_path, "gate", LEGACY_LOOP)
    process = start(runs, tmp_path, "run", "gate")
    wait_for(lambda: awaiting(tmp_path, "gate"), "the question")

    lines = run_cli(tmp_path, "status", "gate").stdout.splitlines()
    data = json.loads(run_cli(tmp_path, "status", "gate", "--json").stdout)
    run_cli(tmp_path, "approve", "gate")
    finished(process)

    assert lines[1] == f"Status: awaiting approval (pid {process.pid})"
    assert lines[2:5] == [
        "Current state: review",
        "Awaiting approval: Ship candidate-7?",
        "Answer: ll-loop approve gate [--edit TEXT]  |  ll-loop reject gate [--reason TEXT]",
    ]
    assert data["status"] == "awaiting_approval"
    assert data["approval"]["question"] == "Ship candidate-7?"
    assert data["approval"]["state"] == "review"


def test_the_notify_hook_gets_approval_needed_with_the_question(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    told = tmp_path / "told.txt"
    command = f'echo "$LL_EVENT|$LL_STATUS|$LL_MESSAGE" >> {told}'
    loop = LEGACY_LOOP.replace("initial: build\n", f"initial: build\nnotify: '{command}'\n")
    write_loop(tmp_path, "gate", loop)
    process = start(runs, tmp_path, "run", "gate")
    wait_for(lambda: told.exists() and "approval_needed" in told.read_text(), "the notification")

    run_cli(tmp_path, "approve", "gate")
    finished(process)

    wait_for(lambda: len(told.read_text().splitlines()) == 2, "the end's notification")
    first, end = told.read_text().splitlines()
    assert first == "approval_needed|awaiting_approval|Ship candidate-7?"
    assert end.startswith("completed|completed|done at state 'done' after 3 iterations, ")


def test_validate_warns_of_an_approval_without_timeout_in_an_unattended_loop(
    tmp_path: Path,
) -> None:
    loop = LEGACY_LOOP.replace("initial: build\n", "initial: build\non_handoff: continue\n")
    write_loop(tmp_path, "gate", loop)
    write_loop(tmp_path, "timed", TIMED_LOOP.replace("initial:", "on_handoff: continue\ninitial:"))

    warned = run_cli(tmp_path, "validate", "gate")
    quiet = run_cli(tmp_path, "validate", "timed")

    assert warned.returncode == 0
    assert warned.stderr == (
        "[WARNING] states.review: this approval has no timeout: in a loop with on_handoff: "
        "continue (meant to run unattended) it may wait for ever; give it a timeout: (seconds)\n"
    )
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_validate_refuses_an_approval_without_its_no_route(tmp_path: Path) -> None:
    write_loop(tmp_path, "timed", TIMED_LOOP.replace("    on_no: declined\n", ""))

    result = run_cli(tmp_path, "validate", "timed")

    assert result.returncode == 1
    assert "states.review: a human_approval state needs on_no:" in result.stderr


def test_the_approval_keys_decide_no_dialect(tmp_path: Path) -> None:
    """Our additions never decide a dialect (decisions.md, 2026-11-25)."""
    legacy = load_and_validate(write_loop(tmp_path, "gate", LEGACY_LOOP))
    head = load_and_validate(write_loop(tmp_path, "gate2", HEAD_LOOP.replace("gate", "gate2", 1)))

    assert (legacy.dialect, head.dialect) == ("legacy", "head")
    route = legacy.states["review"].route
    assert route is not None and route.routes == {"yes": "ship", "no": "rework", "edit": "revise"}


# --- durable: kill -9, stop, an answer kept while no runner lives -------------------------


@pytest.mark.slow
def test_kill_9_while_waiting_then_resume_then_approve_runs_no_earlier_state_again(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    write_loop(tmp_path, "gate", LEGACY_LOOP)
    process = start(runs, tmp_path, "run", "gate")
    wait_for(lambda: awaiting(tmp_path, "gate"), "the question")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    resumed = start(runs, tmp_path, "resume", "gate")
    wait_for(lambda: awaiting(tmp_path, "gate"), "the question again")
    assert run_cli(tmp_path, "approve", "gate").returncode == 0
    code, out = finished(resumed)

    assert code == 0
    assert (tmp_path / "builds.txt").read_text() == "run\n"  # build ran once
    assert len(named(tmp_path, "gate", "approval_needed")) == 1
    waited = named(tmp_path, "gate", "approval_waiting")
    assert [(e["state"], e["question"]) for e in waited] == [("review", "Ship candidate-7?")]
    assert [e["state"] for e in named(tmp_path, "gate", "state_enter")] == [
        "build",
        "review",
        "review",  # entered again by the resume: it waits, it does not ask again
        "ship",
    ]
    assert "Loop completed: done" in out


def test_an_answer_given_while_no_runner_lives_is_used_by_the_next_resume(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    write_loop(tmp_path, "gate", HEAD_LOOP)
    process = start(runs, tmp_path, "run", "gate")
    wait_for(lambda: awaiting(tmp_path, "gate"), "the question")
    assert run_cli(tmp_path, "stop", "gate").returncode == 0
    assert finished(process)[0] == 130

    answered = run_cli(tmp_path, "reject", "gate", "--reason", "not now")
    answer_file = tmp_path / ".loops" / ".running" / "gate.approval.json"
    kept = json.loads(answer_file.read_text())
    resumed = run_cli(tmp_path, "resume", "gate")

    assert normalize(answered.stdout) == (
        "[T] Rejected (not now): Ship candidate-7? (kept for: ll-loop resume gate)\n"
    )
    assert (kept["state"], kept["answer"], kept["reason"]) == ("review", "no", "not now")
    assert resumed.returncode == 0, resumed.stderr
    assert not answer_file.exists()  # taken once
    assert named(tmp_path, "gate", "action_start")[-1]["action"] == "echo reworked: not now"
    assert (tmp_path / "builds.txt").read_text() == "run\n"
    assert len(named(tmp_path, "gate", "approval_needed")) == 1


@pytest.mark.slow
def test_the_timeout_counts_from_when_the_question_was_first_asked(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    write_loop(tmp_path, "timed", TIMED_LOOP.replace("timeout: 1", "timeout: 3"))
    process = start(runs, tmp_path, "run", "timed")
    wait_for(lambda: awaiting(tmp_path, "timed"), "the question")
    process.send_signal(signal.SIGINT)  # Ctrl-C
    assert finished(process)[0] == 130
    asked = named(tmp_path, "timed", "approval_needed")[0]
    time.sleep(3.2)  # past the deadline while no runner lives

    started = time.monotonic()
    resumed = run_cli(tmp_path, "resume", "timed")
    took = time.monotonic() - started

    assert resumed.returncode == 0, resumed.stderr
    assert took < 2.5  # it did not wait 3 s more
    waited = named(tmp_path, "timed", "approval_waiting")
    assert [e["timeout_at"] for e in waited] == [asked["timeout_at"]]
    answered = named(tmp_path, "timed", "approval_answered")
    assert [(e["answer"], e["verdict"]) for e in answered] == [("timeout", "no")]


# --- the run's own terminal (tmux) ------------------------------------------------------


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    binary = require_tool(
        lambda: find_program("tmux", "apt-get install tmux"), why="a real terminal for y/n/e"
    )
    server = Tmux(str(binary), tmp_path)
    yield server
    server.kill()


@pytest.mark.parametrize(
    ("keys", "route", "action"),
    [
        (["y"], "ship", "echo shipped"),
        (["n"], "rework", "echo reworked: "),
        (["e", "smaller batch"], "revise", "echo revised: smaller batch"),
    ],
)
def test_a_foreground_run_on_a_terminal_takes_y_n_e_typed_there(
    tmp_path: Path, tmux: Tmux, keys: list[str], route: str, action: str
) -> None:
    write_loop(tmp_path, "gate", LEGACY_LOOP)
    tmux.start(f"{LL_LOOP} run gate; echo run-exit=$?; sleep 600")
    wait_for(lambda: "type y (approve), n (reject) or e" in tmux.screen(), "the prompt")

    for key in keys:
        if key == keys[-1] and len(keys) > 1:
            wait_for(lambda: "your changes (one line):" in tmux.screen(), "the edit prompt")
        tmux.command("send-keys", "-t", "0", key, "Enter")
    wait_for(lambda: "run-exit=0" in tmux.screen(), "the run's end")

    assert named(tmp_path, "gate", "route")[1]["to"] == route
    assert named(tmp_path, "gate", "action_start")[1]["action"] == action


# --- the run core, both dialects ---------------------------------------------------------


class _Inbox:
    def __init__(self, answer: ApprovalAnswer) -> None:
        self.answer: ApprovalAnswer | None = answer

    def take(self, request: object) -> ApprovalAnswer | None:
        answer, self.answer = self.answer, None
        return answer


def _loop(head: bool, **routes: str) -> FSMLoop:
    review: dict[str, object] = {"action_type": "human_approval", "action": "Go?"}
    if head:
        review.update({f"on_{verdict}": target for verdict, target in routes.items()})
    else:
        review["route"] = dict(routes)
    states = {"review": review, **{t: {"terminal": True} for t in set(routes.values())}}
    data = {"name": "core", "initial": "review", "states": states}
    return HeadLoop.from_dict(data) if head else FSMLoop.from_dict(data)


@pytest.mark.parametrize("head", [False, True], ids=["legacy", "head"])
@pytest.mark.parametrize(
    ("answer", "final"),
    [
        (ApprovalAnswer("yes"), "a"),
        (ApprovalAnswer("no"), "b"),
        (ApprovalAnswer("edit", text="x"), "a"),  # no on_edit: an edit approves
        (ApprovalAnswer("timeout"), "b"),  # no on_timeout: a timeout rejects
    ],
)
def test_the_core_routes_each_answer_in_both_dialects(
    head: bool, answer: ApprovalAnswer, final: str
) -> None:
    seen: list[dict[str, object]] = []
    executor = FSMExecutor(_loop(head, yes="a", no="b"), event_callback=seen.append)
    executor.approvals.append(_Inbox(answer))

    result = executor.run()

    assert (result.final_state, result.terminated_by) == (final, "terminal")
    kinds = [event["event"] for event in seen]
    assert kinds == [
        "loop_start",
        "state_enter",
        "approval_needed",
        "approval_answered",
        "route",
        "loop_complete",
    ]
    assert executor.cursor.head.approval is None  # answered: nothing kept for resume


# --- a question asked inside a sub-loop ----------------------------------------------------

PARENT_LOOP = """\
name: parent
initial: prep
max_steps: 20
states:
  prep:
    action: echo prep >> preps.txt
    next: sub
  sub:
    loop: child
    on_yes: done
    on_no: failed
  done:
    terminal: true
  failed:
    terminal: true
"""

CHILD_LOOP = """\
name: child
initial: ask
max_steps: 10
states:
  ask:
    action_type: human_approval
    action: "Child asks?"
    on_yes: ok
    on_no: bad
  ok:
    terminal: true
  bad:
    terminal: true
    failure: true
"""


def test_a_sub_loops_question_is_answered_through_the_parent_and_survives_kill_9(
    tmp_path: Path, runs: list[subprocess.Popen[str]]
) -> None:
    write_loop(tmp_path, "parent", PARENT_LOOP)
    write_loop(tmp_path, "child", CHILD_LOOP)
    process = start(runs, tmp_path, "run", "parent")
    wait_for(lambda: awaiting(tmp_path, "parent"), "the child's question")
    status = run_cli(tmp_path, "status", "parent").stdout.splitlines()
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    answered = run_cli(tmp_path, "reject", "parent")
    resumed = run_cli(tmp_path, "resume", "parent")

    assert status[3] == "Awaiting approval: Child asks?"
    assert normalize(answered.stdout) == (
        "[T] Rejected: Child asks? (kept for: ll-loop resume parent)\n"
    )
    assert resumed.returncode == 1  # `failed` is a HEAD failure terminal
    assert resumed.stderr.startswith("Loop failed: failed (2 iterations")
    assert (tmp_path / "preps.txt").read_text() == "prep\n"
    assert len(named(tmp_path, "parent", "approval_needed")) == 1
    assert named(tmp_path, "parent", "route")[-1]["to"] == "failed"
