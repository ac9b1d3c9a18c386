"""The run core meeting Claude's limits (issue 13): usage-limit waits, rate-limit
backoffs and the budget, driven with a clock that jumps instead of sleeping."""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.core import RunCore
from little_loops.fsm.engine.evaluation_step import judge
from little_loops.fsm.engine.limit_step import CONTINUE_PROMPT
from little_loops.fsm.engine.requests import (
    EvaluateWithIO,
    Finish,
    RunAction,
    Sleep,
    WaitUntil,
)
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.process.claude_stream import ClaudeRun, RateLimitInfo
from little_loops.fsm.process.runner import ActionResult
from little_loops.fsm.schema import FSMLoop

NOW = 1_800_000_000.0
SESSION_LIMIT = "You've hit your session limit · resets 11:21pm (UTC)"


class JumpingClock:
    """Wall and monotonic time that move only when the driver waits."""

    def __init__(self) -> None:
        self.now = NOW

    def monotonic(self) -> float:
        return self.now - NOW

    def wall(self) -> float:
        return self.now


def ok(text: str = "done", cost: float | None = None) -> ActionResult:
    claude = ClaudeRun(session_id="s-ok", result_text=text, cost_usd=cost, input_tokens=10)
    return ActionResult(output=text, stderr="", exit_code=0, duration_ms=5, claude=claude)


def usage_limited(resets_at: float | None, session: str = "s-1") -> ActionResult:
    rejected = RateLimitInfo("rejected", resets_at, "five_hour", 1.0)
    claude = ClaudeRun(
        session_id=session,
        result_text=SESSION_LIMIT,
        is_error=True,
        api_error_status=429,
        cost_usd=0.001,
        rate_limit=rejected,
    )
    return ActionResult(output=SESSION_LIMIT, stderr="", exit_code=1, duration_ms=5, claude=claude)


def api_error(status: int, text: str) -> ActionResult:
    claude = ClaudeRun(session_id="s-2", result_text=text, is_error=True, api_error_status=status)
    return ActionResult(output=text, stderr="", exit_code=1, duration_ms=5, claude=claude)


def loop(**top: Any) -> FSMLoop:
    data = {
        "name": "night",
        "initial": "work",
        "states": {
            "work": {
                "action": "/ll:work",
                "evaluate": {"type": "exit_code"},
                "on_success": "done",
                "on_failure": "done",
                "on_error": "done",
            },
            "done": {"terminal": True},
        },
        **top,
    }
    return FSMLoop.from_dict(data)


class Driver:
    """Serves the core's requests: scripted action results, waits as clock jumps."""

    def __init__(self, core: RunCore, clock: JumpingClock, results: list[ActionResult]) -> None:
        self.core, self.clock, self.results = core, clock, list(results)
        self.requests: list[Any] = []
        self.stop_on_wait = False

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
        if isinstance(request, WaitUntil):
            if self.stop_on_wait:
                self.core.request_shutdown()
                return None
            self.clock.now = max(self.clock.now, request.until)
            return None
        if isinstance(request, Sleep):
            self.clock.now += request.seconds
            return None
        if isinstance(request, EvaluateWithIO):
            return judge(request.state, request.ctx, request.step, request.llm)
        raise AssertionError(f"unexpected {request}")


def run(fsm: FSMLoop, results: list[ActionResult], **core_args: Any) -> tuple[Any, ...]:
    events: list[dict[str, Any]] = []
    clock = JumpingClock()
    core = RunCore(fsm, clock=clock, emit=events.append, **core_args)
    driver = Driver(core, clock, results)
    return driver.run(), events, driver, core


def names(events: list[dict[str, Any]]) -> list[str]:
    return [event["event"] for event in events]


