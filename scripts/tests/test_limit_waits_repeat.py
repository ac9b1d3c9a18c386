"""A usage limit met again right after its reset (issue 29 item 1): each wait in a row is
longer than the last, instead of asking claude again and again at the same moment.

Driven by the run core with `test_limit_waits`' jumping clock (nothing sleeps): claude
keeps answering "limit reached, resets at R" with the same R, already passed.
"""

from __future__ import annotations

from test_limit_waits import NOW, SESSION_LIMIT, loop, ok, run, usage_limited

from little_loops.fsm.engine.limit_policy import BACKOFF_CAP_SECONDS, LimitWait, plan_after_limit
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
