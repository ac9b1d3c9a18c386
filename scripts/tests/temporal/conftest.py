"""Fixtures of the tests that drive the real `ll-loop` commands and `ll-loop worker`
processes against the dev server (`temporal_dev_server`, in the tests' root conftest)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import cli_env
from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import Worker


@pytest.fixture
def env(temporal_dev_server: DevServer, tmp_path: Path) -> dict[str, str]:
    """The environment of an `ll-loop` process on the dev server (`LL_ENGINE=temporal`)."""
    return {**cli_env(tmp_path), **temporal_dev_server.env(), "LL_ENGINE": "temporal"}


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """The `ll-loop worker` processes a test starts (it appends them): stopped after it."""
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()
