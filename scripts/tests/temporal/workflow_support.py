"""What the loop workflow's tests on the time-skipping server share: a checkout with a
loop file, the `LoopRuns` of a fresh task queue, and a run's input."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fixtures.cli_support import write_loop
from fixtures.temporal_servers import TimeSkipping

from little_loops.fsm.temporal.client import LoopRuns
from little_loops.fsm.temporal.payloads import RunInput
from little_loops.fsm.validation import load_loop


def checkout_with(root: Path, name: str, text: str) -> Path:
    """`root` holding the loop `name` (its YAML `text`) in `.loops/`."""
    root.mkdir(parents=True, exist_ok=True)
    write_loop(root, name, text)
    return root


# The fields of a run's state that a local and a Temporal run of a HEAD sub-loop share.
STABLE_KEYS = ("status", "current_state", "iteration", "terminated_by")


def head_checkout(root: Path, check_prefix: str = "true") -> Path:
    """A checkout with the HEAD `parent` and its `child` (`head_loops`), the child's check
    first running `check_prefix`."""
    from head_loops import PARENT, child_waiting_with

    checkout = checkout_with(root, "parent", PARENT)
    write_loop(checkout, "child", child_waiting_with(check_prefix))
    return checkout


def timeless(value: Any) -> Any:
    """`value` without durations, which differ between any two runs."""
    if isinstance(value, dict):
        return {key: timeless(item) for key, item in value.items() if key != "duration_ms"}
    return value


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def runs_for(time_skipping: TimeSkipping, checkout: Path) -> LoopRuns:
    """The runs of `checkout` on a task queue of their own. Queries give up after 10 s, not
    30: on the time-skipping server a query that reaches a run as it continues as new
    waits out its whole deadline (a 150-state run took 30 s, 10 s with this)."""
    from little_loops.fsm.temporal.timeouts import Timeouts

    return LoopRuns(
        time_skipping.client,
        checkout,
        checkout / ".loops",
        unique("queue"),
        timeouts=Timeouts(query_seconds=10),
    )


def run_input(runs: LoopRuns, name: str, **options: Any) -> RunInput:
    fsm = load_loop(runs.loops_dir / f"{name}.yaml")
    return runs.run_input(fsm, os.environ, **options)


def limited_loop() -> str:
    """A loop whose first action meets claude's weekly limit, resetting tomorrow at 3am
    UTC (at most two days ahead: within its `max_wait`); once waited, it finishes."""
    return LIMITED_LOOP.replace("RESET", _tomorrow())


LIMITED_LOOP = """\
name: limited
initial: work
rate_limit:
  max_wait: 2d
states:
  work:
    action: >-
      if [ -f tried ]; then echo finished;
      else touch tried; echo "You've hit your weekly limit · resets RESET, 3am (UTC)"; exit 1; fi
    next: done
  done:
    terminal: true
"""


def _tomorrow() -> str:
    return (datetime.now(UTC) + timedelta(days=1)).strftime("%b %-d")
