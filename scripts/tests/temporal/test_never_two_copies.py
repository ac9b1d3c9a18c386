"""Never two copies of one loop's action (issue 23 items 1-3; docs/scaling.md §3a
"at least once, never two at once"; user guide `run`).

Real `ll-loop` commands and `ll-loop worker` processes on the dev server:

- a local run and a Temporal run of the same loop in one checkout refuse each other,
  both ways, with exit 6 and one line naming where the other runs; `scope:` overlaps
  across the engines the same way;
- on Temporal, a server an action starts in the background (`&`) is still there for the
  next state, and is stopped when the run ends, as locally;
- a worker killed with -9 mid-action does not leave the action running: its watchdog
  stops the action's process group within seconds; the next worker runs the state again
  and says so (`action_retry`).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, run_cli, write_loop
from fixtures.temporal_servers import free_port
from fixtures.temporal_workers import Worker, wait_until

from little_loops.fsm.temporal.names import workflow_id_for

pytestmark = [pytest.mark.temporal, pytest.mark.slow]

GONE_WITHIN_SECONDS = 6.0
"""SIGTERM, then SIGKILL 2 s later, plus the time to see it."""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def pids(path: Path) -> list[int]:
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


def wait_gone(pid: int, seconds: float = GONE_WITHIN_SECONDS) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "co"
    root.mkdir()
    yield root
    for name in ("attempts", "child", "server.pid", "local.pid"):
        for pid in pids(root / name):  # whatever happened, nothing outlives the test
            if alive(pid):
                os.killpg(os.getpgid(pid), signal.SIGKILL)


def refusal(done: subprocess.CompletedProcess[str]) -> tuple[int, str]:
    """The exit code and stderr, its `[HH:MM:SS] ` stamp left out."""
    return done.returncode, re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", done.stderr)


def local_env(env: dict[str, str]) -> dict[str, str]:
    """The same checkout and server settings, the local engine (no `LL_ENGINE`)."""
    return {key: value for key, value in env.items() if key != "LL_ENGINE"}


# --- item 1: local and Temporal runs refuse each other ----------------------------------

SLEEPER = """\
name: {name}
initial: work
{scope}states:
  work:
    action: "echo $$ >> {pidfile}; sleep 120"
    next: done
  done:
    terminal: true
