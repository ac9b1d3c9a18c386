"""HEAD's per-state rate-limit keys (spec/ll-head-dialect.md §7.6, §9i) and the
authentication failure of a prompt action: the run core driven with a clock that jumps
instead of sleeping, and the real `ll-loop` with a scripted stream-json claude."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures import scripted_claude
from fixtures.cli_support import LL_LOOP, cli_env, run_cli, write_loop
from test_limit_waits import NOW, SESSION_LIMIT, JumpingClock

from little_loops.fsm.engine.context import RunCursor, iso_time
from little_loops.fsm.engine.core import RunCore
from little_loops.fsm.engine.head_rate_limits import jitter_seconds
from little_loops.fsm.engine.limit_step import CONTINUE_PROMPT
from little_loops.fsm.engine.requests import Finish, RunAction, Sleep
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.process.claude_refusal import claude_refusal
from little_loops.fsm.process.claude_stream import ClaudeRun, RateLimitInfo
from little_loops.fsm.process.runner import ActionResult

RATE_LIMITED = "API Error: Request rejected (429) · Rate limited, slow down"
NOT_LOGGED_IN = "Not logged in · Please run /login"


class Driver:
    """Serves the core's requests: scripted action results, sleeps as clock jumps
    (`stop_after_sleeps`: ask for a shutdown during that many-th sleep)."""

    def __init__(self, core: RunCore, clock: JumpingClock, results: list[ActionResult]) -> None:
        self.core, self.clock, self.results = core, clock, list(results)
        self.requests: list[Any] = []
        self.stop_after_sleeps: int | None = None

    def run(self) -> ExecutionResult:
        request = self.core.next_request()
        while not isinstance(request, Finish):
            self.requests.append(request)
            self.core.submit(self.serve(request))
            request = self.core.next_request()
        return request.result

    def serve(self, request: Any) -> Any:
        if isinstance(request, RunAction):
            return self.results.pop(0)
        if isinstance(request, Sleep):
            self.clock.now += request.seconds
            if self.stop_after_sleeps is not None and len(self.sleeps()) >= self.stop_after_sleeps:
                self.core.request_shutdown()
            return None
        raise AssertionError(f"unexpected {request}")

    def sleeps(self) -> list[float]:
        return [request.seconds for request in self.requests if isinstance(request, Sleep)]

    def actions(self) -> list[RunAction]:
        return [request for request in self.requests if isinstance(request, RunAction)]


def ok(text: str = "done") -> ActionResult:
    claude = ClaudeRun(session_id="s-ok", result_text=text)
    return ActionResult(output=text, stderr="", exit_code=0, duration_ms=5, claude=claude)


def rate_limited() -> ActionResult:
    claude = ClaudeRun(
        session_id="s-rl", result_text=RATE_LIMITED, is_error=True, api_error_status=429
    )
    return ActionResult(output=RATE_LIMITED, stderr="", exit_code=1, duration_ms=5, claude=claude)


def usage_limited(resets_at: float) -> ActionResult:
    rejected = RateLimitInfo("rejected", resets_at, "five_hour", 1.0)
    claude = ClaudeRun(
        session_id="s-1",
        result_text=SESSION_LIMIT,
        is_error=True,
        api_error_status=429,
        rate_limit=rejected,
    )
    return ActionResult(output=SESSION_LIMIT, stderr="", exit_code=1, duration_ms=5, claude=claude)


def refused(text: str, status: int | None = None) -> ActionResult:
    """A claude that failed to work, with the error the runner gives it (`claude_refusal`)."""
    claude = ClaudeRun(session_id="s-x", result_text=text, is_error=True, api_error_status=status)
    result = ActionResult(output=text, stderr="", exit_code=1, duration_ms=5, claude=claude)
    result.error = claude_refusal(1, text, "")
    return result


def head(work: dict[str, Any], **states: Any) -> HeadLoop:
    base = {
        "action": "/ll:work",
        "evaluate": {"type": "exit_code"},
        "on_yes": "done",
        "on_no": "done",
    }
    all_states = {"work": {**base, **work}, "done": {"terminal": True}, **states}
    return HeadLoop.from_dict({"name": "night", "initial": "work", "states": all_states})


def run(fsm: HeadLoop, results: list[ActionResult], **core_args: Any) -> tuple[Any, ...]:
    events: list[dict[str, Any]] = []
    clock = JumpingClock()
    core = RunCore(fsm, clock=clock, emit=events.append, **core_args)
    driver = Driver(core, clock, results)
    return driver.run(), events, driver, core


def of(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    kept = [e for e in events if e["event"] == name]
    return [{k: v for k, v in e.items() if k not in ("event", "ts")} for e in kept]


def names(events: list[dict[str, Any]]) -> list[str]:
    return [event["event"] for event in events]


GAVE_UP = {"gave_up": {"terminal": True}}


def test_s7_6_short_backoffs_then_the_long_wait_ladder_in_place_then_through() -> None:
    fsm = head(
        {
            "max_rate_limit_retries": 2,
            "on_rate_limit_exhausted": "gave_up",
            "rate_limit_backoff_base_seconds": 10,
            "rate_limit_long_wait_ladder": [100, 150],
            "max_retries": 1,  # in-place waits are not re-entries (§7.1)
            "on_retry_exhausted": "gave_up",
        },
        **GAVE_UP,
    )
    results = [rate_limited()] * 5 + [ok()]
    result, events, driver, core = run(fsm, results)
    assert (result.terminated_by, result.final_state, result.iterations) == ("terminal", "done", 1)
    j1, j2 = jitter_seconds("work", 1, 10), jitter_seconds("work", 2, 10)
    assert 0 <= j1 <= 10 and 0 <= j2 <= 10 and j1 != j2
    # short: 10·2⁰+j, 10·2¹+j; long: 100 (as 60 + 40), 150, 150 (the last entry repeats)
    assert driver.sleeps() == [10 + j1, 20 + j2, 60, 40, 60, 60, 30, 60, 60, 30]
    waiting = of(events, "rate_limit_waiting")
    assert [(w["tier"], w["elapsed_seconds"]) for w in waiting] == [
        ("short", 0),
        ("short", 0),
        ("long", 0),
        ("long", 60),
        ("long", 0),
        ("long", 60),
        ("long", 120),
        ("long", 0),
        ("long", 60),
        ("long", 120),
    ]
    started = NOW + 10 + j1 + 20 + j2  # the first long wait starts here
    assert waiting[3] == {
        "state": "work",
        "elapsed_seconds": 60,
        "next_attempt_at": iso_time(started + 100),
        "total_waited_seconds": round(30 + j1 + j2 + 60),
        "budget_seconds": 21600,
        "tier": "long",
    }
    assert "retry_exhausted" not in names(events)
    assert "rate_limit_backoff" not in names(events)  # not our loop-level backoff
    assert len(driver.actions()) == 6
    assert core.cursor.head.rate_limit == {}  # it got through: the ladder starts over


def test_s7_6_a_spent_budget_emits_rate_limit_exhausted_and_goes_there() -> None:
    fsm = head(
        {
            "max_rate_limit_retries": 3,
            "on_rate_limit_exhausted": "gave_up",
            "rate_limit_backoff_base_seconds": 30,
            "rate_limit_max_wait_seconds": 20,
        },
        **GAVE_UP,
    )
    cursor = RunCursor("work")
    cursor.head.session_summary = "what the last continue state did"
    result, events, driver, core = run(fsm, [rate_limited()] * 2, cursor=cursor)
    assert (result.terminated_by, result.final_state) == ("terminal", "gave_up")
    assert core.cursor.head.session_summary is None  # §7.8: an exhaustion clears it
    assert driver.sleeps() == [20]  # 30 s and jitter, cut to the budget
    assert of(events, "rate_limit_exhausted") == [
        {
            "state": "work",
            "retries": 1,
            "short_retries": 1,
            "long_retries": 0,
            "total_wait_seconds": 20,
            "next": "gave_up",
        }
    ]
    assert of(events, "route") == [
        {"from": "work", "to": "gave_up", "reason": "rate_limit_exhausted"}
    ]
    assert "evaluate" not in names(events)
    assert core.cursor.head.rate_limit == {"work": {"exhaustions": 1}}


def test_s7_6_without_on_rate_limit_exhausted_the_budget_goes_to_on_error() -> None:
    fsm = head({"rate_limit_max_wait_seconds": 5, "on_error": "fix"}, fix={"terminal": True})
    result, events, driver, _ = run(fsm, [rate_limited()] * 2)
    assert result.final_state == "fix"
    assert driver.sleeps() == [5]
    assert of(events, "rate_limit_exhausted")[0]["next"] == "fix"


def test_s9i_without_a_route_the_run_ends_usage_limited() -> None:
    fsm = head({"rate_limit_max_wait_seconds": 5})
    result, events, _, _ = run(fsm, [rate_limited()] * 2)
    assert (result.terminated_by, result.final_state) == ("usage_limited", "work")
    assert result.error == (
        f"{RATE_LIMITED} (rate_limit_max_wait_seconds 5s spent waiting in this state; "
        "resume to try again)"
    )
    assert of(events, "rate_limit_exhausted")[0]["next"] is None


def test_s7_6_a_usage_limit_resetting_beyond_what_is_left_exhausts_at_once() -> None:
    fsm = head({"rate_limit_max_wait_seconds": 3600, "on_error": "fix"}, fix={"terminal": True})
    result, events, driver, _ = run(fsm, [usage_limited(NOW + 7200)])
    assert result.final_state == "fix"
    assert driver.sleeps() == []
    assert of(events, "rate_limit_exhausted") == [
        {
            "state": "work",
            "retries": 0,
            "short_retries": 0,
            "long_retries": 0,
            "total_wait_seconds": 0,
            "next": "fix",
        }
    ]


def test_s7_6_a_usage_limit_within_the_budget_waits_for_the_reset_and_continues() -> None:
    fsm = head({"rate_limit_max_wait_seconds": 3600, "on_error": "fix"}, fix={"terminal": True})
    result, events, driver, _ = run(fsm, [usage_limited(NOW + 100), ok()])
    assert result.final_state == "done"
    assert driver.sleeps() == [60, 42]  # the exact reset plus 2 s, in minute steps
    second = driver.actions()[1]
    assert (second.action, second.resume_session) == (CONTINUE_PROMPT, "s-1")
    assert [w["total_waited_seconds"] for w in of(events, "rate_limit_waiting")] == [0, 60]
    assert "limit_wait" not in names(events)  # not our loop-level usage wait


def test_s7_6_three_exhaustions_in_a_row_make_a_rate_limit_storm() -> None:
    fsm = head({"rate_limit_max_wait_seconds": 1, "on_rate_limit_exhausted": "$current"})
    result, events, _, core = run(fsm, [rate_limited()] * 6 + [ok()])
    assert result.final_state == "done"
    assert [e["next"] for e in of(events, "rate_limit_exhausted")] == ["$current"] * 3
    assert of(events, "rate_limit_storm") == [{"state": "work", "count": 3}]
    limits = [n for n in names(events) if n.startswith("rate_limit_") and n != "rate_limit_waiting"]
    assert limits == ["rate_limit_exhausted"] * 3 + ["rate_limit_storm"]
    assert core.cursor.head.rate_limit == {}


def test_s7_6_a_stop_during_a_ladder_wait_resumes_with_what_is_left() -> None:
    fsm = head(
        {
            "rate_limit_long_wait_ladder": [300],
            "max_rate_limit_retries": 1,
            "on_rate_limit_exhausted": "done",
        }
    )
    events: list[dict[str, Any]] = []
    clock = JumpingClock()
    core = RunCore(fsm, clock=clock, emit=events.append)
    driver = Driver(core, clock, [rate_limited(), rate_limited()])
    driver.stop_after_sleeps = 2  # during the first minute of the long wait
    assert driver.run().terminated_by == "signal"
    saved = core.cursor.copy()
    entry = saved.head.rate_limit["work"]
    short = 30 + jitter_seconds("work", 1, 30)
    assert entry == {
        "short_retries": 1,
        "long_retries": 1,
        "total_wait_seconds": short + 60,
        "until": NOW + short + 300,
        "tier": "long",
    }

    clock.now += 100  # resumed 100 s later: 140 s of the wait are left
    saved.iteration -= 1  # as persistence restores a state cut off mid-way
    resumed: list[dict[str, Any]] = []
    core2 = RunCore(fsm, clock=clock, emit=resumed.append, cursor=saved)
    driver2 = Driver(core2, clock, [ok()])
    assert driver2.run().final_state == "done"
    assert driver2.sleeps() == [60, 60, 20]
    assert len(driver2.actions()) == 1
    assert core2.cursor.head.rate_limit == {}


def test_s7_6_auth_failure_of_a_prompt_goes_straight_to_on_error() -> None:
    """Without the rule, `error` with exit 1 (not retryable) would take §7.2's detour."""
    states = {"fix": {"terminal": True}, **GAVE_UP}
    work = {
        "on_error": "fix",
        "retryable_exit_codes": [75],
        "max_retries": 2,
        "on_retry_exhausted": "gave_up",
    }
    for failed in (refused(NOT_LOGGED_IN), refused("API Error: 401 token expired", 401)):
        result, events, _, _ = run(head(work, **states), [failed])
        assert result.final_state == "fix"
        assert of(events, "route") == [{"from": "work", "to": "fix", "reason": "auth_failure"}]
        assert "evaluate" not in names(events)
    other = refused("API Error: 500 Internal server error", 500)
    result, _, _, _ = run(head(work, **states), [other])
    assert result.final_state == "gave_up"  # not an auth failure: §7.2 as before


