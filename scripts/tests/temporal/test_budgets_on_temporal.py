"""Budgets that route (issue 26 item 1; docs/budgets.md §5) on the Temporal engine, on the
time-skipping server: a state's own budget routes `on_budget`, then the run's budget runs
the loop's wrap-up once and ends `budget_exhausted`, exactly as a local run of the same loop
does (the same run core decides; what each state spent and the wrap-up mark travel in the
run's spending). The scripted stream-json `claude` costs $0.25 a call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fixtures import scripted_claude
from fixtures.cli_support import cli_env, run_cli
from fixtures.temporal_servers import TimeSkipping

try:
    from workflow_support import STABLE_KEYS, checkout_with, run_input, runs_for

    from little_loops.fsm.temporal.payloads import RunOutcome
    from little_loops.fsm.temporal.worker import build_worker
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 120.0

LOOP = """\
name: budgeted
initial: polish
max_cost_usd: 1.0
on_budget: wrap
states:
  polish:
    action: /ll:polish
    max_cost_usd: 0.5
    on_budget: more
    next: polish
  more:
    action: /ll:more
    next: more
  wrap:
    action: echo wrapped >> wrap.txt
    next: done
  done:
    terminal: true
"""

# polish $0.25, polish $0.50 (its budget: to `more`), more $0.75, more $1.00 (the run's
# budget: the wrap-up once, then the end, standing at `more`).
ENTERED = ["polish", "polish", "more", "more", "wrap"]


def _kinds(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """What the run did, step by step: states entered and the budget events."""
    shown = ("state_enter", "state_budget_exhausted", "budget_wrap_up")
    return [
        (event["event"], event.get("state") or event.get("wrap_up_state") or "")
        for event in events
        if event["event"] in shown
    ]


def test_budgets_route_on_temporal_as_they_do_locally(
    time_skipping: TimeSkipping, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = checkout_with(tmp_path / "local", "budgeted", LOOP)
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(scripted_claude.install(tmp_path / "fake-local", [{"cost": 0.25}]))
    assert run_cli(local, "run", "budgeted", env=env).returncode == 8
    local_state = json.loads((local / ".loops/.running/budgeted.state.json").read_text())
    local_events = [
        json.loads(line)
        for line in (local / ".loops/.running/budgeted.events.jsonl").read_text().splitlines()
    ]
    checkout = checkout_with(tmp_path / "remote", "budgeted", LOOP)
    fake = scripted_claude.install(tmp_path / "fake-remote", [{"cost": 0.25}])
    monkeypatch.setenv("LL_CLAUDE_BIN", str(fake))  # the in-process worker's actions
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]]]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "budgeted"))
            done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return done, (await handle.query(LoopWorkflow.events, 0)).events

    done, events = time_skipping.run(scenario())

    assert [done.state[key] for key in STABLE_KEYS] == [local_state[key] for key in STABLE_KEYS]
    assert (done.state["status"], done.state["current_state"]) == ("budget_exhausted", "more")
    assert _kinds(events) == _kinds(local_events)
    assert [kind for kind in _kinds(events) if kind[0] == "state_enter"] == [
        ("state_enter", name) for name in ENTERED
    ]
    assert done.state["spending"] == local_state["spending"]
    assert done.state["spending"]["states"] == {"polish": {"cost_usd": 0.5, "tokens": 240}}
    assert done.state["spending"]["wrapped_up"] == [1.0, None]
    assert len(scripted_claude.calls(tmp_path / "fake-remote")) == 4
    assert (checkout / "wrap.txt").read_text() == "wrapped\n"