"""


def sleeper(name: str, pidfile: str, scope: str | None = None) -> str:
    scoped = f"scope: [{scope}]\n" if scope else ""
    return SLEEPER.format(name=name, pidfile=pidfile, scope=scoped)


def start_local(checkout: Path, env: dict[str, str], loop: str) -> subprocess.Popen[bytes]:
    """`ll-loop run <loop>` on the local engine, in the foreground of its own process."""
    return subprocess.Popen(
        [str(LL_LOOP), "run", loop, "--quiet"],
        cwd=checkout,
        env=local_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_a_local_run_and_resume_are_refused_while_the_loop_runs_on_temporal(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    write_loop(checkout, "busy", sleeper("busy", "attempts"))
    workers.append(Worker(checkout, env))
    assert run_cli(checkout, "run", "busy", "--detach", env=env).returncode == 0
    wait_until(lambda: pids(checkout / "attempts"), "the Temporal run's action")
    workflow = workflow_id_for("busy", checkout)

    for command in ("run", "resume"):
        refused = run_cli(checkout, command, "busy", env=local_env(env))
        assert refusal(refused) == (
            6,
            f"Loop busy is already running on Temporal (workflow {workflow})\n",
        ), command
    assert len(pids(checkout / "attempts")) == 1  # the local run never ran the action

    # Once the workflow has ended, its marker is stale: the local run goes on.
    assert run_cli(checkout, "stop", "busy", env=env).returncode == 0
    wait_until(lambda: _workflow_closed(checkout, env, "busy"), "the Temporal run to stop")
    write_loop(checkout, "busy", sleeper("busy", "attempts").replace("sleep 120", "true"))
    done = run_cli(checkout, "run", "busy", "--quiet", env=local_env(env))
    assert done.returncode == 0, done.stderr
    assert not (checkout / ".loops" / ".running" / "busy.on-temporal").exists()


def test_a_temporal_run_is_refused_while_the_loop_runs_locally(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    write_loop(checkout, "busy", sleeper("busy", "local.pid"))
    local = start_local(checkout, env, "busy")
    try:
        wait_until(lambda: pids(checkout / "local.pid"), "the local run's action")
        refused = run_cli(checkout, "run", "busy", "--detach", env=env)
        resumed = run_cli(checkout, "resume", "busy", env=env)
    finally:
        os.killpg(local.pid, signal.SIGTERM)
        local.wait(timeout=30)
    line = f"Loop busy is already running locally (pid {local.pid})\n"
    assert refusal(refused) == (6, line)
    assert refusal(resumed) == (6, line)
    assert not (checkout / ".loops" / ".running" / "busy.on-temporal").exists()


def test_scope_overlaps_are_refused_across_the_engines_both_ways(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    (checkout / "src" / "sub").mkdir(parents=True)
    write_loop(checkout, "wide", sleeper("wide", "attempts", scope="src"))
    write_loop(checkout, "narrow", sleeper("narrow", "local.pid", scope="src/sub"))
    workers.append(Worker(checkout, env))

    # A Temporal run holds `src`: a local run of a loop on `src/sub` is refused.
    assert run_cli(checkout, "run", "wide", "--detach", env=env).returncode == 0
    wait_until(lambda: pids(checkout / "attempts"), "the Temporal run's action")
    refused = run_cli(checkout, "run", "narrow", env=local_env(env))
    assert refusal(refused) == (
        6,
        "Loop narrow shares scope 'src/sub' with loop wide running on Temporal "
        f"(workflow {workflow_id_for('wide', checkout)})\n",
    )
    assert run_cli(checkout, "stop", "wide", env=env).returncode == 0
    wait_until(lambda: _workflow_closed(checkout, env, "wide"), "the Temporal run to stop")

    # A local run holds `src/sub`: a Temporal run of a loop on `src` is refused.
    local = start_local(checkout, env, "narrow")
    try:
        wait_until(lambda: pids(checkout / "local.pid"), "the local run's action")
        taken = run_cli(checkout, "run", "wide", "--detach", env=env)
    finally:
        os.killpg(local.pid, signal.SIGTERM)
        local.wait(timeout=30)
    assert refusal(taken) == (
        6,
        f"Loop wide shares scope 'src/sub' with loop narrow running locally (pid {local.pid})\n",
    )


def _workflow_closed(checkout: Path, env: dict[str, str], loop: str) -> bool:
    """`list --running` on the server no longer shows the loop's workflow."""
    listed = run_cli(checkout, "list", "--running", "--json", env=env).stdout
    return workflow_id_for(loop, checkout) not in listed


# --- item 2: a background server outlives its action, not its run ------------------------

SERVED = """\
name: served
initial: serve
states:
  serve:
    action: >-
      python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &
      echo $! > server.pid
    next: poll
  poll:
    action: |
      python3 -c "import time, urllib.request
      for _ in range(100):
          try:
              urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=1); break
          except OSError:
              time.sleep(0.1)
      else:
          raise SystemExit(1)
      open('polled', 'w').write('ok')"
    on_success: done
    on_failure: failed
  done:
    terminal: true
  failed:
    terminal: true
"""


