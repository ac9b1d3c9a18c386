"""A `parallel:` fan-out stopped, interrupted or killed, then resumed (issue 25 items 5
and 6).

Each branch keeps its own place under the run's record (`head.parallel`): after Ctrl-C,
`ll-loop stop` or kill -9 of the runner, `resume` stops the actions a killed runner left
behind, never runs a finished item again, and goes on inside each unfinished item's
child at its saved state. Every action appends a mark, so a state run twice shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, run_cli

from little_loops.cli.processes import action_groups, wait_until_gone
from little_loops.fsm.persistence import StatePersistence

# Item `a` goes straight through; the others wait in `two` until `go-fast` exists.
CHILD = """\
name: child
initial: one
states:
  one:
    action: "echo one-${context.item} >> marks"
    next: two
  two:
    action: >-
      echo two-${context.item} >> marks;
      test ${context.item} = a || test -f go-fast || sleep 30
    next: three
  three:
    action: "echo three-${context.item} >> marks"
    next: done
  done:
    terminal: true
"""

PARENT = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nb\\nc"
      loop: child
      max_workers: 3
    on_success: after
    on_partial: failed
    on_failure: failed
  after:
    action: "echo after >> marks"
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""


# Each mark once, but `two` of `b` and `c` twice: cut off, then run again by the resume.
MARKS_AFTER_RESUME = Counter(
    {
        "one-a": 1,
        "two-a": 1,
        "three-a": 1,
        "one-b": 1,
        "one-c": 1,
        "two-b": 2,
        "two-c": 2,
        "three-b": 1,
        "three-c": 1,
        "after": 1,
    }
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "child.yaml").write_text(CHILD)
    (tmp_path / ".loops" / "fan.yaml").write_text(PARENT)
    return tmp_path


def _start(project: Path, loop: str) -> subprocess.Popen[str]:
    """`ll-loop run <loop> -q` in `project`, left running."""
    return subprocess.Popen(
        [str(LL_LOOP), "run", loop, "-q"],
        cwd=project,
        env=cli_env(project),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _marks(root: Path) -> list[str]:
    path = root / "marks"
    return path.read_text().splitlines() if path.exists() else []


def _saved(root: Path) -> dict[str, object]:
    state = StatePersistence("fan", root / ".loops").load_state_checked()
    assert state is not None
    return {"state": state, "parallel": (state.head or {}).get("parallel") or {}}


def _wait_mid_fanout(root: Path, seconds: float = 30) -> None:
    """Until `a` finished (its result saved) and `b`, `c` wait in `two` with their
    action groups recorded."""
    deadline = time.monotonic() + seconds
    while True:
        assert time.monotonic() < deadline, _marks(root)
        marks = set(_marks(root))
        if {"three-a", "two-b", "two-c"} <= marks:
            with contextlib.suppress(Exception):
                saved = _saved(root)
                state = saved["state"]
                results = saved["parallel"].get("results", {})  # type: ignore[attr-defined]
                if "0" in results and len(state.action_groups or []) >= 2:  # type: ignore[attr-defined]
                    return
        time.sleep(0.05)


def _stop(root: Path, process: subprocess.Popen[str], how: str) -> list[int]:
    _wait_mid_fanout(root)
    groups = action_groups(process.pid)
    assert len(groups) == 2  # the two waiting branches' actions, each its own group
    if how == "kill -9":
        process.send_signal(signal.SIGKILL)
    elif how == "Ctrl-C":
        process.send_signal(signal.SIGINT)
    else:
        stopped = run_cli(root, "stop", "fan")
        assert stopped.returncode == 0, stopped.stderr
    process.communicate(timeout=30)
    assert process.returncode == (-signal.SIGKILL if how == "kill -9" else 130)
    return groups


@pytest.mark.parametrize("how", ["kill -9", "Ctrl-C", "ll-loop stop"])
def test_issue25_item6_resume_goes_on_inside_each_unfinished_item(project: Path, how: str) -> None:
    """Done-when: stopped mid-fan-out, then `resume`: `a` (finished) never runs again,
    `b` and `c` run their cut-off `two` again and their last step once."""
    process = _start(project, "fan")
    started = time.monotonic()
    groups = _stop(project, process, how)
    if how != "kill -9":  # Ctrl-C and stop end every branch's process group promptly
        assert time.monotonic() - started < 20
        for group in groups:
            assert wait_until_gone(group, 5)
    saved = _saved(project)
    state = saved["state"]
    assert (state.current_state, state.phase) == ("go", "entered")  # type: ignore[attr-defined]
    parallel = saved["parallel"]
    assert sorted(parallel["results"]) == ["0"]  # type: ignore[index]
    places = parallel["places"]  # type: ignore[index]
    assert {k: v[0]["current_state"] for k, v in places.items()} == {"1": "two", "2": "two"}
    (project / "go-fast").touch()
    resumed = run_cli(project, "resume", "fan", "-q", timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    for group in groups:  # a killed runner's actions were stopped by the resume
        assert wait_until_gone(group, 5)
    counts = Counter(_marks(project))
    assert counts == MARKS_AFTER_RESUME
    final = StatePersistence("fan", project / ".loops").load_state_checked()
    assert final is not None and final.status == "completed"
    assert "parallel" not in (final.head or {})


def test_issue25_status_lists_the_branches(project: Path) -> None:
    """`status` of a run mid-fan-out lists each branch with its state."""
    process = _start(project, "fan")
    try:
        _wait_mid_fanout(project)
        shown = run_cli(project, "status", "fan")
        assert shown.returncode == 0, shown.stderr
        lines = [line.strip() for line in shown.stdout.splitlines()]
        assert "Branches of go: 3 items (1 finished)" in lines
        assert "[go 1/3] a: yes" in lines
        assert "[go 2/3] b: at two" in lines
        assert "[go 3/3] c: at two" in lines
        as_json = json.loads(run_cli(project, "status", "fan", "--json").stdout)
        assert as_json["branches"] == [
            {"item_index": 0, "item": "a", "status": "yes", "state": None},
            {"item_index": 1, "item": "b", "status": "started", "state": "two"},
            {"item_index": 2, "item": "c", "status": "started", "state": "two"},
        ]
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    for group in action_groups(process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


OUTER = """\
name: outer
initial: inner
states:
  inner:
    loop: fan
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def _inner_parallel(root: Path) -> dict[str, object]:
    """The fan-out's memory as saved in the sub-loop's place (`head.sub_loops`)."""
    state = StatePersistence("outer", root / ".loops").load_state_checked()
    assert state is not None
    (record,) = (state.head or {})["sub_loops"]
    parallel: dict[str, object] = record["counters"]["head"].get("parallel") or {}
    return parallel


