"""`scope` through the real `ll-loop --engine temporal` commands against the dev server,
with an `ll-loop worker` process: the same refusal, exit code and `--queue` wait as the
local engine, with the holder named by its workflow instead of a pid."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, run_cli, write_loop
from fixtures.processes import processes_with
from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import WAIT_SECONDS, Worker, wait_until

LOOP = """\
name: NAME
initial: work
scope: [SCOPE]
states:
  work:
    action: "ACTION"
    next: done
  done:
    terminal: true
"""


def _write(checkout: Path, name: str, scope: str, action: str) -> None:
    text = LOOP.replace("NAME", name).replace("SCOPE", scope).replace("ACTION", action)
    write_loop(checkout, name, text)


@pytest.fixture
def checkout(temporal_dev_server: DevServer, tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "co"
    root.mkdir()
    _write(root, "holder", "src", f"sleep 300; : {_marker(tmp_path)}")
    _write(root, "inner", "src/parser", "echo inner done")
    _write(root, "other", "docs", "echo other done")
    worker = Worker(root, _env(temporal_dev_server, tmp_path))
    try:
        yield root
    finally:
        worker.stop()


def _env(server: DevServer, home: Path) -> dict[str, str]:
    return {**cli_env(home), **server.env(), "LL_ENGINE": "temporal"}


def _marker(tmp_path: Path) -> str:
    """What the holder's action carries in its command line, to be found running."""
    return f"holder-{os.getpid()}-{tmp_path.name}"


def test_a_run_whose_scope_overlaps_a_running_one_is_refused_or_queued(
    checkout: Path, temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    env = _env(temporal_dev_server, tmp_path)
    assert run_cli(checkout, "run", "holder", "--detach", env=env).returncode == 0
    wait_until(lambda: processes_with(_marker(tmp_path)), "the holder's action to start")
    holder_id = f"ll-loop:holder@{os.uname().nodename}:{checkout.resolve()}"

    refused = run_cli(checkout, "run", "inner", env=env)
    assert refused.returncode == 6
    shown = [re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", line) for line in refused.stderr.splitlines()]
    assert shown[-2:] == [
        f"Loop inner shares scope 'src/parser' with running loop holder (workflow {holder_id})",
        "  to wait until it ends instead: add --queue",
    ]
    elsewhere = run_cli(checkout, "run", "other", env=env, timeout=WAIT_SECONDS)
    assert elsewhere.returncode == 0, elsewhere.stderr  # a scope of its own: runs at once

    waits = (
        f"Loop inner waits for running loop holder (workflow {holder_id}), which shares "
        "scope 'src/parser' (Ctrl-C to give up)"
    )
    err_path = tmp_path / "queued.err"
    with (
        err_path.open("w") as err_file,
        subprocess.Popen(
            [str(LL_LOOP), "run", "inner", "--queue"],
            cwd=checkout,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
        ) as queued,
    ):
        wait_until(lambda: waits in err_path.read_text(), "the queued run to say it waits")
        assert queued.poll() is None  # still waiting while the holder runs
        assert run_cli(checkout, "stop", "holder", env=env).returncode == 0
        out, _ = queued.communicate(timeout=WAIT_SECONDS)

    assert queued.returncode == 0, err_path.read_text()
    assert "Loop completed: done (1 iteration" in out
    assert err_path.read_text().count("waits for running loop") == 1
