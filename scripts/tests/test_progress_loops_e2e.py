"""Issue 10's loops, run to their end by the real `ll-loop` with default settings.

A counting loop (`a` adds one to a file, `b` is the silent check `test $(cat n) -ge 15`)
and a poll-until-ready loop stopped as "stalled" after three rounds while the reference
runs them to the end. The stall guard is now off unless a loop asks for it, and when it
is on, a changing work tree (or `progress_paths`) is progress. Each loop runs in its own
temporary project; HOME points into it and git reads no global or system config.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env

COUNTER = """\
name: counter
initial: a
states:
  a:
    action: echo $(( $(cat n 2>/dev/null || echo 0) + 1 )) > n
    next: b
  b:
    action: test $(cat n) -ge 15
    on_success: done
    on_failure: a
  done:
    terminal: true
"""

POLL = """\
name: poll
initial: poll
states:
  poll:
    action: test -f ready
    on_success: done
    on_failure: wait
  wait:
    action: >-
      r=$(( $(cat rounds 2>/dev/null || echo 0) + 1 )); echo $r > rounds;
      [ $r -lt 5 ] || touch ready
    next: poll
  done:
    terminal: true
"""

CONCURRENT_LOOPS = 20


def new_project(root: Path, name: str, text: str) -> Path:
    (root / ".loops").mkdir(parents=True)
    (root / ".loops" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root


def environment(root: Path) -> dict[str, str]:
    return {**cli_env(root), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def run(root: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LL_LOOP), "run", name, "-q"],
        cwd=root,
        env=environment(root),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def init_repository(root: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=root, env=environment(root), check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"],
        cwd=root,
        env=environment(root),
        check=True,
    )


def test_the_counter_loop_runs_to_its_end_with_default_settings(tmp_path: Path) -> None:
    project = new_project(tmp_path, "counter", COUNTER)

    result = run(project, "counter")

    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "n").read_text() == "15\n"


def test_the_poll_loop_runs_to_its_end_with_default_settings(tmp_path: Path) -> None:
    project = new_project(tmp_path, "poll", POLL)

    result = run(project, "poll")

    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "rounds").read_text() == "5\n"


@pytest.mark.slow
def test_twenty_counter_loops_started_at_once_all_run_to_their_end(tmp_path: Path) -> None:
    projects = [
        new_project(tmp_path / f"p{number}", "counter", COUNTER)
        for number in range(CONCURRENT_LOOPS)
    ]
    processes = [
        subprocess.Popen(
            [str(LL_LOOP), "run", "counter", "-q"],
            cwd=project,
            env=environment(project),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for project in projects
    ]
    outputs = [process.communicate(timeout=300)[0] for process in processes]

    assert [process.returncode for process in processes] == [0] * CONCURRENT_LOOPS, outputs
    assert {(project / "n").read_text() for project in projects} == {"15\n"}


@pytest.mark.parametrize(
    ("extra", "in_git"),
    [("stall_threshold: 3\n", True), ("stall_threshold: 3\nprogress_paths: [n]\n", False)],
    ids=["git-work-tree", "progress-paths"],
)
def test_with_the_guard_on_a_growing_counter_is_progress(
    tmp_path: Path, extra: str, in_git: bool
) -> None:
    """A silent check that fails the same way while the other state changes the file it
    checks is not a stall: the guard sees the file change."""
    project = new_project(tmp_path, "counter", COUNTER.replace("states:\n", extra + "states:\n"))
    if in_git:
        init_repository(project)

    result = run(project, "counter")

    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "n").read_text() == "15\n"


def test_with_the_guard_on_and_nothing_watched_the_counter_stalls(tmp_path: Path) -> None:
    """Outside git without `progress_paths` only outputs and verdicts are seen: a loop
    that asks for the guard there must print its progress (documented)."""
    guarded = COUNTER.replace("states:\n", "stall_threshold: 3\nstates:\n")
    project = new_project(tmp_path, "counter", guarded)

    result = run(project, "counter")

    assert result.returncode == 5, result.stdout + result.stderr
    assert (project / "n").read_text() == "3\n"
