"""Tests for `little_loops.cli.output`: the timestamped logger and formatting helpers."""

from __future__ import annotations

import os
import re

import pytest

from little_loops.cli.output import (
    Logger,
    colour_enabled,
    format_duration,
    paint,
    plural,
    write_error_line,
    write_line,
)

STAMPED = re.compile(r"^\[\d\d:\d\d:\d\d\] (.*)$")


def _messages(text: str) -> list[str]:
    lines = text.splitlines()
    matches = [STAMPED.match(line) for line in lines]
    assert all(matches), lines
    return [match.group(1) for match in matches if match]


def test_success_goes_to_stdout_warnings_and_errors_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logger = Logger()
    logger.success("all good")
    logger.warning("careful")
    logger.error("broken")
    out, err = capsys.readouterr()
    assert _messages(out) == ["all good"]
    assert _messages(err) == ["careful", "broken"]


def test_quiet_hides_everything_but_errors(capsys: pytest.CaptureFixture[str]) -> None:
    logger = Logger(quiet=True)
    logger.success("all good")
    logger.warning("careful")
    logger.error("broken")
    out, err = capsys.readouterr()
    assert out == ""
    assert _messages(err) == ["broken"]


def test_error_lines_keep_indented_lines_as_continuations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Logger().error_lines(["Loop not found: x", "  looked in: x, .loops/x.yaml", "second"])
    err = capsys.readouterr().err.splitlines()
    assert STAMPED.match(err[0]) and err[0].endswith(" Loop not found: x")
    assert err[1] == "  looked in: x, .loops/x.yaml"
    assert STAMPED.match(err[2]) and err[2].endswith(" second")


def test_plain_lines(capsys: pytest.CaptureFixture[str]) -> None:
    write_line("out")
    write_line()
    write_error_line("err")
    assert capsys.readouterr() == ("out\n\n", "err\n")


def test_no_colour_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    assert not colour_enabled(sys.stdout)
    assert paint("x", "\033[32m", sys.stdout) == "x"


def test_colour_on_a_terminal_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    leader, follower = os.openpty()
    try:
        with os.fdopen(follower, "w") as terminal:
            assert colour_enabled(terminal)
            assert paint("x", "\033[32m", terminal) == "\033[32mx\033[0m"
            monkeypatch.setenv("NO_COLOR", "")
            assert not colour_enabled(terminal)
    finally:
        os.close(leader)


def test_logger_colours_the_bracket_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    leader, follower = os.openpty()
    try:
        with os.fdopen(follower, "w") as terminal:
            monkeypatch.setattr("sys.stdout", terminal)
            Logger().success("done")
        text = os.read(leader, 1000).decode()
    finally:
        os.close(leader)
    assert re.fullmatch(r"\033\[32m\[\d\d:\d\d:\d\d\]\033\[0m done\r\n", text)


@pytest.mark.parametrize(
    ("duration_ms", "text"),
    [(0, "0.0s"), (4000, "4.0s"), (59_940, "59.9s"), (60_000, "1m 0s"), (154_000, "2m 34s")],
)
def test_format_duration(duration_ms: int, text: str) -> None:
    assert format_duration(duration_ms) == text


def test_plural() -> None:
    assert plural(1, "iteration") == "1 iteration"
    assert plural(0, "iteration") == "0 iterations"
    assert plural(2, "iteration") == "2 iterations"
