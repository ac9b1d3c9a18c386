"""Issue 22 item 1: the one run record (`fsm/store/run_record.py`) and the core's save
requests (`SaveSnapshot`), as fsm-api.md §9 (persistence) and ll-loop-cli.md §4 (the state
file) describe what a state file says and when it is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.cursor_records import HandoffContext, LastResult, LimitWaitRecord
from little_loops.fsm.engine.requests import SaveSnapshot
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.persistence import LoopState, PersistentExecutor, StatePersistence
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.run_record import RunRecord

TWO = FSMLoop.from_dict(
    {
        "name": "two",
        "initial": "a",
        "states": {
            "a": {"action": "echo one", "next": "b"},
            "b": {"action": "echo two", "next": "done"},
            "done": {"terminal": True},
        },
    }
)


def _asked(fsm: FSMLoop) -> list[tuple[str, str, bool]]:
    """The snapshots a run of `fsm` asks for: (after which event, naming which state,
    from a sub-loop)."""
    asked: list[SaveSnapshot] = []
    FSMExecutor(fsm, save_callback=asked.append).run()
    return [(request.after, request.current_state, request.nested) for request in asked]


def test_the_core_asks_for_a_snapshot_at_the_start_and_at_each_route() -> None:
    """§9.3: one snapshot at the start and one per transition, naming the state to run."""
    assert _asked(TWO) == [
        ("loop_start", "a", False),
        ("route", "b", False),
        ("route", "done", False),
    ]


def test_a_sub_loops_snapshots_name_the_parents_state_under_way(tmp_path: Path) -> None:
    """HEAD spec §9b: the child's saves keep the parent's state (the child's place travels
    in `head.sub_loops`)."""
    (tmp_path / "child.yaml").write_text(
        "name: child\ndescription: c\ninitial: one\nstates:\n"
        "  one: {action: 'true', next: end}\n  end: {terminal: true}\n"
    )
    parent = HeadLoop.from_dict(
        {
            "name": "parent",
            "description": "p",
            "initial": "run",
            "states": {
                "run": {"loop": str(tmp_path / "child.yaml"), "on_yes": "done", "on_no": "done"},
                "done": {"terminal": True},
            },
        }
    )
    assert _asked(parent) == [
        ("loop_start", "run", False),
        ("loop_start", "run", True),
        ("route", "run", True),
        ("route", "done", False),
    ]


class _KeptSaves(StatePersistence):
    """The run's files, keeping a copy of each state written."""

    saved: list[dict[str, Any]]

    def save_state(self, state: LoopState, *, durable: bool = True) -> None:
        super().save_state(state, durable=durable)
        self.saved.append(state.to_dict())


def test_the_state_file_is_written_from_the_request_not_read_back(tmp_path: Path) -> None:
    """The store writes what the core's request holds: a route's target, the phase the
    record keeps (`routed`), the iterations finished; the end after `loop_complete`."""
    persistence = _KeptSaves("two", tmp_path / ".loops")
    persistence.saved = []
    PersistentExecutor(TWO, persistence).run()
    shown = [
        (s["current_state"], s["iteration"], s["status"], s.get("phase")) for s in persistence.saved
    ]
    assert shown == [
        ("a", 0, "running", "routed"),
        ("b", 1, "running", "routed"),
        ("done", 2, "running", "routed"),
        ("done", 2, "completed", "routed"),
    ]


def _record(**fields: Any) -> RunRecord:
    return RunRecord(TWO, "vm", **fields)


def test_a_sub_loops_events_leave_the_phase_and_last_evaluation_alone() -> None:
    """HEAD spec §9b: the parent's state is under way while its child runs; a child's
    handoff prompt and usage-limit wait are the run's, though."""
    record = _record()
    record.note({"event": "state_enter", "ts": "t1", "state": "a", "iteration": 1})
    for event in (
        {"event": "route", "ts": "t2", "from": "x", "to": "y", "depth": 1},
        {"event": "evaluate", "ts": "t3", "type": "exit_code", "verdict": "yes", "depth": 1},
        {"event": "handoff_detected", "ts": "t4", "continuation": "go on", "depth": 1},
        {"event": "limit_wait", "ts": "t5", "state": "x", "depth": 1},
    ):
        record.note(event)
    assert (record.phase, record.last_result, record.continuation_prompt, record.status) == (
        "entered",
        None,
        "go on",
        "waiting_for_limit",
    )
    assert record.updated_at == "t5"


