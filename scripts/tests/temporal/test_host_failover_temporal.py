"""Issue 24 item 6 on Temporal (time-skipping server): the activity drives the same host
adapters on the worker's host; a usage limit moves a state to the next host of its list,
and after the first host's reset (a skipped timer) the next state returns to it; the host
memory and the spending per host are in the run's state, as locally."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_driver import use_fake_hosts
from fixtures.temporal_servers import TimeSkipping

try:
    from workflow_support import checkout_with, run_input, runs_for

    from little_loops.fsm.temporal.payloads import RunOutcome
    from little_loops.fsm.temporal.worker import build_worker
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 120.0

LOOP = """\
name: pair
initial: a
host: [codex, gemini]
backoff: 700
states:
  a: {action: "/work a", next: b}
  b: {action: "/work b", next: done}
  done: {terminal: true}
"""


def test_failover_and_return_on_temporal(
    time_skipping: TimeSkipping, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 items 3 and 6: codex limited -> gemini; 700 s later codex again."""
    checkout = checkout_with(tmp_path / "co", "pair", LOOP)
    script = [{"limit": time.time() + 600}, {"text": "a done"}, {"text": "b done"}]
    use_fake_hosts(monkeypatch, tmp_path, script)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]]]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "pair"))
            done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            page = await handle.query(LoopWorkflow.events, 0)
            return done, page.events

    done, events = time_skipping.run(scenario())

    assert done.state["current_state"] == "done"
    calls = [json.loads(line) for line in (tmp_path / "calls.log").read_text().splitlines()]
    assert [call["host"] for call in calls] == ["codex", "gemini", "codex"]
    switch = [e for e in events if e["event"] == "host_switch"]
    assert [(e["state"], e["from"], e["to"]) for e in switch] == [("a", "codex", "gemini")]
    back = [e for e in events if e["event"] == "host_return"]
    assert [(e["state"], e["host"], e["from"]) for e in back] == [("b", "codex", "gemini")]
    assert done.state["head"]["hosts"]["last"] == "codex"
    assert set(done.state["spending"]["hosts"]) == {"codex", "gemini"}
