"""Issue 22 item 1: one run record for both engines. A local run and a Temporal run (the
time-skipping test server) of the same loop give the same `status --json`, apart from
the fields only one engine has and those that differ between any two runs.

`ll-loop status --json` prints, for a local run, `LoopState.to_dict()` plus
`process_alive` (cli/cmd_inspect.py) and, for a Temporal run, the workflow's `status`
query as `LoopRuns.status` returns it (cli/temporal_engine.py `status_temporal`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fixtures.cli_support import cli_env, run_cli
from fixtures.temporal_servers import TimeSkipping

try:
    from workflow_support import checkout_with, head_checkout, run_input, runs_for

    from little_loops.fsm.temporal.client import LoopRuns
    from little_loops.fsm.temporal.payloads import ResumeSignal
    from little_loops.fsm.temporal.worker import build_worker
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

HELLO = Path(__file__).resolve().parents[3] / ".loops" / "hello.yaml"
WAIT_SECONDS = 120.0

# Only one engine has these: the local runner's process (`pid`, and `process_alive`, which
# `status --json` adds for a state file) and the actions Temporal ran again after a worker
# or server failure (`action_retries`; none here, so it is absent anyway).
ENGINE_FIELDS = ("pid", "process_alive", "action_retries")
# These differ between any two runs of the same loop, whatever the engine (`run_dir`: the
# HEAD run folder `ll-loop run` names, `.loops/runs/<name>-<start>-<id>/`).
RUN_FIELDS = ("started_at", "updated_at", "resumed_at", "elapsed_ms", "duration_ms", "run_dir")


def _comparable(value: Any, checkout: Path) -> Any:
    """`value` without the fields above; paths relative to the run's checkout."""
    if isinstance(value, dict):
        dropped = (*ENGINE_FIELDS, *RUN_FIELDS)
        return {k: _comparable(v, checkout) for k, v in value.items() if k not in dropped}
    if isinstance(value, list):
        return [_comparable(item, checkout) for item in value]
    if isinstance(value, str):
        return value.replace(str(checkout.resolve()), "<checkout>")
    return value


def _local_status(checkout: Path, name: str, tmp_path: Path) -> dict[str, Any]:
    """`ll-loop status <name> --json` of the local run in `checkout`."""
    done = run_cli(checkout, "status", name, "--json", env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    status: dict[str, Any] = json.loads(done.stdout)
    return status


def _temporal_run(
    time_skipping: TimeSkipping, runs: LoopRuns, name: str, *, resume: bool
) -> dict[str, Any]:
    """Run `name` on Temporal (resumed once, as `ll-loop resume` does, when `resume`);
    the `status --json` of its end."""

    async def scenario() -> dict[str, Any]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, name))
            if resume:
                await runs.follow(name, lambda event: None)  # until it pauses
                await runs.resume(name, ResumeSignal())
            await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return await runs.status(name) or {}

    return time_skipping.run(scenario())


def test_hello_paused_and_resumed_says_the_same_on_both_engines(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    text = HELLO.read_text(encoding="utf-8")
    local = checkout_with(tmp_path / "local", "hello", text)
    env = cli_env(tmp_path)
    assert run_cli(local, "run", "hello", env=env).returncode == 3
    assert run_cli(local, "resume", "hello", env=env).returncode == 0
    local_status = _local_status(local, "hello", tmp_path)
    remote = checkout_with(tmp_path / "remote", "hello", text)

    remote_status = _temporal_run(
        time_skipping, runs_for(time_skipping, remote), "hello", resume=True
    )

    assert (remote_status["status"], remote_status["iteration"]) == ("completed", 7)
    assert "resumed_at" in remote_status and "resumed_at" in local_status
    assert _comparable(remote_status, remote) == _comparable(local_status, local)


def test_a_head_sub_loop_run_says_the_same_on_both_engines(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """The child's events (`depth` 1) leave the parent's phase and last evaluation alone
    on both engines (spec §9b): the parent never evaluated, so `last_result` is null."""
    local = head_checkout(tmp_path / "local")
    assert run_cli(local, "run", "parent", env=cli_env(tmp_path)).returncode == 0
    local_status = _local_status(local, "parent", tmp_path)
    remote = head_checkout(tmp_path / "remote")

    remote_status = _temporal_run(
        time_skipping, runs_for(time_skipping, remote), "parent", resume=False
    )

    assert (remote_status["status"], remote_status["last_result"]) == ("completed", None)
    assert _comparable(remote_status, remote) == _comparable(local_status, local)


def _report_run(checkout: Path, env: dict[str, str], *engine: str) -> dict[str, Any]:
    """The one run `ll-loop report hello --json` gives, without what differs between runs."""
    done = run_cli(checkout, "report", "hello", "--json", *engine, env=env)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    return {k: v for k, v in run.items() if k not in ("started_at", "duration_ms")}


def test_report_of_hello_is_the_same_on_both_engines(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """Issue 26 item 3 on Temporal (`report --engine temporal`): the run's figures from
    its status, per state from the events its workflow kept (a worker answers, as for
    `history --engine temporal`)."""
    text = HELLO.read_text(encoding="utf-8")
    local = checkout_with(tmp_path / "local", "hello", text)
    env = cli_env(tmp_path)
    assert run_cli(local, "run", "hello", env=env).returncode == 3
    assert run_cli(local, "resume", "hello", env=env).returncode == 0
    remote = checkout_with(tmp_path / "remote", "hello", text)
    runs = runs_for(time_skipping, remote)
    server = {
        "LL_TEMPORAL_ADDRESS": time_skipping.client.service_client.config.target_host,
        "LL_TEMPORAL_NAMESPACE": time_skipping.client.namespace,
    }

    async def scenario() -> dict[str, Any]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "hello"))
            await runs.follow("hello", lambda event: None)  # until it pauses
            await runs.resume("hello", ResumeSignal())
            await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            engine = ("--engine", "temporal")
            return await asyncio.to_thread(_report_run, remote, {**env, **server}, *engine)

    on_temporal = time_skipping.run(scenario())

    assert on_temporal == _report_run(local, env)
    assert on_temporal["states"]["check"]["verdicts"] == {"failure": 1, "success": 1}
