"""FSMExecutor with loop guards, `on_handoff: continue`, return metadata and checkpoints.

Real bash actions (DefaultActionRunner) in a temporary working directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.executor import ExecutionResult, FSMExecutor
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.process.checkpoint import CheckpointResult
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.signal_detector import SignalDetector

DONE = {"terminal": True}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append({k: v for k, v in event.items() if k != "ts"})

    def of(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]

    def entered(self) -> list[str]:
        return [event["state"] for event in self.of("state_enter")]


def make_loop(states: dict[str, Any], **top: Any) -> FSMLoop:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    return FSMLoop.from_dict(data)


def run(
    states: dict[str, Any], *, detector: bool = False, **top: Any
) -> tuple[ExecutionResult, Recorder, FSMExecutor]:
    recorder = Recorder()
    fsm = make_loop(states, **top)
    executor = FSMExecutor(
        fsm, event_callback=recorder, signal_detector=SignalDetector() if detector else None
    )
    return executor.run(), recorder, executor


# --- on_handoff: continue ----------------------------------------------------------------

HANDS_OFF_TWICE = {
    "work": {
        "action": (
            'if [ ${handoff.count} -lt 2 ]; then echo "CONTEXT_HANDOFF: part $(( ${handoff.count}'
            ' + 2 ))"; else echo "finished ${handoff.prompt} (${handoff.state})"; fi'
        ),
        "capture": "last",
        "on_success": "done",
    },
    "done": DONE,
}


def test_continue_reruns_the_state_at_once_with_the_prompt() -> None:
    result, events, executor = run(HANDS_OFF_TWICE, detector=True, on_handoff="continue")
    assert (result.terminated_by, result.iterations, result.final_state) == ("terminal", 3, "done")
    assert result.handoff is False
    assert result.captured["last"]["output"] == "finished part 3 (work)\n"
    assert executor.handoff_count == 2
    assert [(e["event"], e.get("count")) for e in events.events if "handoff" in e["event"]] == [
        ("handoff_detected", None),
        ("handoff_continued", 1),
        ("handoff_detected", None),
        ("handoff_continued", 2),
    ]
    assert events.of("handoff_continued")[1] == {
        "event": "handoff_continued",
        "state": "work",
        "iteration": 2,
        "count": 2,
        "continuation": "part 3",
    }
    assert events.entered() == ["work", "work", "work"]


def test_continue_goes_through_a_handler_with_that_behaviour() -> None:
    recorder = Recorder()
    executor = FSMExecutor(
        make_loop(HANDS_OFF_TWICE, on_handoff="pause"),  # the handler decides, not the file
        event_callback=recorder,
        signal_detector=SignalDetector(),
        handoff_handler=HandoffHandler(HandoffBehavior.CONTINUE),
    )
    assert executor.run().terminated_by == "terminal"
    assert executor.handoff_result is None  # nothing was handed to anyone


def test_continue_stops_at_max_continuations_and_waits_for_a_person() -> None:
    states = {
        "work": {"action": 'echo "CONTEXT_HANDOFF: step ${handoff.count}"', "next": "done"},
        "done": DONE,
    }
    result, events, _ = run(states, detector=True, on_handoff="continue", max_continuations=2)
    assert (result.terminated_by, result.iterations) == ("handoff", 3)
    assert (result.handoff, result.continuations_exhausted) == (True, True)
    assert result.continuation_prompt == "step 2"
    assert result.error == "max_continuations (2) reached: this handoff is not continued"
    assert len(events.of("handoff_detected")) == 3
    assert len(events.of("handoff_continued")) == 2


def test_a_slash_command_gets_the_continued_prompt_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    # The first session runs out of context; the second one reports what it was given.
    claude.write_text(
        '#!/bin/bash\nif [ -f seen ]; then printf "%s" "${@: -1}" > prompt.txt; exit 0; fi\n'
        'touch seen; echo "CONTEXT_HANDOFF: resume at phase 3"\n'
    )
    claude.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    states = {"work": {"action": "/implement plan.md", "on_success": "done"}, "done": DONE}
    result, _, _ = run(states, detector=True, on_handoff="continue", llm={"enabled": False})
    assert result.terminated_by == "terminal"
    assert (tmp_path / "prompt.txt").read_text() == "/implement plan.md\n\nresume at phase 3"


# --- stall detection ---------------------------------------------------------------------

FAILS_THE_SAME_WAY = {
    "check": {
        "action": 'echo "2026-02-17T10:0${state.iteration}:00Z FAILED test_login"; exit 1',
        "on_success": "done",
        "on_failure": "fix",
    },
    # `fix` says the same every time and changes no file: nothing moves.
    "fix": {"action": "echo patched", "next": "check"},
    "done": DONE,
}


def test_the_same_failure_three_times_stalls_well_before_max_iterations() -> None:
    result, events, executor = run(FAILS_THE_SAME_WAY, max_iterations=50, stall_threshold=3)
    assert (result.terminated_by, result.iterations, result.final_state) == ("stalled", 5, "check")
    assert result.error == (
        "state 'check' ended with verdict 'failure' and the same output 3 times in a row; "
        "it said:\n  | 2026-02-17T10:05:00Z FAILED test_login"  # the latest (issue 23.25)
    )
    assert events.of("loop_complete")[0]["terminated_by"] == "stalled"
    # The stalled state is not routed: the run stops where it stalled.
    assert [(e["from"], e["to"]) for e in events.of("route")][-1] == ("fix", "check")
    assert executor.guards.stall.streaks["check"].count == 3


def test_stall_threshold_zero_runs_to_max_iterations() -> None:
    result, _, _ = run(FAILS_THE_SAME_WAY, max_iterations=7, stall_threshold=0)
    assert (result.terminated_by, result.iterations) == ("max_iterations", 7)


def test_without_stall_threshold_an_ordinary_loop_runs_as_in_the_reference() -> None:
    """The reference has no stall guard: a loop that does not ask for one runs to its
    `max_iterations`, however the same its endings are."""
    result, _, executor = run(FAILS_THE_SAME_WAY, max_iterations=12)
    assert (result.terminated_by, result.iterations) == ("max_iterations", 12)
    assert executor.guards.stall.streaks == {}


def test_a_state_in_between_whose_output_changes_is_progress() -> None:
    moving_fix = {
        **FAILS_THE_SAME_WAY,
        "fix": {"action": "echo patched ${state.iteration}", "next": "check"},
    }
    result, _, _ = run(moving_fix, max_iterations=12, stall_threshold=3)
    assert (result.terminated_by, result.iterations) == ("max_iterations", 12)


def test_on_stall_routes_once_then_the_run_stalls() -> None:
    states = {
        **FAILS_THE_SAME_WAY,
        "recover": {"action": "echo giving it a nudge", "next": "check"},
    }
    result, events, _ = run(states, max_iterations=50, stall_threshold=3, on_stall="recover")
    assert (result.terminated_by, result.final_state) == ("stalled", "check")
    assert [e["to"] for e in events.of("route") if e.get("reason") == "stalled"] == ["recover"]
    assert events.entered() == ["check", "fix", "check", "fix", "check", "recover", "check"]
    assert result.error is not None and "4 times in a row" in result.error


def test_each_new_streak_gets_its_own_recovery() -> None:
    states = {
        "check": {
            "action": "cat recovered 2>/dev/null || echo same; exit 1",
            "on_success": "done",
            "on_failure": "check",
        },
        "recover": {"action": "echo fixed > recovered", "next": "check"},
        "done": DONE,
    }
    result, events, _ = run(states, max_iterations=30, stall_threshold=2, on_stall="recover")
    assert (result.terminated_by, result.final_state) == ("stalled", "check")
    # "same" twice: recover; "fixed" twice (a new streak): recover again; it changed
    # nothing the second time, so the next identical "fixed" stops the run.
    assert events.entered() == ["check", "check", "recover", "check", "check", "recover", "check"]


def test_a_higher_threshold_waits_longer() -> None:
    result, _, _ = run(FAILS_THE_SAME_WAY, stall_threshold=4)
    assert (result.terminated_by, result.iterations) == ("stalled", 7)


def test_output_that_changes_is_progress_not_a_stall(tmp_path: Path) -> None:
    states = {
        "check": {
            # One failing test fewer each time: the counts are kept by the fingerprint.
            "action": 'echo "$(( 10 - ${state.iteration} )) tests failing"; exit 1',
            "on_failure": "$current",
            "on_success": "done",
        },
        "done": DONE,
    }
    result, _, _ = run(states, max_iterations=6)
    assert result.terminated_by == "max_iterations"


def test_the_same_error_message_stalls_although_the_output_differs() -> None:
    states = {
        "report": {
            "action": "echo attempt ${state.iteration}",
            "evaluate": {"type": "return_metadata", "path": "missing.json"},
            "route": {"success": "done", "_error": "$current"},
        },
        "done": DONE,
    }
    result, _, executor = run(states, stall_threshold=3)
    assert (result.terminated_by, result.iterations) == ("stalled", 3)
    assert result.error == (
        "state 'report' ended with verdict 'error' and the same output 3 times in a row; "
        "it said:\n  | Return metadata file not found: missing.json"
    )
    assert [entry.message for entry in executor.guards.errors.entries] == [
        "Return metadata file not found: missing.json"
    ] * 3


def test_the_same_continuation_prompt_again_and_again_stalls() -> None:
    states = {"work": {"action": 'echo "CONTEXT_HANDOFF: try again"', "next": "done"}, "done": DONE}
    result, events, _ = run(states, detector=True, on_handoff="continue", max_continuations=10)
    assert (result.terminated_by, result.iterations) == ("stalled", 3)
    assert result.error == (
        "state 'work' ended with verdict 'handoff' and the same output 3 times in a row; "
        "it said:\n  | try again"
    )
    assert len(events.of("handoff_continued")) == 2


def test_healthy_repetition_never_stalls() -> None:
    # A maintain loop re-checking a healthy system ends only at its limit.
    states = {"check": {"action": "echo ok", "on_success": "good"}, "good": DONE}
    result, _, _ = run(states, maintain=True, max_iterations=12)
    assert result.terminated_by == "max_iterations"


def test_a_decision_state_is_judged_by_its_details() -> None:
    states = {
        "start": {"action": "printf 0", "capture": "n", "next": "bump"},
        "bump": {
            "action": "printf %d $(( ${captured.n.output} + 1 ))",
            "capture": "n",
            "next": "check",
        },
        "check": {
            "evaluate": {
                "type": "output_numeric",
                "source": "${captured.n.output}",
                "operator": "ge",
                "target": 5,
            },
            "on_success": "done",
            "on_failure": "bump",
        },
        "done": DONE,
    }
    result, _, _ = run(states)
    assert (result.terminated_by, result.final_state) == ("terminal", "done")
    frozen = {**states, "bump": {"action": "printf 1", "capture": "n", "next": "check"}}
    result, _, _ = run(frozen, stall_threshold=3)
    assert (result.terminated_by, result.final_state) == ("stalled", "check")
    assert result.error is not None
    assert result.error.endswith('it said:\n  | {"operator": "ge", "target": 5.0, "value": 1.0}')


# --- max_visits ----------------------------------------------------------------------------


def test_max_visits_routes_to_on_max_visits_without_using_an_iteration() -> None:
    states = {
        "fix": {
            "action": "echo fix ${state.iteration}",
            "max_visits": 2,
            "on_max_visits": "give_up",
            "next": "fix",
        },
        "give_up": {"action": "echo giving up", "next": "done"},
        "done": DONE,
    }
    result, events, executor = run(states)
    assert (result.terminated_by, result.iterations, result.final_state) == ("terminal", 3, "done")
    assert events.entered() == ["fix", "fix", "give_up"]
    assert events.of("route")[2] == {
        "event": "route",
        "from": "fix",
        "to": "give_up",
        "reason": "max_visits",
    }
    assert executor.guards.visits.to_dict() == {"fix": 2, "give_up": 1}


def test_max_visits_without_a_way_out_stops_as_stalled() -> None:
    states = {
        "fix": {"action": "echo ${state.iteration}", "max_visits": 3, "next": "fix"},
        "done": DONE,
    }
    result, _, _ = run(states)
    assert (result.terminated_by, result.iterations, result.final_state) == ("stalled", 3, "fix")
    assert result.error == "state 'fix' was entered 3 times (max_visits: 3)"


def test_on_max_visits_that_leads_back_stops_as_stalled() -> None:
    states = {
        "a": {
            "action": "echo a${state.iteration}",
            "max_visits": 1,
            "on_max_visits": "b",
            "next": "b",
        },
        "b": {
            "action": "echo b${state.iteration}",
            "max_visits": 1,
            "on_max_visits": "a",
            "next": "a",
        },
        "done": DONE,
    }
    result, events, _ = run(states)
    assert (result.terminated_by, result.final_state) == ("stalled", "a")
    assert result.error == (
        "state 'a' was entered 1 times (max_visits: 1), and on_max_visits led back to it"
    )
    assert [(e["from"], e["to"], e.get("reason")) for e in events.of("route")] == [
        ("a", "b", None),
        ("b", "a", None),
        ("a", "b", "max_visits"),
        ("b", "a", "max_visits"),
    ]


def test_an_on_max_visits_template_that_cannot_resolve_ends_the_run() -> None:
    states = {
        "a": {"action": "true", "max_visits": 1, "on_max_visits": "${context.nope}", "next": "a"},
        "done": DONE,
    }
    result, _, _ = run(states)
    assert result.terminated_by == "error"
    assert result.error is not None
    assert "context.nope" in result.error


# --- the error log -------------------------------------------------------------------------


def test_errors_seen_are_kept_with_their_stderr() -> None:
    states = {
        "build": {
            "action": 'if [ ${state.iteration} -eq 1 ]; then echo "cc: bad" >&2; exit 2; fi; true',
            "route": {"success": "quiet_check", "_error": "build"},
        },
        "quiet_check": {"action": "exit 1", "on_failure": "boom", "on_success": "done"},
        "boom": {"action": 'echo "oops" >&2; echo "FATAL_ERROR: disk full"', "next": "done"},
        "done": DONE,
    }
    result, _, _ = run(states, detector=True)
    assert (result.terminated_by, result.error) == ("error", "disk full")
    assert result.errors == [
        {"state": "build", "iteration": 1, "source": "verdict", "message": "exit code 2"}
        | {"stderr_tail": "cc: bad"},
        {"state": "boom", "iteration": 4, "source": "fatal_error", "message": "disk full"}
        | {"stderr_tail": "oops"},
    ]
    assert result.to_dict()["errors"] == result.errors


def test_a_failed_action_that_explains_itself_is_kept() -> None:
    states = {
        "check": {"action": 'echo "3 failed" >&2; exit 1', "on_failure": "done"},
        "done": DONE,
    }
    result, _, _ = run(states)
    assert result.errors == [
        {
            "state": "check",
            "iteration": 1,
            "source": "action",
            "message": "exit code 1",
            "stderr_tail": "3 failed",
        }
    ]


def test_an_error_verdict_without_a_message_is_still_kept() -> None:
    states = {
        "judge": {
            "action": "echo ok",
            "evaluate": {"type": "llm_structured"},
            "route": {"_error": "done", "_": "done"},
        },
        "done": DONE,
    }
    result, _, _ = run(states, llm={"enabled": False})
    assert [entry["message"] for entry in result.errors] == [
        "LLM evaluation disabled (llm.enabled: false or --no-llm)"
    ]


# --- return metadata routes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("report", "final_state"),
    [
        ('{"status": "implemented"}', "done"),
        ('{"status": "completed"}', "done"),
        ('{"status": "partial", "partial_progress": {"phases_completed": 2}}', "resume"),
        ('{"status": "partial", "requires_user_review": true}', "review"),
        ('{"status": "blocked"}', "review"),
        ('{"status": "failed"}', "gave_up"),
        ('{"status": "lost"}', "broken"),
    ],
)
def test_return_metadata_routes_every_status(report: str, final_state: str) -> None:
    states = {
        "implement": {
            "action": f"echo '{report}' > .return-meta.json",
            "evaluate": {"type": "return_metadata", "path": ".return-meta.json"},
            "route": {
                "success": "done",
                "partial": "resume",
                "blocked": "review",
                "failure": "gave_up",
                "_error": "broken",
            },
        },
        **{name: DONE for name in ("done", "resume", "review", "gave_up", "broken")},
    }
    result, _, _ = run(states)
    assert (result.terminated_by, result.final_state) == ("terminal", final_state)


def test_the_next_run_is_told_where_to_resume() -> None:
    report = (
        '{"status": "partial", "partial_progress": '
        '{"phases_completed": 2, "phases_total": 4, "handoff_path": "h/phase-3.md"}}'
    )
    states = {
        "implement": {
            "action": f"echo '{report}'",
            "evaluate": {"type": "return_metadata"},
            "on_success": "done",
            "route": {"partial": "resume", "_": "done"},
        },
        "resume": {
            "action": (
                "echo phase ${result.details.resume_phase} of "
                "${result.details.partial_progress.phases_total} "
                "from ${result.details.partial_progress.handoff_path}"
            ),
            "capture": "resume",
            "next": "done",
        },
        "done": DONE,
    }
    result, _, _ = run(states)
    assert result.captured["resume"]["output"] == "phase 3 of 4 from h/phase-3.md\n"


def test_return_metadata_path_is_interpolated() -> None:
    states = {
        "implement": {
            "action": 'echo \'{"status": "completed"}\' > report-${context.task}.json',
            "evaluate": {"type": "return_metadata", "path": "report-${context.task}.json"},
            "on_success": "done",
        },
        "done": DONE,
    }
    result, _, _ = run(states, context={"task": "886"})
    assert result.terminated_by == "terminal"
    bad = {**states, "implement": {**states["implement"], "route": {"_error": "done"}}}
    bad["implement"]["evaluate"] = {"type": "return_metadata", "path": "${context.nope}"}
    _, events, _ = run(bad, context={"task": "886"})
    assert events.of("evaluate")[0]["error"] == (
        "Cannot resolve path: Path 'nope' not found in context"
    )


# --- checkpoints ---------------------------------------------------------------------------


class RecordingCheckpointer:
    """Stands in for git: answers from a script of results and remembers the calls."""

    def __init__(self, results: list[CheckpointResult]) -> None:
        self.results = results
        self.calls: list[tuple[str, int, str]] = []

    def checkpoint(
        self, state: str, iteration: int, *, reason: str = "iteration"
    ) -> CheckpointResult:
        self.calls.append((state, iteration, reason))
        return self.results.pop(0) if self.results else CheckpointResult("clean")


def test_checkpoints_after_each_action_and_each_handoff() -> None:
    states = {
        "work": {
            "action": 'if [ ${handoff.count} -eq 0 ]; then echo "CONTEXT_HANDOFF: go on"; fi',
            "next": "decide",
        },
        "decide": {"evaluate": {"type": "exit_code"}, "on_success": "done"},
        "done": DONE,
    }
    checkpointer = RecordingCheckpointer(
        [
            CheckpointResult("committed", commit="abc1234", message="m"),
            CheckpointResult("failed", message="m", warning="checkpoint failed: git add: no"),
            CheckpointResult("skipped", warning="checkpoint: git: not a repo"),
        ]
    )
    recorder = Recorder()
    executor = FSMExecutor(
        make_loop(states, on_handoff="continue"),
        event_callback=recorder,
        signal_detector=SignalDetector(),
        checkpointer=checkpointer,
    )
    assert executor.run().terminated_by == "terminal"
    # The decision state ran nothing, so there is nothing to commit after it.
    assert checkpointer.calls == [("work", 1, "handoff"), ("work", 2, "iteration")]
    assert recorder.of("checkpoint") == [
        {
            "event": "checkpoint",
            "state": "work",
            "iteration": 1,
            "status": "committed",
            "reason": "handoff",
            "commit": "abc1234",
        },
        {
            "event": "checkpoint",
            "state": "work",
            "iteration": 2,
            "status": "failed",
            "reason": "iteration",
            "warning": "checkpoint failed: git add: no",
        },
    ]


def test_quiet_checkpoints_make_no_event() -> None:
    states = {
        "a": {"action": "true", "next": "b"},
        "b": {"action": "true", "next": "done"},
        "done": DONE,
    }
    checkpointer = RecordingCheckpointer(
        [
            CheckpointResult("skipped", warning="checkpoint: git: not a repo"),
            CheckpointResult("skipped"),
        ]
    )
    recorder = Recorder()
    FSMExecutor(make_loop(states), event_callback=recorder, checkpointer=checkpointer).run()
    assert [event["status"] for event in recorder.of("checkpoint")] == ["skipped"]
    assert checkpointer.calls == [("a", 1, "iteration"), ("b", 2, "iteration")]
