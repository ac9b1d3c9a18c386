"""The records of a loop read in little-loops' current dialect (HEAD), and what a HEAD run
keeps for resume (spec/ll-head-dialect.md §2, §7, §9b).

The legacy records keep exactly the reference's fields; a HEAD loop is built into
subclasses that add HEAD's keys, so code written for aada157e1 that lists the fields of
`FSMLoop` or `StateConfig` sees what it always saw.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.model.head_loop import (
    HeadEvaluateConfig,
    HeadLoop,
    HeadStateConfig,
    is_head,
    loop_from_dict,
)
from little_loops.fsm.model.head_parts import ParameterSpec, ThrottleConfig, verdict_spellings
from little_loops.fsm.persistence import PersistentExecutor, StatePersistence
from little_loops.fsm.schema import FSMLoop, StateConfig
from little_loops.fsm.temporal.payloads import cursor_from_dict, cursor_to_dict

HEAD_LOOP: dict[str, Any] = {
    "name": "release",
    "description": "Draft and publish.",
    "category": "docs",
    "labels": ["release"],
    "visibility": "internal",
    "initial": "draft",
    "max_steps": 12,
    "max_iterations": 2,
    "parameters": {"version": {"type": "string", "required": True}},
    "input_key": "version",
    "required_inputs": ["version"],
    "config": {"automation": {"max_continuations": 9}},
    "states": {
        "draft": {
            "loop": "writers/draft",
            "with": {"version": "${context.version}"},
            "on_yes": "publish",
            "on_no": "failed",
            "on_timeout": "failed",
        },
        "publish": {
            "action": "echo ok",
            "evaluate": {"type": "output_contains", "pattern": "ok", "error_patterns": ["E:"]},
            "on_success": "ignored",
            "on_yes": "done",
            "on_partial": "$current",
            "max_retries": 2,
            "on_retry_exhausted": "failed",
            "throttle": {"hard_max": 20},
        },
        "gate": {
            "fragment": "counted_gate",
            "with": {"key": "lint"},
            "parameters": {"key": {"type": "string", "required": True}},
            "action": "echo ${param.key}",
            "next": "done",
        },
        "done": {"terminal": True},
        "failed": {"terminal": True},
        "aborted": {"terminal": True, "failure": False},
    },
}


def test_the_legacy_records_keep_the_reference_fields_and_say_legacy() -> None:
    """The reference's `FSMLoop` has no dialect field: `dialect` is a class constant."""
    assert "dialect" not in [item.name for item in fields(FSMLoop)]
    assert FSMLoop.dialect == "legacy"
    assert not is_head(FSMLoop(name="x", initial="a", states={"a": StateConfig(terminal=True)}))


def test_a_head_loop_folds_aliases_and_marks_failure_terminals_by_name() -> None:
    loop = HeadLoop.from_dict(HEAD_LOOP)

    assert is_head(loop) and loop.dialect == "head"
    publish = loop.states["publish"]
    assert isinstance(publish, HeadStateConfig)
    assert publish.on_success == "done"  # on_yes wins over on_success (§2.2)
    assert publish.on_verdicts == {"partial": "$current"}
    assert publish.throttle == ThrottleConfig(normal_max=3, warn_max=8, hard_max=20)
    assert isinstance(publish.evaluate, HeadEvaluateConfig)
    assert publish.evaluate.error_patterns == ["E:"]
    assert loop.states["draft"].on_failure == "failed"
    assert loop.head_state("draft") is not None
    assert loop.head_state("draft").with_ == {"version": "${context.version}"}  # type: ignore[union-attr]
    assert loop.head_state("draft").on_verdicts == {"timeout": "failed"}  # type: ignore[union-attr]
    assert [name for name, state in loop.states.items() if state.failure] == ["failed"]


def test_head_caps_map_onto_the_legacy_step_counter() -> None:
    """`max_steps` is the step cap (kept in `max_iterations`); `max_iterations` beside it is
    the pass cap; written alone it is the step cap (§7.3, §7.4)."""
    loop = HeadLoop.from_dict(HEAD_LOOP)
    assert (loop.max_steps, loop.max_iterations, loop.max_passes) == (12, 12, 2)

    without_steps = {key: value for key, value in HEAD_LOOP.items() if key != "max_steps"}
    alone = HeadLoop.from_dict({**without_steps, "max_iterations": 7})
    assert (alone.max_steps, alone.max_passes) == (7, None)
    neither = {key: value for key, value in without_steps.items() if key != "max_iterations"}
    assert (HeadLoop.from_dict(neither).max_steps, HeadLoop.from_dict(neither).max_passes) == (
        50,
        None,
    )


