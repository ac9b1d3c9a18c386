"""`ll-loop approve` / `reject` and what `status` says of a waiting question, in this
process (docs/approvals.md; issue 26 item 2), and the y/n/e a foreground run reads on
its terminal (`cli.approval_prompt`).

The waiting run is the state file a run whose process is gone leaves (`head.approval`):
the answer is kept for `ll-loop resume`, which then runs the route the answer chose.
(test_human_approval.py drives live runs as subprocesses, where coverage is not kept.)
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest
from fixtures.cli_support import cli_in_process, dead_pid, save_state, write_loop

from little_loops.cli import main_loop
from little_loops.cli.approval_prompt import TerminalApprovals
from little_loops.cli.approval_text import timeout_phrase
from little_loops.fsm.engine.requests import AwaitApproval
from little_loops.fsm.model.approval import ApprovalAnswer, PendingApproval

GATE_LOOP = """\
name: gate
initial: review
states:
  review:
    action_type: human_approval
    action: "Ship it?"
    on_yes: ship
    on_no: rework
    on_edit: revise
  ship:
    action: echo shipped > outcome.txt
    next: done
  rework:
    action: "echo reworked: ${captured.review.reason} > outcome.txt"
    next: done
  revise:
    action: "echo revised: ${captured.review.edit} > outcome.txt"
    next: done
  done:
    terminal: true
"""

QUESTION = {"state": "review", "question": "Ship\n   it?", "asked_at": 1700000000.5}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _waiting_run(tmp_path: Path, **question: object) -> None:
    """`gate` stopped at `review` while its question waited (its process is gone)."""
    write_loop(tmp_path, "gate", GATE_LOOP)
    save_state(
        "gate",
        "awaiting_approval",
        current_state="review",
        iteration=1,
        pid=dead_pid(),
        head={"approval": {**QUESTION, **question}},
    )


def _answer_file(tmp_path: Path) -> dict[str, object]:
    path = tmp_path / ".loops" / ".running" / "gate.approval.json"
    return dict(json.loads(path.read_text()))


def test_approve_keeps_the_answer_for_resume_which_routes_on_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/approvals.md: an answer given while no runner lives is taken by the resume."""
    _waiting_run(tmp_path)

    assert cli_in_process(capsys, "approve", "gate") == (
        0,
        "[T] Approved: Ship it? (kept for: ll-loop resume gate)\n",
        "",
    )
    assert _answer_file(tmp_path) == {
        "state": "review",
        "asked_at": 1700000000.5,
        "answer": "yes",
    }
    assert main_loop(["resume", "gate", "-q"]) == 0
    assert (tmp_path / "outcome.txt").read_text() == "shipped\n"
    assert not (tmp_path / ".loops" / ".running" / "gate.approval.json").exists()


def test_reject_with_a_reason_routes_on_no_with_the_reason_captured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting_run(tmp_path)

    assert cli_in_process(capsys, "reject", "gate", "--reason", "too risky") == (
        0,
        "[T] Rejected (too risky): Ship it? (kept for: ll-loop resume gate)\n",
        "",
    )
    assert _answer_file(tmp_path)["reason"] == "too risky"
    assert main_loop(["resume", "gate", "-q"]) == 0
    assert (tmp_path / "outcome.txt").read_text() == "reworked: too risky\n"


def test_approve_with_an_edit_routes_on_edit_with_the_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting_run(tmp_path)

    assert cli_in_process(capsys, "approve", "gate", "--edit", "ship 7b")[1] == (
        "[T] Approved with changes: Ship it? (kept for: ll-loop resume gate)\n"
    )
    assert _answer_file(tmp_path) == {
        "state": "review",
        "asked_at": 1700000000.5,
        "answer": "edit",
        "text": "ship 7b",
    }
    assert main_loop(["resume", "gate", "-q"]) == 0
    assert (tmp_path / "outcome.txt").read_text() == "revised: ship 7b\n"


def test_a_plain_reject_says_rejected_without_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting_run(tmp_path)

    assert cli_in_process(capsys, "reject", "gate")[:2] == (
        0,
        "[T] Rejected: Ship it? (kept for: ll-loop resume gate)\n",
    )
    assert "reason" not in _answer_file(tmp_path)


@pytest.mark.parametrize("command", ["approve", "reject"])
def test_nothing_waiting_is_exit_1_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """docs/approvals.md: exit 1 with one line when nothing waits: a loop that never
    ran, and a run whose state holds no question."""
    assert cli_in_process(capsys, command, "gate") == (
        1,
        "",
        "[T] Nothing waits for approval in loop 'gate'\n",
    )
    save_state("gate", "completed", current_state="done")
    assert cli_in_process(capsys, command, "gate") == (
        1,
        "",
        "[T] Nothing waits for approval in loop 'gate'\n",
    )
    assert not (tmp_path / ".loops" / ".running" / "gate.approval.json").exists()


