"""run_guards: what the executor asks the guards after each step."""

from __future__ import annotations

from unittest.mock import ANY

from little_loops.fsm.engine.run_guards import (
    RunGuards,
    Stall,
    StepEnding,
    ending_text,
    visit_limit_message,
)
from little_loops.fsm.schema import FSMLoop, StateConfig


def guards(**top: object) -> RunGuards:
    data = {"name": "g", "initial": "a", "states": {"a": {"terminal": True}}, **top}
    return RunGuards(FSMLoop.from_dict(data))


def test_settings_come_from_the_loop() -> None:
    assert guards(stall_threshold=3).stall.threshold == 3
    assert guards(stall_threshold=0).stall.threshold == 0
    assert guards(stall_threshold=5, on_handoff="continue").stall.threshold == 5
    assert guards(stall_threshold=0, on_handoff="continue").stall.threshold == 0


def test_the_stall_guard_is_off_unless_asked_for_as_in_the_reference() -> None:
    """Faithful by default: the reference has no stall guard, so a loop that does not set
    `stall_threshold` never stalls; an unattended (`on_handoff: continue`) loop gets 3."""
    assert guards().stall.threshold == 0
    assert guards(on_handoff="pause").stall.threshold == 0
    assert guards(on_handoff="continue").stall.threshold == 3
    run = guards()
    silent_check = StepEnding("failure", "", ran_action=True, exit_code=1)
    assert [run.note_ending("b", n, silent_check) for n in range(20)] == [None] * 20
    assert run.stall.streaks == {}


def test_may_enter_until_max_visits() -> None:
    run = guards()
    limited, free = StateConfig(max_visits=2), StateConfig()
    assert run.may_enter("s", limited)
    run.visits.enter("s")
    assert run.may_enter("s", limited)
    run.visits.enter("s")
    assert not run.may_enter("s", limited)
    assert run.may_enter("s", free)


def test_next_states_neither_stall_nor_reset_a_streak() -> None:
    run = guards(stall_threshold=2)
    failing = StepEnding("failure", "same", ran_action=True, exit_code=1)
    assert run.note_ending("s", 1, failing) is None
    assert run.note_ending("s", 2, StepEnding(None, "anything", ran_action=True)) is None
    stall = run.note_ending("s", 3, failing)
    assert stall is not None
    assert (stall.message, stall.recover_to) == (
        "state 's' ended with verdict 'failure' and the same output 2 times in a row; "
        "it said:\n  | same",
        None,
    )


def test_on_stall_is_followed_once_per_streak() -> None:
    run = guards(stall_threshold=2, on_stall="recover")
    failing = StepEnding("failure", "same", ran_action=True, exit_code=1)
    assert run.note_ending("s", 1, failing) is None
    first = run.note_ending("s", 2, failing)
    assert first is not None and first.recover_to == "recover"
    run.note_ending("recover", 3, StepEnding(None, "tried something", ran_action=True))
    again = run.note_ending("s", 4, failing)
    assert again is not None and again.recover_to is None


def test_a_new_streak_after_a_recovery_may_recover_again() -> None:
    run = guards(stall_threshold=2, on_stall="recover")
    failing = StepEnding("failure", "same", ran_action=True, exit_code=1)
    other = StepEnding("failure", "other", ran_action=True, exit_code=1)
    run.note_ending("s", 1, failing)
    assert run.note_ending("s", 2, failing) is not None
    run.note_ending("s", 3, other)  # the recovery changed what `s` says
    assert run.note_ending("s", 4, other) == Stall(ANY, "recover")


def test_errors_without_a_message() -> None:
    run = guards()
    run.note_ending("act", 1, StepEnding("error", "", ran_action=True, exit_code=127))
    run.note_ending("decide", 2, StepEnding("error", None, {"value": 1}))
    assert [(entry.state, entry.message) for entry in run.errors.entries] == [
        ("act", "exit code 127"),
        ("decide", "the state ended with the verdict 'error'"),
    ]


def test_quiet_failures_and_successes_are_not_errors() -> None:
    run = guards()
    run.note_ending("s", 1, StepEnding("failure", "", ran_action=True, exit_code=1))
    run.note_ending("s", 2, StepEnding("success", "", stderr="warning: x", ran_action=True))
    run.note_fatal_error("s", 3, "disk full", "")
    assert [entry.source for entry in run.errors.entries] == ["fatal_error"]


def test_ending_text_is_stable() -> None:
    assert ending_text({"b": 1, "a": {"y": 2, "x": 1}}) == '{"a": {"x": 1, "y": 2}, "b": 1}'
    assert ending_text({"path": object.__name__}) == '{"path": "object"}'


def test_visit_limit_message() -> None:
    assert visit_limit_message("fix", 4, 3) == "state 'fix' was entered 4 times (max_visits: 3)"
    assert visit_limit_message("fix", 3, 3, cycled=True) == (
        "state 'fix' was entered 3 times (max_visits: 3), and on_max_visits led back to it"
    )