def test_a_run_cut_off_inside_a_state_runs_it_again_under_its_number() -> None:
    """§9.3 resume: phase `entered` restores `iteration - 1`; `loop_resume` as the reference."""
    record = _record(status="interrupted", phase="entered")
    resumed = record.resume(
        RunCursor("b", iteration=2), now_ms=10_000, elapsed_ms=4_000, now="T", prompt=None
    )
    assert (resumed.cut_off, resumed.cursor.iteration, resumed.cursor.start_time_ms) == (
        True,
        1,
        6_000,
    )
    assert resumed.event == {
        "event": "loop_resume",
        "ts": "T",
        "loop": "two",
        "from_state": "b",
        "iteration": 2,
    }
    assert (record.status, record.resumed_at, resumed.cursor.handoff_context) == (
        "running",
        "T",
        None,
    )


def test_a_paused_handoff_resumes_with_its_prompt_or_a_new_one() -> None:
    record = _record(status="awaiting_continuation", phase="routed")
    record.continuation_prompt = "say goodbye"
    cursor = RunCursor("wave", iteration=6, handoff_count=1)
    resumed = record.resume(cursor, now_ms=0, elapsed_ms=0, now="T", prompt="wave goodbye")
    assert (resumed.cut_off, resumed.cursor.iteration) == (False, 6)
    assert resumed.cursor.handoff_context == {"prompt": "wave goodbye", "count": 1, "state": "wave"}
    assert resumed.event == {
        "event": "loop_resume",
        "ts": "T",
        "loop": "two",
        "from_state": "wave",
        "iteration": 6,
        "from_handoff": True,
        "continuation_prompt": "wave goodbye",
    }


def test_the_snapshot_caps_a_sub_loops_outputs_too() -> None:
    """The state file's output cap (16 KiB) holds for the places of sub-loops under way,
    on both engines (the Temporal record did not cap them)."""
    cursor = RunCursor("a")
    cursor.head.sub_loops = [{"captured": {"x": {"output": "y" * 20_000}}, "prev_result": None}]
    head = _record().state(cursor, RunGuards(TWO), 0).head
    assert head["sub_loops"][0]["captured"]["x"]["output"].startswith("[... 3616 bytes truncated")


def test_the_cursor_records_have_one_shape_for_the_state_file_and_the_carry() -> None:
    """fsm-api.md §8.3: `handoff_context` is {"prompt", "count", "state"}; `last_result`
    is {"verdict", "details"}, the details being the `evaluate` event's other keys."""
    handoff = HandoffContext("go on", 2, "wave")
    assert handoff.to_dict() == {"prompt": "go on", "count": 2, "state": "wave"}
    assert HandoffContext.from_dict(handoff.to_dict()) == handoff
    assert HandoffContext.from_dict({"prompt": None, "count": "x"}) == HandoffContext("", 0, "")
    assert HandoffContext.from_dict(None) is None
    event = {"event": "evaluate", "ts": "T", "type": "exit_code", "verdict": "yes", "code": 0}
    assert LastResult.from_event(event).to_dict() == {"verdict": "yes", "details": {"code": 0}}


def test_a_saved_usage_limit_wait_reads_back_as_it_was_written() -> None:
    """The state file's `limit_wait` (ll-loop-cli.md §4.2): the keys in their order, the
    optional ones only when set, an integer `until` kept an integer."""
    saved = {
        "state": "work",
        "until": 1_800_000_000,
        "message": "limit reached",
        "exact_reset": True,
        "resets_at": 1_800_000_000,
        "session_id": "s-1",
        "since": 1_799_990_000.5,
    }
    record = LimitWaitRecord.from_dict(saved)
    assert record is not None and list(record.to_dict().items()) == list(saved.items())
    fresh = LimitWaitRecord("work", 10.0, "m")
    assert fresh.to_dict() == {"state": "work", "until": 10.0, "message": "m", "exact_reset": False}
    assert LimitWaitRecord.from_dict(None) is None
