"""`ll-loop watch` follows a Temporal run (issue 23, item 6): the lines `run` prints,
then the summary and the run's exit code; Ctrl-C would stop the watching only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import cli_env, cli_in_process, write_loop
from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import Worker

STEPS = """\
name: steps
initial: one
states:
  one:
    action: "sleep 1; echo one"
    next: two
  two:
    action: "echo two"
    next: done
  done:
    terminal: true
"""


@pytest.fixture
def project(
    temporal_dev_server: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    checkout = tmp_path / "co"
    checkout.mkdir()
    write_loop(checkout, "steps", STEPS)
    env = {**cli_env(tmp_path), **temporal_dev_server.env()}
    for key, value in temporal_dev_server.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("LL_ENGINE", raising=False)
    monkeypatch.chdir(checkout)
    worker = Worker(checkout, env)
    try:
        yield checkout
    finally:
        worker.stop()


def test_watch_follows_a_temporal_run_to_its_end(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli_in_process(capsys, "watch", "steps", "--engine", "temporal")
    assert (code, out) == (1, "")  # never ran: said, exit 1
    assert cli_in_process(capsys, "run", "steps", "--engine", "temporal", "--detach")[0] == 0
    code, out, err = cli_in_process(capsys, "watch", "steps", "--engine", "temporal")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Watching loop: steps (on Temporal)"
    assert "[2/50] two -> echo two" in lines
    assert lines[-1].startswith("Loop completed: done (2 iterations")
    # Ended: its summary alone, with the exit code it ended with.
    code, out, _ = cli_in_process(capsys, "watch", "steps", "--engine", "temporal")
    assert (code, out.splitlines()[-1][:32]) == (0, "Loop completed: done (2 iteratio")


def test_watch_without_a_run_names_the_engine(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli_in_process(capsys, "watch", "steps", "--engine", "temporal")
    assert (code, err) == (1, "[T] No run of steps on Temporal (steps)\n")


def test_a_local_watch_follows_the_temporal_run_not_an_older_local_one(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 6: without `--engine`, `watch` showed the older local run of the same
    name while the loop ran on Temporal."""
    assert cli_in_process(capsys, "run", "steps")[0] == 0  # an older local run
    assert cli_in_process(capsys, "run", "steps", "--engine", "temporal", "--detach")[0] == 0
    code, out, err = cli_in_process(capsys, "watch", "steps")
    assert code == 0, err
    assert err.startswith("steps runs on Temporal (workflow ll-loop:steps@")
    assert out.splitlines()[0] == "Watching loop: steps (on Temporal)"