def test_a_fragment_state_keeps_its_bindings_apart_from_sub_loop_bindings() -> None:
    gate = HeadLoop.from_dict(HEAD_LOOP).head_state("gate")

    assert gate is not None
    assert (gate.fragment, gate.with_) == ("counted_gate", None)
    assert gate.fragment_bindings == {"key": "lint"}
    assert gate.fragment_parameters == {"key": ParameterSpec(type="string", required=True)}


def test_config_sets_max_continuations_and_metadata_is_kept() -> None:
    loop = HeadLoop.from_dict(HEAD_LOOP)

    assert loop.max_continuations == 9
    assert (loop.description, loop.category, loop.labels, loop.visibility) == (
        "Draft and publish.",
        "docs",
        ["release"],
        "internal",
    )
    assert loop.parameters == {"version": ParameterSpec(type="string", required=True)}
    assert (loop.input_key, loop.required_inputs) == ("version", ["version"])


def test_a_head_loop_survives_the_round_trip_a_temporal_payload_makes() -> None:
    loop = HeadLoop.from_dict(HEAD_LOOP)

    again = loop_from_dict(loop.to_dict(), loop.dialect)

    assert isinstance(again, HeadLoop)
    assert again == loop
    assert again.to_dict()["max_steps"] == 12
    legacy = FSMLoop.from_dict({"name": "x", "initial": "a", "states": {"a": {"terminal": True}}})
    assert type(loop_from_dict(legacy.to_dict(), "legacy")) is FSMLoop


def test_verdict_spellings_pair_the_two_vocabularies() -> None:
    assert verdict_spellings("yes") == ("yes", "success")
    assert verdict_spellings("failure") == ("failure", "no")
    assert verdict_spellings("partial") == ("partial",)


def test_head_memory_saves_only_what_is_set() -> None:
    memory = HeadMemory()
    assert memory.to_dict() == {} and not memory.anything

    memory.retry_counts["fix"] = 2
    memory.previous_state = "fix"
    memory.sub_loops.append({"parent_state": "draft", "current_state": "write"})

    assert memory.to_dict() == {
        "previous_state": "fix",
        "retry_counts": {"fix": 2},
        "sub_loops": [{"parent_state": "draft", "current_state": "write"}],
    }
    assert HeadMemory.from_dict({**memory.to_dict(), "from_a_newer_version": 1}) == memory
    copied = memory.copy()
    copied.retry_counts["fix"] = 5
    assert memory.retry_counts["fix"] == 2


def test_the_cursor_carries_head_memory_through_a_temporal_carry() -> None:
    cursor = RunCursor("fix")
    assert "head" not in cursor_to_dict(cursor)  # a legacy run's carry is unchanged

    cursor.head.passes = 3
    again = cursor_from_dict(json.loads(json.dumps(cursor_to_dict(cursor))))

    assert again.head.passes == 3
    assert cursor.copy().head is not cursor.head


def _legacy_loop() -> FSMLoop:
    return FSMLoop.from_dict(
        {
            "name": "count",
            "initial": "a",
            "states": {"a": {"action": "true", "next": "done"}, "done": {"terminal": True}},
        }
    )


def test_a_legacy_run_writes_no_head_key(tmp_path: Path) -> None:
    executor = PersistentExecutor(_legacy_loop(), loops_dir=tmp_path / ".loops")

    executor.run()

    saved = json.loads((tmp_path / ".loops/.running/count.state.json").read_text())
    assert "head" not in saved


def test_a_saved_head_record_is_restored_on_resume(tmp_path: Path) -> None:
    loops_dir = tmp_path / ".loops"
    persistence = StatePersistence("count", loops_dir)
    persistence.initialize()
    state = {
        "loop_name": "count",
        "current_state": "a",
        "iteration": 1,
        "captured": {},
        "prev_result": None,
        "last_result": None,
        "started_at": "2026-11-25T00:00:00+00:00",
        "updated_at": "2026-11-25T00:00:01+00:00",
        "status": "interrupted",
        "head": {"retry_counts": {"a": 1}, "previous_state": "a"},
    }
    (loops_dir / ".running/count.state.json").write_text(json.dumps(state))
    executor = PersistentExecutor(_legacy_loop(), loops_dir=loops_dir)

    cursor = executor._saved_cursor(persistence.load_state(), cut_off=False)  # type: ignore[arg-type]

    assert cursor.head.retry_counts == {"a": 1}
    assert cursor.head.previous_state == "a"