def test_a_usage_limit_waits_for_the_reset_and_continues_the_session() -> None:
    result, events, driver, _ = run(loop(), [usage_limited(NOW + 300), ok()])
    assert result.terminated_by == "terminal"
    assert result.iterations == 1  # the wait counted no iteration
    assert names(events) == [
        "loop_start",
        "state_enter",
        "action_start",
        "action_complete",
        "limit_wait",
        "limit_wait_end",
        "action_start",
        "action_complete",
        "evaluate",
        "route",
        "loop_complete",
    ]
    wait = next(e for e in events if e["event"] == "limit_wait")
    assert wait["wait_seconds"] == 302  # the exact reset from the stream, plus 2 s
    assert wait["limit_type"] == "five_hour"
    assert wait["message"] == SESSION_LIMIT
    first, waited, second = driver.requests[:3]
    assert isinstance(waited, WaitUntil) and waited.until == NOW + 302
    assert first.resume_session is None
    assert (second.action, second.resume_session) == (CONTINUE_PROMPT, "s-1")
    limited = next(e for e in events if e["event"] == "action_complete")
    assert limited["limit"] == "usage_limit"


def test_continue_session_off_runs_the_action_again_from_the_start() -> None:
    fsm = loop(rate_limit={"continue_session": False})
    _, _, driver, _ = run(fsm, [usage_limited(NOW + 10), ok()])
    second = driver.requests[2]
    assert (second.action, second.resume_session) == ("/ll:work", None)


def test_a_reset_beyond_max_wait_ends_the_run_as_usage_limited() -> None:
    fsm = loop(rate_limit={"max_wait": "1h"})
    result, events, _, core = run(fsm, [usage_limited(NOW + 7200)])
    assert result.terminated_by == "usage_limited"
    assert "more than rate_limit.max_wait 1h00m away" in result.error
    assert "limit_wait" not in names(events)
    assert core.cursor.limit_wait["until"] == NOW + 7202  # resume waits for it
    assert core.cursor.limit_wait["session_id"] == "s-1"


def test_a_stop_during_the_wait_keeps_it_and_resume_waits_only_what_is_left() -> None:
    events: list[dict[str, Any]] = []
    clock = JumpingClock()
    core = RunCore(loop(), clock=clock, emit=events.append)
    driver = Driver(core, clock, [usage_limited(NOW + 600)])
    driver.stop_on_wait = True
    result = driver.run()
    assert result.terminated_by == "signal"
    saved = core.cursor.copy()
    assert saved.limit_wait is not None and saved.limit_wait["until"] == NOW + 602

    clock.now = NOW + 400  # the run is resumed 400 s later
    saved.iteration -= 1  # as persistence restores a state cut off mid-way
    resumed: list[dict[str, Any]] = []
    core2 = RunCore(loop(), clock=clock, emit=resumed.append, cursor=saved)
    driver2 = Driver(core2, clock, [ok()])
    assert driver2.run().terminated_by == "terminal"
    wait = next(e for e in resumed if e["event"] == "limit_wait")
    assert wait["wait_seconds"] == 202
    again = next(r for r in driver2.requests if isinstance(r, RunAction))
    assert (again.action, again.resume_session) == (CONTINUE_PROMPT, "s-1")
    assert core2.cursor.limit_wait is None


def test_a_saved_wait_still_beyond_max_wait_on_resume_ends_again_at_once() -> None:
    fsm = loop(rate_limit={"max_wait": "1h"})
    _result, _, _, core = run(fsm, [usage_limited(NOW + 7200)])
    saved = core.cursor.copy()
    saved.iteration -= 1
    clock = JumpingClock()
    core2 = RunCore(fsm, clock=clock, cursor=saved)
    driver2 = Driver(core2, clock, [])
    again = driver2.run()
    assert again.terminated_by == "usage_limited"
    assert driver2.requests == []  # nothing ran, nothing waited


def test_rate_limits_back_off_doubling_then_the_state_runs_again() -> None:
    rejected = "API Error: Request rejected (429) · rate limited"
    results = [api_error(429, rejected), api_error(529, "API Error: 529 Overloaded"), ok()]
    result, events, driver, _ = run(loop(), results)
    assert result.terminated_by == "terminal"
    assert result.iterations == 1
    backoffs = [e for e in events if e["event"] == "rate_limit_backoff"]
    assert [(b["kind"], b["attempt"], b["seconds"]) for b in backoffs] == [
        ("rate_limit", 1, 60.0),
        ("overloaded", 2, 120.0),
    ]
    assert [r.seconds for r in driver.requests if isinstance(r, Sleep)] == [60.0, 120.0]
    assert all(r.resume_session is None for r in driver.requests if isinstance(r, RunAction))