def test_approve_of_a_live_run_does_not_mention_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The runner that wrote the state is alive (here: this process, no lock file): the
    runner takes the answer itself, so no `ll-loop resume` hint."""
    _waiting_run(tmp_path)
    save_state(
        "gate",
        "awaiting_approval",
        current_state="review",
        pid=os.getpid(),
        head={"approval": QUESTION},
    )

    assert cli_in_process(capsys, "approve", "gate")[:2] == (0, "[T] Approved: Ship it?\n")


def test_status_shows_the_question_its_timeout_and_how_to_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    until = time.time() + 3 * 3600 + 600
    _waiting_run(tmp_path, until=until)
    pending = PendingApproval("review", "Ship it?", 1700000000.5, until)

    code, out, _ = cli_in_process(capsys, "status", "gate")
    data = json.loads(cli_in_process(capsys, "status", "gate", "--json")[1])

    assert code == 0
    lines = out.splitlines()
    start = lines.index("Awaiting approval: Ship it?")
    assert lines[start - 1 : start + 3] == [
        "Current state: review",
        "Awaiting approval: Ship it?",
        f"Approval timeout: {timeout_phrase(pending)}",
        "Answer: ll-loop approve gate [--edit TEXT]  |  ll-loop reject gate [--reason TEXT]",
    ]
    # `at <clock> (<zone>), 3h10m`: a second may pass between here and `status`
    phrase = r"at (\w{3} \d{1,2}, )?\d{1,2}:\d\d[ap]m \(.+\), 3h(9|10)m"
    assert re.fullmatch(phrase, timeout_phrase(pending))
    assert data["approval"] == {**QUESTION, "until": until}


def test_status_of_a_question_without_timeout_has_no_timeout_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _waiting_run(tmp_path)

    out = cli_in_process(capsys, "status", "gate")[1]

    assert "Awaiting approval: Ship it?" in out
    assert "Approval timeout" not in out


# --- the terminal of a foreground run: y / n / e typed there ------------------------------


@pytest.fixture
def terminal() -> Iterator[tuple[TextIO, TextIO]]:
    """A pipe standing in for the terminal: (what the run reads, what the person types)."""
    read_fd, write_fd = os.pipe()
    reader, writer = os.fdopen(read_fd, "r"), os.fdopen(write_fd, "w")
    yield reader, writer
    reader.close()
    if not writer.closed:
        writer.close()


REQUEST = AwaitApproval("review", "Ship it?", 1.0)
PROMPT = "  type y (approve), n (reject) or e (approve with changes), then Enter\n"


def _typed(writer: TextIO, text: str) -> None:
    writer.write(text)
    writer.flush()


def test_the_prompt_is_printed_once_per_question_and_nothing_typed_is_no_answer(
    terminal: tuple[TextIO, TextIO], capsys: pytest.CaptureFixture[str]
) -> None:
    approvals = TerminalApprovals(terminal[0])

    assert (approvals.take(REQUEST), approvals.take(REQUEST)) == (None, None)
    assert capsys.readouterr().out == PROMPT
    assert approvals.take(AwaitApproval("review", "Ship it?", 2.0)) is None  # asked again
    assert capsys.readouterr().out == PROMPT


@pytest.mark.parametrize(
    ("typed", "answer"),
    [
        ("y\n", ApprovalAnswer("yes")),
        ("YES\n", ApprovalAnswer("yes")),
        ("n\n", ApprovalAnswer("no")),
    ],
)
def test_y_and_n_typed_answer_at_once(
    terminal: tuple[TextIO, TextIO], typed: str, answer: ApprovalAnswer
) -> None:
    approvals = TerminalApprovals(terminal[0])
    _typed(terminal[1], typed)

    assert approvals.take(REQUEST) == answer


def test_e_asks_for_the_changes_on_the_next_line(
    terminal: tuple[TextIO, TextIO], capsys: pytest.CaptureFixture[str]
) -> None:
    approvals = TerminalApprovals(terminal[0])
    _typed(terminal[1], "e\nship 7b instead\n")

    assert approvals.take(REQUEST) == ApprovalAnswer("edit", text="ship 7b instead")
    assert capsys.readouterr().out == PROMPT + "  your changes (one line):\n"


def test_another_word_asks_again_and_end_of_input_stops_reading(
    terminal: tuple[TextIO, TextIO], capsys: pytest.CaptureFixture[str]
) -> None:
    approvals = TerminalApprovals(terminal[0])
    _typed(terminal[1], "maybe\n")

    assert approvals.take(REQUEST) is None
    assert capsys.readouterr().out == PROMPT + "  type y, n or e\n"
    terminal[1].close()
    assert approvals.take(REQUEST) is None  # end of input: answers come from approve/reject
    assert approvals.take(REQUEST) is None  # and it is not read again


def test_an_edit_without_on_edit_approves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/approvals.md §1: `on_edit` — without it an edit approves (`on_yes`)."""
    _waiting_run(tmp_path)
    write_loop(tmp_path, "gate", GATE_LOOP.replace("    on_edit: revise\n", ""))

    assert cli_in_process(capsys, "approve", "gate", "--edit", "ship 7b")[0] == 0
    assert main_loop(["resume", "gate", "-q"]) == 0
    assert (tmp_path / "outcome.txt").read_text() == "shipped\n"


@pytest.mark.parametrize(
    ("on_timeout", "outcome"),
    [("", "reworked:\n"), ("    on_timeout: ship\n", "shipped\n")],
)
def test_a_resume_after_the_deadline_routes_the_timeout_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], on_timeout: str, outcome: str
) -> None:
    """docs/approvals.md §4: the timeout counts from when the question was first asked;
    without `on_timeout` a timeout routes `on_no`."""
    _waiting_run(tmp_path, until=time.time() - 60)
    write_loop(tmp_path, "gate", GATE_LOOP.replace("    on_edit: revise\n", on_timeout))

    assert main_loop(["resume", "gate", "-q"]) == 0
    assert (tmp_path / "outcome.txt").read_text() == outcome
    events = (tmp_path / ".loops" / ".running" / "gate.events.jsonl").read_text()
    answered = [json.loads(line) for line in events.splitlines() if "approval_answered" in line]
    assert [(event["answer"], event["state"]) for event in answered] == [("timeout", "review")]
    assert '"approval_needed"' not in events  # not asked twice
