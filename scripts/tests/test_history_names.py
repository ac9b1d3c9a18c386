"""`history` names what it shows (issue 23, item 14): an unknown `--state` is an error
listing the loop's states, and a state's own events name their state."""

from __future__ import annotations

from pathlib import Path

from fixtures.cli_support import normalize, run_cli, write_loop

TWO = """\
name: two
initial: a
states:
  a: {action: "echo one", next: b}
  b: {action: "echo two", next: done}
  done: {terminal: true}
"""


def test_an_unknown_state_is_an_error_naming_the_states(tmp_path: Path) -> None:
    write_loop(tmp_path, "two", TWO)
    run_cli(tmp_path, "run", "two")
    done = run_cli(tmp_path, "history", "two", "--state", "c")
    assert (done.returncode, done.stdout, normalize(done.stderr)) == (
        1,
        "",
        "[T] --state c: two has no such state (its states: a, b, done)\n",
    )
    assert run_cli(tmp_path, "history", "two", "--state", "b").returncode == 0


def test_a_states_own_events_name_it(tmp_path: Path) -> None:
    write_loop(tmp_path, "two", TWO)
    run_cli(tmp_path, "run", "two")
    done = run_cli(tmp_path, "history", "two", "--event", "action_complete")
    shown = [line.split(" ", 1)[1].split(" duration_ms")[0] for line in done.stdout.splitlines()]
    assert shown == ["a  action_complete exit_code=0", "b  action_complete exit_code=0"]


def test_a_resume_is_one_line_and_skipped_lines_are_said(tmp_path: Path) -> None:
    """Issue 23 item 25 (earlier finding 18): the `loop_start` a resume writes after its
    `loop_resume` (as the reference did) was a second line; a line that is not an event
    was dropped without a word."""
    running = tmp_path / ".loops" / ".running"
    running.mkdir(parents=True)
    (running / "two.events.jsonl").write_text(
        '{"event": "loop_start", "ts": "2026-01-01T10:00:00+00:00", "loop": "two"}\n'
        '{"event": "loop_resume", "ts": "2026-01-01T10:05:00+00:00", "loop": "two"}\n'
        '{"event": "loop_start", "ts": "2026-01-01T10:05:00+00:00", "loop": "two"}\n'
        "garbage{\n"
    )
    done = run_cli(tmp_path, "history", "two", "-n", "0")
    assert [line.split(" ", 2)[2] for line in done.stdout.splitlines()] == [
        "loop_start loop=two",
        "loop_resume loop=two",
    ]
    assert done.stderr == (
        "note: 1 line of .loops/.running/two.events.jsonl skipped: not an event\n"
    )


def test_runs_since_lists_the_runs_under_way_then(tmp_path: Path) -> None:
    """Issue 23 item 14: `--since` was ignored by `--runs`."""
    import json

    for folder, updated in (
        ("20250101T000000.000000Z", "2025-01-01T00:00:00+00:00"),
        ("20260101T000000.000000Z", "2026-01-01T00:00:00+00:00"),
    ):
        path = tmp_path / ".loops" / ".history" / "two" / folder
        path.mkdir(parents=True)
        state = {
            "loop_name": "two",
            "current_state": "a",
            "iteration": 1,
            "captured": {},
            "prev_result": None,
            "last_result": None,
            "started_at": updated,
            "updated_at": updated,
            "status": "completed",
        }
        (path / "two.state.json").write_text(json.dumps(state))
    every = run_cli(tmp_path, "history", "two", "--runs", "--json")
    since = run_cli(tmp_path, "history", "two", "--runs", "--json", "--since", "2025-06-01")
    assert [run["run"] for run in json.loads(every.stdout)] == [1, 2]
    assert [run["run"] for run in json.loads(since.stdout)] == [2]


def test_an_event_name_the_run_never_wrote_is_an_error_naming_those_it_did(
    tmp_path: Path,
) -> None:
    """Issue 23 item 14: `--event evalute` (a typo) printed `No events match`."""
    write_loop(tmp_path, "two", TWO)
    run_cli(tmp_path, "run", "two")
    done = run_cli(tmp_path, "history", "two", "--event", "evalute")
    assert (done.returncode, normalize(done.stderr)) == (
        1,
        "[T] --event evalute: no such event in this run (its events: action_complete, "
        "action_start, loop_complete, loop_start, route, state_enter)\n",
    )


def test_lines_stay_in_time_order_after_a_usage_limit_wait() -> None:
    """Issue 23 item 14: the visit's line took its start's time, so after a three-hour
    wait it came after the wait's lines with an earlier time."""
    from little_loops.cli.history_lines import readable_lines

    def at(clock: str, **event: object) -> dict[str, object]:
        return {"ts": f"2026-01-01T{clock}+00:00", **event}

    events = [
        at("10:00:00", event="state_enter", state="work", iteration=1),
        at("10:00:00", event="action_start", action="/ll:work"),
        at("10:00:01", event="limit_wait", state="work", wait_seconds=10800),
        at("13:00:01", event="limit_wait_end", state="work", waited_seconds=10800),
        at("13:00:05", event="action_complete", exit_code=0),
        at("13:00:05", event="evaluate", verdict="success"),
        at("13:00:05", event="route", **{"from": "work", "to": "done"}),
    ]
    times = [line.split(" ")[1] for line in readable_lines(events, lambda _: True, fold=True)]
    assert times == sorted(times) == ["10:00:01", "13:00:01", "13:00:05"]
