"""A handoff or a usage limit inside an item of a `parallel:` fan-out pauses the run with
the item's place kept, as one inside a sub-loop does (`revisions.BRANCH_PAUSES`); the
resume goes on inside that item and never runs a finished item again. Before, the item
ended `no` and its work was lost to the fan-out's `on_partial`/`on_no` route.

Real `ll-loop` processes in `tmp_path`; slash commands run the scripted stream-json
`claude` (fixtures/scripted_claude.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures import scripted_claude
from fixtures.cli_support import cli_env, run_cli, write_loop

FAN = """\
name: fan
initial: go
{extra}
states:
  go:
    parallel:
      items: "{items}"
      loop: one
      max_workers: {workers}
    on_yes: done
    on_partial: partial
    on_no: failed
  done: {{terminal: true}}
  partial: {{terminal: true}}
  failed: {{terminal: true}}
"""

HANDING_OFF = """\
name: one
initial: work
states:
  work:
    action: >-
      if [ ${context.item} = b ] && [ ! -f handed-b ]; then touch handed-b;
      echo 'CONTEXT_HANDOFF: go on with b'; else echo did ${context.item}; fi
    next: check
  check:
    action: "true"
    on_success: done
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""

LIMITED = """\
name: one
initial: work
rate_limit:
  max_wait: 1
states:
  work:
    action: /ll:work ${context.item}
    evaluate:
      type: exit_code
    on_success: done
    on_failure: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def _state(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / ".loops/.running/fan.state.json").read_text())
    return data


def _events(root: Path) -> list[dict[str, Any]]:
    text = (root / ".loops/.running/fan.events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _after_resume(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kinds = [event["event"] for event in events]
    return events[len(kinds) - kinds[::-1].index("loop_resume") :]


def test_a_handoff_in_an_item_pauses_the_run_and_the_resume_goes_on_inside_it(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "fan", FAN.format(items="a\\nb\\nc", workers=3, extra=""))
    write_loop(tmp_path, "one", HANDING_OFF)

    paused = run_cli(tmp_path, "run", "fan")

    assert paused.returncode == 3, paused.stdout + paused.stderr
    assert "[go 2/3] b: stopped: handoff" in paused.stdout
    assert "Loop paused for handoff: go" in paused.stdout
    saved = _state(tmp_path)
    assert saved["status"] == "awaiting_continuation"
    parallel = saved["head"]["parallel"]
    assert sorted(parallel["results"]) == ["0", "2"]  # a and c finished, yes
    assert parallel["places"]["1"][0]["handoff_context"] == {
        "prompt": "go on with b",
        "count": 1,
        "state": "work",
    }

    resumed = run_cli(tmp_path, "resume", "fan")

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "fan-out done: 3 yes, 0 no, 0 error -> yes" in resumed.stdout
    again = [e for e in _after_resume(_events(tmp_path)) if e["event"] == "action_start"]
    assert {e["branch"] for e in again} == {1}  # only b runs again, from its `work`
    assert _state(tmp_path)["current_state"] == "done"


@pytest.mark.slow  # over 2 s: not in the development loop
def test_a_usage_limit_in_an_item_pauses_the_run_and_the_resume_continues_its_session(
    tmp_path: Path,
) -> None:
    """The limit's reset is beyond the child's `max_wait`: the run ends `usage_limited`
    (exit 7) with b not started; after the reset, `resume` continues a's claude session."""
    write_loop(tmp_path, "fan", FAN.format(items="a\\nb", workers=1, extra=""))
    write_loop(tmp_path, "one", LIMITED)
    limited = {"text": "You've hit your limit", "is_error": True, "status": 429, "reset_in": 2}
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(scripted_claude.install(tmp_path / "fake", [limited, {}, {}]))

    ended = run_cli(tmp_path, "run", "fan", env=env)

    assert ended.returncode == 7, ended.stdout + ended.stderr
    saved = _state(tmp_path)
    assert saved["status"] == "usage_limited"
    assert saved["head"]["parallel"]["results"] == {}  # a paused, b never started
    place = saved["head"]["parallel"]["places"]["0"][0]
    assert place["limit_wait"]["session_id"] == "s-0"
    reset = float(place["limit_wait"]["until"])
    time.sleep(max(0.0, reset - time.time()) + 0.5)

    resumed = run_cli(tmp_path, "resume", "fan", env=env)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "fan-out done: 2 yes, 0 no, 0 error -> yes" in resumed.stdout
    calls = scripted_claude.calls(tmp_path / "fake")
    assert len(calls) == 3
    assert "--resume" in calls[1] and calls[1][calls[1].index("--resume") + 1] == "s-0"
    assert "--resume" not in calls[2]  # b: a session of its own
