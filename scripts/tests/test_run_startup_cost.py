"""A local `ll-loop run` of a plain loop loads only what it uses (issue 22 item 9, the
per-action cost): no asyncio (the Temporal side), no OpenSSL hashes, uuid, tempfile or
secrets. (zoneinfo stays: the run core reads claude's reset times with it inside Temporal's
workflow sandbox, where a late import of it hands back a proxy `datetime` refuses.)
Each was imported at start-up by a module that needs it only for
HEAD loops, failing steps, sub-loop worktrees, claude's limits or `--notify`; loading
them cost a 200-action run about 0.1 ms per action."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

LOADED_AFTER_RUN = """
import sys
from little_loops.cli import main_loop
code = main_loop(sys.argv[1:])
unused = ["asyncio", "ssl", "hashlib", "uuid", "tempfile", "secrets"]
print(code, [name for name in unused if name in sys.modules])
"""

SPIN = """name: spin
initial: run
max_iterations: 3
states:
  run:
    action: 'true'
    next: run
  done:
    terminal: true
"""


def loaded_after(tmp_path: Path, *argv: str) -> str:
    finished = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER_RUN, *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path), "LL_ENGINE": "local"},
    )
    return finished.stdout.splitlines()[-1]


def test_a_local_run_of_a_plain_loop_loads_no_module_it_does_not_use(tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "spin.yaml").write_text(SPIN, encoding="utf-8")
    # Exit code 4: max_iterations reached, after three `true` actions.
    assert loaded_after(tmp_path, "run", "-q", "spin") == "4 []"


# Issue 22 item 9, start-up: the feature subsystems a plain loop never reaches, taken off
# a plain run's start-up path (imported where a request of the feature arrives).
FEATURE_MODULES = [
    "little_loops.cli.approval_prompt",
    "little_loops.fsm.engine.approval_requests",
    "little_loops.fsm.engine.approval_step",
    "little_loops.fsm.engine.approval_wait",
    "little_loops.fsm.engine.branch_servers",
    "little_loops.fsm.engine.branch_threads",
    "little_loops.fsm.engine.child_loader",
    "little_loops.fsm.engine.child_outcome",
    "little_loops.fsm.engine.child_run",
    "little_loops.fsm.engine.circuit",
    "little_loops.fsm.engine.handoff_requests",
    "little_loops.fsm.engine.head_rate_limit_step",
    "little_loops.fsm.engine.head_rate_limits",
    "little_loops.fsm.engine.host_failover",
    "little_loops.fsm.engine.judge_requests",
    "little_loops.fsm.engine.limit_policy",
    "little_loops.fsm.engine.parallel",
    "little_loops.fsm.engine.parallel_branch",
    "little_loops.fsm.engine.parallel_requests",
    "little_loops.fsm.engine.requests",
    "little_loops.fsm.engine.sub_loop",
    "little_loops.fsm.engine.sub_loop_requests",
    "little_loops.fsm.engine.wait_requests",
    "little_loops.fsm.engine.workspace_requests",
    "little_loops.fsm.judging.json_scan",
    "little_loops.fsm.judging.return_metadata",
    "little_loops.fsm.model.approval_records",
    "little_loops.fsm.process.checkpoint",
    "little_loops.fsm.process.hosts",
    "little_loops.fsm.process.hosts.base",
    "little_loops.fsm.process.hosts.claude",
    "little_loops.fsm.process.idle_watch",
    "little_loops.fsm.process.path_fingerprint",
    "little_loops.fsm.process.workspace",
    "little_loops.fsm.store.notifier",
    # Standard modules only rare paths used: the host name is `os.uname().nodename`, a
    # snapshot's temporary name counts on from a number drawn once per process, a stray
    # temporary file's pattern is escaped without `glob`.
    "glob",
    "random",
    "socket",
]

# The dataclasses a plain run builds (Python 3.11 compiles each one's generated methods at
# import: about 0.3-0.5 ms apiece). 107 before the feature subsystems left the start-up
# path; a new one on the path of every run must be worth its start-up cost.
DATACLASS_CEILING = 66

COUNTED_RUN = """
import dataclasses
import json
import sys

built = []
process_class = dataclasses._process_class


def counted(cls, *args, **kwargs):
    built.append(f"{cls.__module__}.{cls.__qualname__}")
    return process_class(cls, *args, **kwargs)


dataclasses._process_class = counted
from little_loops.cli import main_loop

code = main_loop(sys.argv[2:])
features = json.loads(sys.argv[1])
loaded = [name for name in features if name in sys.modules]
print(json.dumps({"code": code, "loaded": loaded, "dataclasses": built}))
"""


def counted_run(tmp_path: Path, *argv: str) -> dict[str, Any]:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "spin.yaml").write_text(SPIN, encoding="utf-8")
    finished = subprocess.run(
        [sys.executable, "-c", COUNTED_RUN, json.dumps(FEATURE_MODULES), *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path), "LL_ENGINE": "local"},
    )
    result: dict[str, Any] = json.loads(finished.stdout.splitlines()[-1])
    return result


def test_a_plain_run_loads_no_feature_subsystem(tmp_path: Path) -> None:
    """Issue 22 item 9: approvals, sub-loops, fan-outs, circuits, limits, host failover,
    agent hosts, idle watches, checkpoints, the stall guard's watcher, notifications and
    the requests only they make load when a loop first uses them, not at start-up."""
    run = counted_run(tmp_path, "run", "-q", "spin")
    assert (run["code"], run["loaded"]) == (4, [])


def test_a_plain_run_builds_at_most_the_ceiling_of_dataclasses(tmp_path: Path) -> None:
    """Issue 22 item 9: each dataclass built at import costs start-up; a plain run builds
    no more than `DATACLASS_CEILING` of them."""
    run = counted_run(tmp_path, "run", "-q", "spin")
    assert run["code"] == 4
    assert len(run["dataclasses"]) <= DATACLASS_CEILING, run["dataclasses"]


def test_every_request_still_imports_from_requests() -> None:
    """The requests that moved out (spec/fsm-api.md keeps `little_loops.fsm` working; code
    written against `engine.requests` keeps working too): the same classes, and `Request`
    is still the union of them all."""
    from little_loops.fsm.engine import (
        approval_requests,
        handoff_requests,
        judge_requests,
        parallel_requests,
        requests,
        run_requests,
        sub_loop_requests,
        wait_requests,
        workspace_requests,
    )

    homes = [
        approval_requests,
        handoff_requests,
        judge_requests,
        parallel_requests,
        run_requests,
        sub_loop_requests,
        wait_requests,
        workspace_requests,
    ]
    for home in homes:
        for name in home.__all__:
            assert getattr(requests, name) is getattr(home, name), name
    union = set(typing.get_args(requests.Request))
    every = {run_requests.RunAction, run_requests.Finish, requests.RunChild, requests.RunBranches}
    every |= {judge_requests.EvaluateWithIO, wait_requests.Sleep, wait_requests.WaitUntil}
    every |= {workspace_requests.Checkpoint, workspace_requests.InspectWorkspace}
    every |= {workspace_requests.FingerprintPaths, handoff_requests.HandOff}
    every |= {approval_requests.AwaitApproval, parallel_requests.AddBranchWorktree}
    every |= {sub_loop_requests.LoadChild, sub_loop_requests.AttachWorktree}
    every |= {sub_loop_requests.DetachWorktree}
    assert union == every
