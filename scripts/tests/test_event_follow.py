"""Following files another process writes (little_loops.cli.event_follow) and the running
action's time (little_loops.cli.live_line), on real files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from little_loops.cli.event_follow import EventFollower, LogTail
from little_loops.cli.live_line import ActivityLine, elapsed_text


def _line(event: dict[str, object]) -> bytes:
    return json.dumps(event).encode() + b"\n"


def test_events_are_read_once_and_a_partial_last_line_waits_for_its_newline(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.events.jsonl"
    follower = EventFollower(path)
    assert follower.read_new().events == []  # no file yet
    first = _line({"event": "loop_start"})
    path.write_bytes(first + b'{"event": "state_')
    assert [e["event"] for e in follower.read_new().events] == ["loop_start"]
    with path.open("ab") as handle:
        handle.write(b'enter", "state": "a"}\n')
    found = follower.read_new()
    assert (found.events, found.replaced) == ([{"event": "state_enter", "state": "a"}], False)
    assert follower.read_new().events == []


def test_a_replaced_events_file_is_read_from_its_start(tmp_path: Path) -> None:
    """A new `run` moves the old file to `.loops/.history/` and starts a new one."""
    path = tmp_path / "x.events.jsonl"
    path.write_bytes(_line({"event": "loop_start", "n": 1}) + _line({"event": "route"}))
    follower = EventFollower(path)
    assert len(follower.read_new().events) == 2
    os.replace(path, tmp_path / "archived.jsonl")
    assert follower.read_new().events == []  # between the two runs: no file
    path.write_bytes(_line({"event": "loop_start", "n": 2}))
    found = follower.read_new()
    assert (found.events, found.replaced) == ([{"event": "loop_start", "n": 2}], True)


def test_log_tail_gives_whole_lines_then_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "1-a.log"
    tail = LogTail(path)
    assert tail.read_new() == []
    path.write_bytes(b"one\r\ntwo\nthr")
    assert tail.read_new() == ["one", "two"]
    assert tail.read_rest() == ["thr"]


def test_elapsed_text_changes_once_a_second() -> None:
    assert [elapsed_text(s) for s in (0.4, 12.9, 65, 3725)] == [
        "(0s)",
        "(12s)",
        "(1m05s)",
        "(1h02m)",
    ]


def test_activity_line_redraws_in_place_and_waits_after_output() -> None:
    line = ActivityLine("   ")
    assert line.redraw(5.0, line_open=True) == ""  # no action under way
    line.start("[1/5] a -> make", at=0.0)
    assert line.redraw(0.5, line_open=True) == ""  # not a second yet
    assert line.redraw(1.2, line_open=True) == "\r[1/5] a -> make  (1s)"
    assert line.redraw(1.6, line_open=True) == ""  # same text: nothing to write
    line.output_arrived(2.0)
    assert line.redraw(2.5, line_open=False) == ""  # output came less than a second ago
    assert line.redraw(3.1, line_open=False) == "\r\x1b[K   (3s)"  # below the output
    assert line.erase() == "\r\x1b[K"
    assert line.erase() == ""
    line.stop()
    assert line.redraw(9.0, line_open=False) == ""


def test_live_display_shows_the_time_on_the_action_line_then_below_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from little_loops.cli.display import ProgressDisplay

    now = [100.0]
    display = ProgressDisplay(max_iterations=3, verbose=True, live=True, clock=lambda: now[0])
    display({"event": "state_enter", "state": "fix", "iteration": 1})
    display({"event": "action_start", "action": "make test"})
    now[0] += 2.2
    display.tick()
    display.on_output_line("ok")
    now[0] += 1.5
    display.tick()
    display({"event": "action_complete", "exit_code": 0})
    display({"event": "evaluate", "verdict": "success"})
    display.tick()  # no action under way: nothing
    assert capsys.readouterr().out == (
        "[1/3] fix -> make test"
        "\r[1/3] fix -> make test  (2s)\n"
        "       | ok\n"
        "\r\x1b[K       (3s)"
        "\r\x1b[K       ✓ success\n"
    )
