"""Issue 22 item 2: every event name once (`fsm/engine/events.py`), and `history --event`
checked against that vocabulary (spec ll-loop-cli.md §4.3, the events file)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fixtures.cli_support import normalize, run_cli, write_loop

from little_loops.fsm.engine import events
from little_loops.fsm.engine.events import EVENT_NAMES, payload_type

PACKAGE = Path(__file__).resolve().parents[1] / "little_loops"
HELLO = Path(__file__).resolve().parents[2] / ".loops" / "hello.yaml"

TWO = """\
name: two
initial: a
states:
  a: {action: "echo one", next: b}
  b: {action: "echo two", next: done}
  done: {terminal: true}
"""

# A HEAD loop whose check fails twice, then its retries run out (`retry_exhausted`).
RETRIES = """\
name: retries
description: Fail, retry, give up.
initial: check
states:
  check:
    action: "false"
    max_retries: 1
    on_no: check
    on_retry_exhausted: done
  done: {terminal: true}
"""


def _written(checkout: Path, name: str) -> list[str]:
    path = checkout / ".loops" / ".running" / f"{name}.events.jsonl"
    return [json.loads(line)["event"] for line in path.read_text().splitlines()]


def test_every_event_a_run_writes_is_in_the_vocabulary(tmp_path: Path) -> None:
    """A legacy run with a handoff and its resume, and a HEAD run with retries."""
    write_loop(tmp_path, "hello", HELLO.read_text(encoding="utf-8"))
    write_loop(tmp_path, "retries", RETRIES)
    assert run_cli(tmp_path, "run", "hello").returncode == 3
    assert run_cli(tmp_path, "resume", "hello").returncode == 0
    run_cli(tmp_path, "run", "retries")
    written = {*_written(tmp_path, "hello"), *_written(tmp_path, "retries")}
    assert {"loop_resume", "handoff_detected", "retry_exhausted"} <= written
    assert written - EVENT_NAMES == set()


def test_each_name_is_its_constant_and_has_a_payload_type() -> None:
    constants = {
        getattr(events, name) for name in events.__all__ if name.isupper() and name != "EVENT_NAMES"
    }
    assert constants == EVENT_NAMES
    assert all(payload_type(name) is not None for name in EVENT_NAMES)
    assert payload_type("route").__annotations__.keys() >= {"from", "to", "reason", "verdict"}


def test_no_module_emits_or_compares_an_event_by_a_bare_name() -> None:
    """The core, the store, the workflow and the CLI's readers use the constants."""
    names = "|".join(sorted(EVENT_NAMES))
    bare = re.compile(
        rf'(emit\(\s*|get\("event"\) (?:==|!=) |kind == |kind in \((?:[^)]*, )?)"({names})"'
    )
    found = [
        f"{path.relative_to(PACKAGE)}: {match.group(0)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for match in bare.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_an_event_name_no_run_writes_beside_one_it_did_is_an_error_with_the_close_name(
    tmp_path: Path,
) -> None:
    """Before, `--event route --event evalute` showed the routes and dropped the typo."""
    write_loop(tmp_path, "two", TWO)
    run_cli(tmp_path, "run", "two")
    done = run_cli(tmp_path, "history", "two", "--event", "route", "--event", "evalute")
    assert (done.returncode, done.stdout, normalize(done.stderr)) == (
        1,
        "",
        "[T] --event evalute: ll-loop writes no such event (did you mean 'evaluate'?)\n",
    )


def test_an_unknown_event_name_for_a_loop_that_never_ran_says_so_first(tmp_path: Path) -> None:
    """Before, it said only `No history for: two`."""
    write_loop(tmp_path, "two", TWO)
    done = run_cli(tmp_path, "history", "two", "--event", "zzz")
    assert (done.returncode, done.stdout, normalize(done.stderr)) == (
        1,
        "",
        "[T] --event zzz: ll-loop writes no such event\n",
    )


def test_a_known_event_name_the_run_did_not_write_beside_one_it_did_is_fine(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "two", TWO)
    run_cli(tmp_path, "run", "two")
    done = run_cli(tmp_path, "history", "two", "--event", "loop_start", "--event", "backoff")
    assert (done.returncode, [line.split(" ", 1)[1] for line in done.stdout.splitlines()]) == (
        0,
        ["loop_start loop=two"],
    )