def test_after_the_retries_claudes_error_stands_as_before() -> None:
    fsm = loop(rate_limit={"retries": 2, "first_backoff": 1})
    results = [api_error(529, "API Error: 529 Overloaded")] * 3
    result, events, _driver, _ = run(fsm, results)
    backoffs = [e["seconds"] for e in events if e["event"] == "rate_limit_backoff"]
    assert backoffs == [1.0, 2.0]
    evaluate = next(e for e in events if e["event"] == "evaluate")
    assert evaluate["verdict"] == "failure"  # exit 1, as without the backoffs
    assert result.terminated_by == "terminal"


def test_a_shell_action_that_succeeds_with_the_words_never_waits() -> None:
    fsm = FSMLoop.from_dict(
        {
            "name": "s",
            "initial": "say",
            "states": {
                "say": {"action": "echo x", "next": "done"},
                "done": {"terminal": True},
            },
        }
    )
    printed = ActionResult(output=SESSION_LIMIT + "\n", stderr="", exit_code=0, duration_ms=1)
    result, events, _, _ = run(fsm, [printed])
    assert result.terminated_by == "terminal"
    assert "limit_wait" not in names(events)


def test_the_budget_ends_the_run_after_the_state_that_reached_it() -> None:
    fsm = FSMLoop.from_dict(
        {
            "name": "b",
            "initial": "a",
            "max_cost_usd": 0.01,
            "states": {
                "a": {"action": "/ll:a", "next": "b"},
                "b": {"action": "/ll:b", "next": "c"},
                "c": {"action": "/ll:c", "next": "done"},
                "done": {"terminal": True},
            },
        }
    )
    result, events, _, core = run(fsm, [ok(cost=0.006), ok(cost=0.006), ok(cost=0.006)])
    assert result.terminated_by == "budget_exhausted"
    assert result.error == "budget reached: spent $0.0120 of $0.0100"
    assert result.final_state == "c"  # resume goes on from here
    assert result.spending["cost_usd"] == 0.012
    assert result.spending["tokens"]["input"] == 20
    costs = [e["cost_usd"] for e in events if e["event"] == "action_complete"]
    assert costs == [0.006, 0.006]
    assert events[-1]["spending"]["cost_usd"] == 0.012

    saved = core.cursor.copy()
    fsm.max_cost_usd = 1.0  # resume --max-cost 1
    clock = JumpingClock()
    core2 = RunCore(fsm, clock=clock, cursor=saved)
    again = Driver(core2, clock, [ok(cost=0.006)]).run()
    assert again.terminated_by == "terminal"
    assert again.spending["cost_usd"] == 0.018  # counting went on


def test_a_run_that_reaches_its_terminal_state_completes_even_over_budget() -> None:
    fsm = loop(max_cost_usd=0.001)
    result, _, _, _ = run(fsm, [ok(cost=0.5)])
    assert result.terminated_by == "terminal"


def test_throttling_gets_the_short_backoff() -> None:
    text = "API Error: Server is temporarily limiting requests (not your usage limit) · x"
    result, events, _, _ = run(loop(), [api_error(429, text), ok()])
    backoff = next(e for e in events if e["event"] == "rate_limit_backoff")
    assert (backoff["kind"], backoff["seconds"]) == ("throttle", 5.0)
    assert result.terminated_by == "terminal"


def test_a_wait_resumed_after_a_stop_says_the_whole_time_the_limit_held_it_up() -> None:
    """Issue 23 item 11: a run stopped during the wait and resumed after the reset said
    `waited 0s` (only what it waited after the resume)."""
    clock = JumpingClock()
    core = RunCore(loop(), clock=clock, emit=lambda _: None)
    driver = Driver(core, clock, [usage_limited(NOW + 600)])
    driver.stop_on_wait = True
    assert driver.run().terminated_by == "signal"
    saved = core.cursor.copy()
    assert saved.limit_wait is not None and saved.limit_wait["since"] == NOW

    clock.now = NOW + 900  # resumed after the reset: nothing is left to wait
    saved.iteration -= 1
    resumed: list[dict[str, Any]] = []
    core2 = RunCore(loop(), clock=clock, emit=resumed.append, cursor=saved)
    assert Driver(core2, clock, [ok()]).run().terminated_by == "terminal"
    end = next(e for e in resumed if e["event"] == "limit_wait_end")
    assert end["waited_seconds"] == 900