# -- the real ll-loop, with a scripted claude -----------------------------------------------

LOOP = """\
name: night
initial: work
states:
  work:
    action: /ll:work
    evaluate:
      type: exit_code
    on_yes: done
    on_no: done
    on_error: fix
    max_rate_limit_retries: 1
    on_rate_limit_exhausted: gave_up
    rate_limit_backoff_base_seconds: 1
    rate_limit_max_wait_seconds: 1
  fix:
    terminal: true
  gave_up:
    terminal: true
  done:
    terminal: true
"""


def cli_setup(tmp_path: Path, steps: list[dict[str, Any]], loop: str = LOOP) -> dict[str, str]:
    write_loop(tmp_path, "night", loop)
    claude = scripted_claude.install(tmp_path / "fake", steps)
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(claude)
    return env


def cli_events(tmp_path: Path) -> list[dict[str, Any]]:
    text = (tmp_path / ".loops/.running/night.events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def cli_run(tmp_path: Path, steps: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    done = run_cli(tmp_path, "run", "night", env=cli_setup(tmp_path, steps))
    return done, cli_events(tmp_path)


def test_s7_6_cli_rate_limit_budget_spent_routes_to_on_rate_limit_exhausted(
    tmp_path: Path,
) -> None:
    step = {"text": RATE_LIMITED, "is_error": True, "status": 429}
    done, events = cli_run(tmp_path, [step])
    assert done.returncode == 0, done.stderr
    assert [e["tier"] for e in of(events, "rate_limit_waiting")] == ["short"]
    assert of(events, "rate_limit_exhausted") == [
        {
            "state": "work",
            "retries": 1,
            "short_retries": 1,
            "long_retries": 0,
            "total_wait_seconds": 1,
            "next": "gave_up",
        }
    ]
    assert [(e["from"], e["to"]) for e in of(events, "route")] == [("work", "gave_up")]
    assert len(scripted_claude.calls(tmp_path / "fake")) == 2
    saved = json.loads((tmp_path / ".loops/.running/night.state.json").read_text())
    assert saved["head"]["rate_limit"] == {"work": {"exhaustions": 1}}
    assert "rate limited: short wait, again at " in done.stdout
    assert "rate-limit budget of work spent (1 retries, 1s waited)" in done.stdout
    shown = run_cli(tmp_path, "history", "night", env=cli_env(tmp_path))
    assert "rate_limit_exhausted -> gave_up" in shown.stdout


def test_s7_6_cli_not_logged_in_goes_to_on_error(tmp_path: Path) -> None:
    done, events = cli_run(tmp_path, [{"text": NOT_LOGGED_IN, "is_error": True}])
    assert done.returncode == 0, done.stderr
    assert of(events, "route") == [{"from": "work", "to": "fix", "reason": "auth_failure"}]
    assert len(scripted_claude.calls(tmp_path / "fake")) == 1


def saved_ladder(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / ".loops/.running/night.state.json"
    if not path.exists():
        return {}
    entry = json.loads(path.read_text()).get("head", {}).get("rate_limit", {}).get("work", {})
    assert isinstance(entry, dict)
    return entry


@pytest.mark.slow
def test_s7_6_cli_a_run_killed_during_a_wait_resumes_waiting_only_what_is_left(
    tmp_path: Path,
) -> None:
    """The ladder's memory is on disk during the wait (§7.6 "saved for resume")."""
    loop = LOOP.replace("rate_limit_backoff_base_seconds: 1", "rate_limit_backoff_base_seconds: 3")
    loop = loop.replace("rate_limit_max_wait_seconds: 1", "rate_limit_max_wait_seconds: 600")
    env = cli_setup(tmp_path, [{"text": RATE_LIMITED, "is_error": True, "status": 429}, {}], loop)
    run = subprocess.Popen([str(LL_LOOP), "run", "night"], cwd=tmp_path, env=env, text=True)
    try:
        deadline = time.monotonic() + 30
        while "until" not in saved_ladder(tmp_path):
            assert time.monotonic() < deadline, "timed out waiting for the ladder's wait"
            time.sleep(0.05)
    finally:
        run.kill()
        run.wait()
    entry = saved_ladder(tmp_path)
    assert (entry["short_retries"], entry["tier"]) == (1, "short")
    until = entry["until"]
    resumed = run_cli(tmp_path, "resume", "night", env=env)
    assert resumed.returncode == 0, resumed.stderr
    waiting = of(cli_events(tmp_path), "rate_limit_waiting")
    assert [w["next_attempt_at"] for w in waiting] == [iso_time(until)] * 2
    assert len(scripted_claude.calls(tmp_path / "fake")) == 2  # not run again before it
    assert time.time() >= until - 0.01
    assert saved_ladder(tmp_path) == {}


PARENT = """\
name: night
initial: fan
states:
  fan:
    loop: child
    on_yes: done
    on_no: done
    on_error: done
  done:
    terminal: true
"""

CHILD = """\
name: child
initial: ask
states:
  ask:
    action: /ll:ask
    evaluate:
      type: exit_code
    on_yes: done
    on_no: done
    max_rate_limit_retries: 1
    on_rate_limit_exhausted: gave_up
    rate_limit_backoff_base_seconds: 1
    rate_limit_max_wait_seconds: 1
  gave_up:
    terminal: true
  done:
    terminal: true
"""


def test_s7_6_cli_a_sub_loops_ladder_memory_is_the_runs(tmp_path: Path) -> None:
    """The child's waits are kept in the run's memory, saved in the top-level state file."""
    env = cli_setup(tmp_path, [{"text": RATE_LIMITED, "is_error": True, "status": 429}], PARENT)
    write_loop(tmp_path, "child", CHILD)
    done = run_cli(tmp_path, "run", "night", env=env)
    assert done.returncode == 0, done.stderr
    exhausted = [e for e in cli_events(tmp_path) if e["event"] == "rate_limit_exhausted"]
    assert [(e["state"], e["depth"], e["next"]) for e in exhausted] == [("ask", 1, "gave_up")]
    saved = json.loads((tmp_path / ".loops/.running/night.state.json").read_text())
    assert saved["head"]["rate_limit"] == {"ask": {"exhaustions": 1}}
