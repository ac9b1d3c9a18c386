"""run_guards: what the executor asks the guards after each step."""

from __future__ import annotations

from little_loops.fsm.run_guards import RunGuards, StepEnding, ending_text, visit_limit_message
from little_loops.fsm.schema import FSMLoop, StateConfig


def guards(**top: object) -> RunGuards:
    data = {"name": "g", "initial": "a", "states": {"a": {"terminal": True}}, **top}
    return RunGuards(FSMLoop.from_dict(data))


def test_settings_come_from_the_loop() -> None:
    assert guards().stall.threshold == 3
    assert guards(stall_threshold=0).stall.threshold == 0


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
    assert run.note_ending("s", 3, failing) == (
        "state 's' ended with verdict 'failure' and the same output 2 times in a row; "
        "it said:\n  | same"
    )


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
