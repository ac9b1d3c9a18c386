"""A usage limit met again right after its reset (issue 29 item 1): each wait in a row is
longer than the last, instead of asking claude again and again at the same moment.

Driven by the run core with `test_limit_waits`' jumping clock (nothing sleeps): claude
keeps answering "limit reached, resets at R" with the same R, already passed.
"""

from __future__ import annotations

from test_limit_waits import NOW, SESSION_LIMIT, loop, ok, run, usage_limited

from little_loops.fsm.engine.limit_policy import (
    BACKOFF_CAP_SECONDS,
    LimitGiveUp,
    LimitWait,
    plan_after_limit,
    saved_wait_plan,
)
from little_loops.fsm.engine.requests import RunAction, WaitUntil
from little_loops.fsm.model.limit_hit import LimitHit
from little_loops.fsm.schema import RateLimitConfig


def test_the_same_limit_again_after_its_reset_waits_longer_each_time() -> None:
    """The first wait is until the reset (+2 s); the same reset met again after it gives
    `first_backoff` (60 s), then twice that, then four times, then the run goes on."""
    stale = NOW + 300  # claude says the same reset time every time
    results = [usage_limited(stale)] * 4 + [ok()]
    result, events, driver, _ = run(loop(), results)
    assert result.terminated_by == "terminal"
    assert result.iterations == 1  # waits count no iteration
    waits = [(e["wait_seconds"], e["message"]) for e in events if e["event"] == "limit_wait"]
    assert waits == [
        (302, SESSION_LIMIT),
        (60, SESSION_LIMIT),
        (120, SESSION_LIMIT),
        (240, SESSION_LIMIT),
    ]
    untils = [r.until - NOW for r in driver.requests if isinstance(r, WaitUntil)]
    assert untils == [302, 362, 482, 722]
    assert len([r for r in driver.requests if isinstance(r, RunAction)]) == 5


def _wait_after(usage_waits: int, config: RateLimitConfig) -> float:
    """How long the plan waits when the reset is now and `usage_waits` waits came before."""
    hit = LimitHit(kind="usage_limit", message="limit", resets_at=NOW, exact_reset=True)
    plan = plan_after_limit(hit, config, backoffs=0, usage_waits=usage_waits, now=NOW)
    assert isinstance(plan, LimitWait)
    return plan.until - NOW


def test_repeated_usage_waits_double_from_first_backoff_up_to_the_cap() -> None:
    config = RateLimitConfig(first_backoff=100.0)
    assert [_wait_after(n, config) for n in range(6)] == [2.0, 100.0, 200.0, 400.0, 800.0, 1600.0]
    assert _wait_after(7, config) == BACKOFF_CAP_SECONDS


# --- the edges of one wait (found by the mutation check, docs/testing.md) ----------------


def _plan(resets_at: float | None, **config: float) -> LimitWait | LimitGiveUp:
    hit = LimitHit(kind="usage_limit", message="limit", resets_at=resets_at, exact_reset=True)
    plan = plan_after_limit(hit, RateLimitConfig(**config), backoffs=0, usage_waits=0, now=NOW)
    assert isinstance(plan, LimitWait | LimitGiveUp)
    return plan


def test_a_limit_without_a_reset_time_waits_an_hour_or_max_wait_if_shorter() -> None:
    hour = _plan(None)
    assert isinstance(hour, LimitWait) and hour.until == NOW + 3600
    short = _plan(None, max_wait=1800.0)
    assert isinstance(short, LimitWait) and short.until == NOW + 1800


def test_a_reset_exactly_max_wait_away_is_waited_for() -> None:
    """`max_wait` is the longest wait: a reset (plus its 2 s) at exactly that is waited."""
    at_most = _plan(NOW + 998, max_wait=1000.0)
    assert isinstance(at_most, LimitWait) and at_most.until == NOW + 1000
    beyond = _plan(NOW + 999, max_wait=1000.0)
    assert isinstance(beyond, LimitGiveUp) and beyond.until == NOW + 1001


def test_a_reset_already_past_at_the_first_limit_waits_nothing() -> None:
    """A clock a little ahead of claude's: the first try again is at once (no floor)."""
    past = _plan(NOW - 10)
    assert isinstance(past, LimitWait) and past.until == NOW


def test_a_saved_wait_exactly_max_wait_long_on_resume_is_waited_for() -> None:
    config = RateLimitConfig(max_wait=1000.0)
    assert saved_wait_plan({"until": NOW + 1000, "message": "m"}, config, now=NOW) is None
    again = saved_wait_plan({"until": NOW + 1001, "message": "m"}, config, now=NOW)
    assert again is not None and again.until == NOW + 1001
