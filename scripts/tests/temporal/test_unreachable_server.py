"""An unreachable Temporal server is one short line (issue 23, item 21): the client's own
error is a Rust transport error of several hundred characters."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from fixtures.cli_support import SIMPLE_LOOP, cli_in_process, write_loop

from little_loops.fsm.temporal.client import connect_problem


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_refused_connection_is_said_in_a_few_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    port = _closed_port()
    monkeypatch.setenv("LL_TEMPORAL_ADDRESS", f"127.0.0.1:{port}")
    assert cli_in_process(capsys, "status", "simple", "--engine", "temporal") == (
        1,
        "",
        f"[T] cannot reach the Temporal server at 127.0.0.1:{port} (namespace default): "
        "connection refused (is it running? set LL_TEMPORAL_ADDRESS)\n",
    )


def test_an_unknown_connect_error_is_kept_whole() -> None:
    assert connect_problem("Server connection error: bad certificate") == (
        "Server connection error: bad certificate"
    )
