"""The loop-level keys of overnight runs (issue 13): `max_cost_usd`, `notify`, `rate_limit`."""

from __future__ import annotations

from typing import Any

import pytest

from little_loops.fsm.loading.paradigms import compile_paradigm
from little_loops.fsm.model.durations import format_duration, parse_duration
from little_loops.fsm.schema import DEFAULT_LIMIT_MAX_WAIT, FSMLoop, RateLimitConfig
from little_loops.fsm.validation import check_loop_mapping, validate_fsm


def loop(**top: Any) -> dict[str, Any]:
    states = {"a": {"action": "x", "next": "done"}, "done": {"terminal": True}}
    return {"name": "o", "initial": "a", "states": states, **top}


def shape(data: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(error.path, error.message) for error in check_loop_mapping(data)]


def test_the_keys_are_accepted_and_round_trip() -> None:
    data = loop(
        max_cost_usd=2.5,
        notify="notify-send ll-loop",
        rate_limit={
            "max_wait": "1h30m",
            "retries": 3,
            "continue_session": False,
            "first_backoff": "5s",
        },
    )
    assert shape(data) == []
    fsm = FSMLoop.from_dict(data)
    assert validate_fsm(fsm) == []
    assert fsm.rate_limit == RateLimitConfig(
        max_wait=5400, retries=3, continue_session=False, first_backoff=5
    )
    assert FSMLoop.from_dict(fsm.to_dict()) == fsm


def test_a_loop_without_them_gets_the_defaults_and_writes_none_of_them() -> None:
    fsm = FSMLoop.from_dict(loop())
    assert (fsm.max_cost_usd, fsm.notify) == (None, None)
    assert fsm.rate_limit == RateLimitConfig(
        max_wait=12 * 3600, retries=8, continue_session=True, first_backoff=60
    )
    assert not {"max_cost_usd", "notify", "rate_limit"} & set(fsm.to_dict())


@pytest.mark.parametrize(
    ("top", "problem"),
    [
        ({"max_cost_usd": 0}, ("max_cost_usd", "must be a number > 0, got 0")),
        ({"max_cost_usd": "1"}, ("max_cost_usd", "must be a number > 0, got '1'")),
        ({"notify": ["x"]}, ("notify", "must be a string, got a list")),
        ({"rate_limit": 5}, ("rate_limit", "must be a mapping, got 5")),
        (
            {"rate_limit": {"retries": -1}},
            ("rate_limit.retries", "must be an integer >= 0, got -1"),
        ),
        (
            {"rate_limit": {"max_wait": "soon"}},
            (
                "rate_limit.max_wait",
                "must be a duration (seconds, or like 90s, 30m, 12h), got 'soon'",
            ),
        ),
    ],
)
def test_bad_values_are_one_line_each(top: dict[str, Any], problem: tuple[str, str]) -> None:
    assert shape(loop(**top)) == [problem]


def test_unknown_rate_limit_keys_are_refused() -> None:
    [(path, message)] = shape(loop(rate_limit={"max_wiat": 5}))
    assert path == "rate_limit.max_wiat"
    assert "unknown key 'max_wiat'" in message


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (90, 90.0),
        (1.5, 1.5),
        ("90s", 90.0),
        ("30m", 1800.0),
        ("12h", 43200.0),
        ("2d", 172800.0),
        ("1h30m", 5400.0),
        (" 1h 30m ", 5400.0),
        ("0.5h", 1800.0),
    ],
)
def test_durations(text: Any, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "12", "12x", "-5m", True, None, [1]])
def test_not_durations(text: Any) -> None:
    with pytest.raises(ValueError, match="must be a duration"):
        parse_duration(text)


def test_format_duration_reads_like_a_clock() -> None:
    assert [format_duration(s) for s in (0, 42, 303, 11520, 97200)] == [
        "0s",
        "42s",
        "5m03s",
        "3h12m",
        "1d3h",
    ]


def test_paradigm_loops_carry_the_keys() -> None:
    spec = {
        "paradigm": "goal",
        "name": "g",
        "goal": "tests pass",
        "tools": ["pytest"],
        "max_cost_usd": 1,
        "notify": "true",
        "rate_limit": {"max_wait": "2h"},
    }
    fsm = compile_paradigm(spec)
    assert (fsm.max_cost_usd, fsm.notify, fsm.rate_limit.max_wait) == (1, "true", 7200)
    assert DEFAULT_LIMIT_MAX_WAIT == 43200