def test_a_background_server_started_by_one_state_is_polled_by_the_next_on_temporal(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    write_loop(checkout, "served", SERVED.format(port=free_port()))
    workers.append(Worker(checkout, env))
    ran = run_cli(checkout, "run", "served", "--quiet", env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert (checkout / "polled").read_text() == "ok"
    [server] = pids(checkout / "server.pid")
    assert wait_gone(server), "the server outlived its run"


# --- item 3: a worker killed with -9 leaves no action running ----------------------------

RETRIED = """\
name: retried
initial: work
states:
  work:
    action: >-
      n=$(cat attempts 2>/dev/null | wc -l); echo $$ >> attempts;
      if [ "$n" -eq 0 ]; then sleep 300 & echo $! > child; wait; fi
    next: done
  done:
    terminal: true
"""


def test_a_worker_killed_with_9_mid_action_leaves_nothing_running_and_the_retry_says_so(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    write_loop(checkout, "retried", RETRIED)
    workers.append(Worker(checkout, env, args=("--workflows-only",)))
    doomed = Worker(checkout, env, args=("--activities-only",))
    workers.append(doomed)
    assert run_cli(checkout, "run", "retried", "--detach", env=env).returncode == 0
    wait_until(lambda: pids(checkout / "child"), "the first attempt")
    [shell], [child] = pids(checkout / "attempts"), pids(checkout / "child")

    doomed.kill()
    assert wait_gone(shell) and wait_gone(child), "the action outlived its worker"

    retrier = Worker(checkout, env, args=("--activities-only",))
    workers.append(retrier)
    wait_until(
        lambda: "Status: completed" in run_cli(checkout, "status", "retried", env=env).stdout,
        "the retried run to end",
    )
    said = "state 'work' was run again (attempt 2): its worker died"
    assert said in run_cli(checkout, "status", "retried", env=env).stdout.splitlines()
    assert said in retrier.output()
    assert len(pids(checkout / "attempts")) == 2
    ledgers = checkout / ".loops" / ".running" / ".workers"
    assert [p.name for p in ledgers.glob("*.json")] == [p.name for p in _ledger_of(retrier)]


def _ledger_of(worker: Worker) -> list[Path]:
    import socket

    return [Path(f"{socket.gethostname()}-{worker.process.pid}.json")]


def test_a_worker_sweeps_the_groups_a_dead_worker_left_when_its_watchdog_died_too(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    """The ledger of a worker that no longer runs (its watchdog gone with it, as after a
    `kill -9` of both): the next worker stops its groups at start and says so."""
    import socket

    orphan = subprocess.Popen(["sleep", "300"], start_new_session=True)
    (checkout / "local.pid").write_text(f"{orphan.pid}\n")
    ledgers = checkout / ".loops" / ".running" / ".workers"
    ledgers.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    start = Path(f"/proc/{orphan.pid}/stat").read_text().rpartition(")")[2].split()[19]
    record = {
        "host": socket.gethostname(),
        "worker_pid": dead.pid,
        "groups": [{"pgid": orphan.pid, "started": int(start)}],
    }
    (ledgers / f"{socket.gethostname()}-{dead.pid}.json").write_text(json.dumps(record))
    worker = Worker(checkout, env)
    workers.append(worker)
    orphan.wait(timeout=GONE_WITHIN_SECONDS)
    assert (
        f"Stopped an action left running by a worker that died (pid group {orphan.pid})"
        in worker.output()
    )
    assert not (ledgers / f"{socket.gethostname()}-{dead.pid}.json").exists()


SERVED_THEN_WAITS = """\
name: waits
initial: serve
states:
  serve:
    action: >-
      python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &
      echo $! > server.pid
    next: wait
  wait:
    action: "echo $$ > attempts; sleep 120"
    next: done
  done:
    terminal: true
"""


def test_a_background_server_on_temporal_is_stopped_when_the_run_is_stopped(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    write_loop(checkout, "waits", SERVED_THEN_WAITS.format(port=free_port()))
    workers.append(Worker(checkout, env))
    assert run_cli(checkout, "run", "waits", "--detach", env=env).returncode == 0
    wait_until(lambda: pids(checkout / "attempts"), "the second state")
    [server] = pids(checkout / "server.pid")
    assert alive(server)  # the first state's action has ended; its server runs on
    assert run_cli(checkout, "stop", "waits", env=env).returncode == 0
    assert wait_gone(server), "the server outlived its stopped run"


SERVED_THEN_PAUSES = """\
name: pauses
initial: serve
states:
  serve:
    action: >-
      python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &
      echo $! > server.pid
    next: hand
  hand:  # pauses only while the server answers
    action: |
      python3 -c "import time, urllib.request
      for _ in range(100):
          try:
              urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=1); break
          except OSError:
              time.sleep(0.1)
      else:
          raise SystemExit(1)
      print('CONTEXT_HANDOFF: carry on')"
    next: done
  done:
    terminal: true
"""


def test_a_background_server_on_temporal_is_stopped_when_the_run_pauses_for_a_handoff(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    write_loop(checkout, "pauses", SERVED_THEN_PAUSES.format(port=free_port()))
    workers.append(Worker(checkout, env))
    paused = run_cli(checkout, "run", "pauses", "--quiet", env=env, timeout=120)
    assert paused.returncode == 3, paused.stderr  # paused for a handoff
    [server] = pids(checkout / "server.pid")
    try:
        assert wait_gone(server), "the server outlived its paused run"
    finally:  # no paused workflow left open on the shared server
        run_cli(checkout, "stop", "pauses", env=env)
        wait_until(lambda: _workflow_closed(checkout, env, "pauses"), "the paused run to stop")
