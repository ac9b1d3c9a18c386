"""The Temporal engine's time limits (issue 29 item 3): production defaults pinned, and
each one given to the client (`LoopRuns.timeouts`, `LL_TEMPORAL_*_SECONDS`) reaches the
runs it starts (`RunInput`) and its queries. No server: what is built is checked."""

from __future__ import annotations

import asyncio
import os
from dataclasses import fields
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from fixtures.cli_support import write_loop

from little_loops.fsm.errors import LoopError
from little_loops.fsm.temporal.client import LoopRuns
from little_loops.fsm.temporal.payloads import RunInput
from little_loops.fsm.temporal.timeouts import TIMEOUT_ENV, Timeouts
from little_loops.fsm.validation import load_loop

HELLO = "name: hello\ninitial: done\nstates:\n  done:\n    terminal: true\n"


def test_the_production_defaults_are_30s_queries_300s_to_start_and_a_10s_heartbeat() -> None:
    assert Timeouts() == Timeouts(
        query_seconds=30.0,
        schedule_to_start_seconds=300.0,
        heartbeat_seconds=10.0,
        sticky_seconds=10.0,  # Temporal's own default
    )
    assert Timeouts.from_env({}) == Timeouts()
    assert Timeouts().query == timedelta(seconds=30)
    defaults = {item.name: item.default for item in fields(RunInput)}
    assert (defaults["schedule_to_start_seconds"], defaults["heartbeat_seconds"]) == (300.0, 10.0)


def test_each_limit_is_read_from_its_variable() -> None:
    assert TIMEOUT_ENV == {
        "query_seconds": "LL_TEMPORAL_QUERY_SECONDS",
        "schedule_to_start_seconds": "LL_TEMPORAL_SCHEDULE_TO_START_SECONDS",
        "heartbeat_seconds": "LL_TEMPORAL_HEARTBEAT_SECONDS",
        "sticky_seconds": "LL_TEMPORAL_STICKY_SECONDS",
    }
    environ = {
        "LL_TEMPORAL_QUERY_SECONDS": "2.5",
        "LL_TEMPORAL_SCHEDULE_TO_START_SECONDS": "4",
        "LL_TEMPORAL_HEARTBEAT_SECONDS": "3",
        "LL_TEMPORAL_STICKY_SECONDS": "1.5",
    }
    assert Timeouts.from_env(environ) == Timeouts(2.5, 4.0, 3.0, 1.5)
    only = Timeouts.from_env({"LL_TEMPORAL_HEARTBEAT_SECONDS": "3"})
    assert only == Timeouts(30.0, 300.0, 3.0, 10.0)


@pytest.mark.parametrize("text", ["0", "-1", "soon", "nan", "inf"])
def test_a_limit_that_is_not_a_positive_number_is_one_line_naming_the_variable(
    text: str,
) -> None:
    with pytest.raises(LoopError) as raised:
        Timeouts.from_env({"LL_TEMPORAL_QUERY_SECONDS": text})
    assert str(raised.value) == (
        f"LL_TEMPORAL_QUERY_SECONDS={text}: not a positive number of seconds"
    )


def _runs(tmp_path: Path, timeouts: Timeouts | None = None) -> LoopRuns:
    write_loop(tmp_path, "hello", HELLO)
    client = cast(Any, None)  # run_input needs no server
    if timeouts is None:
        return LoopRuns(client, tmp_path, tmp_path / ".loops", "queue")
    return LoopRuns(client, tmp_path, tmp_path / ".loops", "queue", timeouts=timeouts)


def test_the_runs_a_client_starts_carry_its_activity_limits(tmp_path: Path) -> None:
    default_runs = _runs(tmp_path)
    fsm = load_loop(tmp_path / ".loops" / "hello.yaml")
    default = default_runs.run_input(fsm, os.environ)
    assert (default.schedule_to_start_seconds, default.heartbeat_seconds) == (300.0, 10.0)
    short = _runs(tmp_path, Timeouts(5.0, 2.0, 3.0)).run_input(fsm, os.environ)
    assert (short.schedule_to_start_seconds, short.heartbeat_seconds) == (2.0, 3.0)
    # An option given for one run still wins (the tests' `run_input(..., x=...)`).
    one = _runs(tmp_path, Timeouts(5.0, 2.0, 3.0)).run_input(fsm, os.environ, heartbeat_seconds=7.0)
    assert (one.schedule_to_start_seconds, one.heartbeat_seconds) == (2.0, 7.0)


class _Handle:
    """Records the `rpc_timeout` of the queries it is sent."""

    def __init__(self) -> None:
        self.deadlines: list[timedelta | None] = []

    async def query(self, query: Any, *args: Any, rpc_timeout: timedelta | None = None) -> str:
        self.deadlines.append(rpc_timeout)
        return "answer"


def test_a_clients_queries_wait_for_a_worker_no_longer_than_its_query_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs(tmp_path, Timeouts(query_seconds=4.0))
    handle = _Handle()
    monkeypatch.setattr(runs, "handle", lambda _name: handle)

    async def polls() -> bool:
        return True

    monkeypatch.setattr(runs, "workflow_worker_polls", polls)
    assert asyncio.run(runs.ask("hello", "status")) == "answer"
    assert handle.deadlines == [timedelta(seconds=4)]


def test_a_bad_limit_is_said_in_one_line_before_any_server_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fixtures.cli_support import cli_in_process

    write_loop(tmp_path, "hello", HELLO)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LL_TEMPORAL_ADDRESS", "127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("LL_TEMPORAL_HEARTBEAT_SECONDS", "soon")
    assert cli_in_process(capsys, "status", "hello", "--engine", "temporal") == (
        1,
        "",
        "[T] LL_TEMPORAL_HEARTBEAT_SECONDS=soon: not a positive number of seconds\n",
    )


def test_a_worker_with_a_bad_limit_says_so_before_it_connects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker waits on none of the limits itself, but the handoff sessions it spawns
    (`ll-loop resume`) inherit its environment."""
    from fixtures.cli_support import cli_in_process

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LL_TEMPORAL_SCHEDULE_TO_START_SECONDS", "-5")
    assert cli_in_process(capsys, "worker", "--address", "127.0.0.1:9") == (
        1,
        "",
        "[T] LL_TEMPORAL_SCHEDULE_TO_START_SECONDS=-5: not a positive number of seconds\n",
    )


def test_a_worker_is_built_with_the_sticky_queue_limit_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from little_loops.fsm.temporal import worker

    built: list[dict[str, Any]] = []
    monkeypatch.setattr(worker, "Worker", lambda *args, **options: built.append(options))
    client = cast(Any, None)
    worker.build_worker(client, "queue")
    worker.build_worker(client, "queue", timeouts=Timeouts(sticky_seconds=2.0))
    sticky = [options["sticky_queue_schedule_to_start_timeout"] for options in built]
    assert sticky == [timedelta(seconds=10), timedelta(seconds=2)]
