"""A `parallel:` fan-out through real `ll-loop worker` processes on a real
`temporal server start-dev` (issue 25 "Done when"): `ll-loop run` of a loop whose items
each commit the same file name in their own worktree ends as a local run does, each item
on its own branch, the main work tree clean."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fixtures.cli_support import run_cli, write_loop
from fixtures.temporal_workers import Worker

CHILD = """\
name: commit-one
initial: work
states:
  work:
    action: >-
      echo ${context.item} > out.txt &&
      git add out.txt &&
      git commit -qm "item ${context.item}"
    next: done
  done:
    terminal: true
"""

FAN = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nb\\nc"
      loop: commit-one
      max_workers: 3
      isolation: worktree
    on_success: done
    on_partial: failed
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def _repo(root: Path) -> Path:
    root.mkdir()
    write_loop(root, "fan", FAN)
    write_loop(root, "commit-one", CHILD)
    (root / ".gitignore").write_text(".loops/.running/\n.loops/.worktrees/\n.loops/.history/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.name", "Test")
    _git(root, "config", "user.email", "test@example.invalid")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "start")
    return root


def test_issue25_the_fanout_runs_through_ll_loop_workers_on_the_dev_server(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    checkout = _repo(tmp_path / "co")
    start = _git(checkout, "rev-parse", "HEAD").strip()
    workers.append(Worker(checkout, env))
    workers.append(Worker(checkout, env))
    ran = run_cli(checkout, "run", "fan", env=env, timeout=180)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "fan-out done: 3 yes, 0 no, 0 error -> yes" in [
        line.strip() for line in ran.stdout.splitlines()
    ]
    shown = run_cli(checkout, "status", "fan", "--json", env=env)
    state = json.loads(shown.stdout)
    assert (state["status"], state["current_state"]) == ("completed", "done")
    results = json.loads(state["captured"]["go"]["results"])
    assert [(e["item"], e["verdict"], e["branch"]) for e in results] == [
        ("a", "yes", "ll/fan/go/0"),
        ("b", "yes", "ll/fan/go/1"),
        ("c", "yes", "ll/fan/go/2"),
    ]
    for index, item in enumerate("abc"):
        assert _git(checkout, "show", f"ll/fan/go/{index}:out.txt") == f"{item}\n"
        assert _git(checkout, "rev-parse", f"ll/fan/go/{index}~1").strip() == start
    assert _git(checkout, "status", "--porcelain") == ""
    assert not (checkout / "out.txt").exists()
    assert len(_git(checkout, "worktree", "list").splitlines()) == 1
