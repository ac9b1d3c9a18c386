"""The real claude meets each limit again: the recorded transcripts stay honest.

Every case of `limit_cases.CASES` is run with `-p --output-format stream-json --verbose`
and with plain `-p`, and compared with `fixtures/claude_limits/<case>.jsonl`: the same
lines in the same order, the same retries, the same rejected event, the same final text
(the reset time and the port of the fake API aside), and the same classification.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from limit_cases import CASES, FIXTURES, CaseRun, LimitCase, run_case, stream_lines

from little_loops.fsm.process.claude_limits import (
    classify_claude_result,
    classify_shell_failure,
    parse_reset_time,
)

_RESET_TEXT = re.compile(r" · resets [^·]*\)")
_GATEWAY = re.compile(r"127\.0\.0\.1:\d+")


def normalized(text: str) -> str:
    """`text` without what changes from run to run: the reset time, the fake API's port."""
    return _GATEWAY.sub("127.0.0.1:PORT", _RESET_TEXT.sub(" · resets WHEN", text.strip()))


def shape(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What must not change between two runs of a case: kinds of lines and what they say."""
    return [_line_shape(line) for line in lines]


def _line_shape(line: dict[str, Any]) -> tuple[Any, ...]:
    kind = (line.get("type"), line.get("subtype"))
    if kind == ("system", "api_retry"):
        return (*kind, line["attempt"], line["error_status"], line["error"])
    if line.get("type") == "rate_limit_event":
        info = line["rate_limit_info"]
        return (*kind, info["status"], info.get("rateLimitType"), "resetsAt" in info)
    if line.get("type") == "result":
        said = normalized(line["result"])
        return (*kind, line["is_error"], line["api_error_status"], said)
    return kind


def rejected(lines: list[dict[str, Any]]) -> dict[str, Any]:
    for line in lines:
        if line.get("type") == "rate_limit_event":
            info: dict[str, Any] = line["rate_limit_info"]
            if info["status"] == "rejected":
                return info
    return {}


def recorded(case: LimitCase) -> list[dict[str, Any]]:
    return stream_lines((FIXTURES / f"{case.name}.jsonl").read_text(encoding="utf-8"))


def classified(lines: list[dict[str, Any]], now: float) -> tuple[Any, ...] | None:
    result, event = lines[-1], rejected(lines)
    hit = classify_claude_result(
        result_text=result["result"],
        output=result["result"],
        is_error=result["is_error"],
        api_error_status=result["api_error_status"],
        rejected_resets_at=event.get("resetsAt"),
        rejected_type=event.get("rateLimitType"),
        now=now,
    )
    return None if hit is None else (hit.kind, hit.limit_type)


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> LimitCase:
    return CASES[request.param]


def test_stream_json_as_recorded(case: LimitCase, claude_bin: Path, tmp_path: Path) -> None:
    run = run_case(case, claude_bin=claude_bin, workdir=tmp_path, stream=True)
    assert (run.exit_code, run.stderr) == (1, "")
    assert run.requests == case.max_retries + 1
    lines, fixture = stream_lines(run.stdout), recorded(case)
    assert shape(lines) == shape(fixture)
    assert classified(lines, run.started) == classified(fixture, run.started)
    _check_reset(case, run, lines)


def _check_reset(case: LimitCase, run: CaseRun, lines: list[dict[str, Any]]) -> None:
    """The event carries the API's reset exactly; the text says it to the minute."""
    if case.ahead is None:
        return
    resets_at = rejected(lines)["resetsAt"]
    assert resets_at == int(run.started + case.ahead)
    assert parse_reset_time(lines[-1]["result"], run.started) == resets_at - resets_at % 60


def test_plain_print_as_recorded(case: LimitCase, claude_bin: Path, tmp_path: Path) -> None:
    run = run_case(case, claude_bin=claude_bin, workdir=tmp_path, stream=False)
    assert (run.exit_code, run.stderr) == (1, "")
    fixture = recorded(case)
    assert normalized(run.stdout) == normalized(fixture[-1]["result"])
    hit = classify_shell_failure(run.exit_code, run.stdout, run.started)
    assert (None if hit is None else (hit.kind, hit.limit_type)) == classified(fixture, run.started)


def test_the_fixtures_are_stream_json(case: LimitCase) -> None:
    text = (FIXTURES / f"{case.name}.jsonl").read_text(encoding="utf-8")
    assert all(json.loads(line) for line in text.splitlines())
    assert recorded(case)[0]["subtype"] == "init"