def test_a_fanout_inside_a_sub_loop_keeps_each_items_place_while_it_runs(project: Path) -> None:
    """The sub-loop routes only when its fan-out ends, so its saved place is refreshed as
    the items go on: after kill -9 mid-fan-out, `resume` never runs the finished `a`
    again and runs `b`, `c` from their cut-off `two` (was: the whole fan-out again)."""
    (project / ".loops" / "outer.yaml").write_text(OUTER)
    process = _start(project, "outer")
    deadline = time.monotonic() + 30
    while not (
        {"three-a", "two-b", "two-c"} <= set(_marks(project))
        and "0" in (_saved_inner_results(project))
        and len(_saved_groups(project)) >= 2  # the waiting actions' groups, saved
    ):
        assert time.monotonic() < deadline, _marks(project)
        time.sleep(0.05)
    groups = action_groups(process.pid)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)

    places = _inner_parallel(project)["places"]
    assert {k: v[1]["current_state"] for k, v in places.items()} == {"1": "two", "2": "two"}  # type: ignore[attr-defined]
    (project / "go-fast").touch()
    resumed = run_cli(project, "resume", "outer", "-q", timeout=60)

    assert resumed.returncode == 0, resumed.stderr
    for group in groups:
        assert wait_until_gone(group, 5)
    counts = Counter(_marks(project))
    assert counts == MARKS_AFTER_RESUME


def _saved_inner_results(root: Path) -> dict[str, object]:
    with contextlib.suppress(Exception):
        results = _inner_parallel(root).get("results")
        if isinstance(results, dict):
            return results
    return {}


def _saved_groups(root: Path) -> list[object]:
    with contextlib.suppress(Exception):
        state = StatePersistence("outer", root / ".loops").load_state_checked()
        if state is not None:
            return list(state.action_groups or [])
    return []
