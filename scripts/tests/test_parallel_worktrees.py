"""`parallel:` with `isolation: worktree` (issue 25 item 4).

Each item runs in its own git worktree under `.loops/.worktrees/`, on its own branch
`ll/<loop>/<state>/<index>` made from the parent's HEAD; the branch is kept with its
commits and named in the results, the worktrees are removed when the fan-out ends, and
the main work tree is untouched.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.persistence import PersistentExecutor

CHILD = """\
name: commit-one
initial: work
states:
  work:
    action: >-
      echo ${context.item} > out.txt &&
      git add out.txt &&
      git commit -qm "item ${context.item}" &&
      pwd
    capture: where
    next: done
  done:
    terminal: true
"""

PARENT = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nb"
      loop: commit-one
      max_workers: 2
      isolation: worktree
    on_success: done
    on_partial: done
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    loops = tmp_path / ".loops"
    loops.mkdir()
    (loops / "commit-one.yaml").write_text(CHILD)
    (loops / "fan.yaml").write_text(PARENT)
    (tmp_path / ".gitignore").write_text(".loops/.running/\n.loops/.worktrees/\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "config", "user.name", "Test")
    _git(tmp_path, "config", "user.email", "test@example.invalid")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "start")
    return tmp_path


def test_issue25_item4_two_items_commit_the_same_file_on_their_own_branches(
    repo: Path,
) -> None:
    """Done-when: both items commit `out.txt`; both succeed, each on its own branch from
    HEAD; the main tree is clean and has no `out.txt`; the worktrees are gone."""
    start = _git(repo, "rev-parse", "HEAD").strip()
    executor = PersistentExecutor(
        load_loop(repo / ".loops" / "fan.yaml"), loops_dir=repo / ".loops"
    )
    result = executor.run()
    assert (result.final_state, result.terminated_by) == ("done", "terminal")
    results = json.loads(executor._executor.captured["go"]["results"])
    assert [(e["verdict"], e["branch"]) for e in results] == [
        ("yes", "ll/fan/go/0"),
        ("yes", "ll/fan/go/1"),
    ]
    for index, item in enumerate("ab"):
        branch = f"ll/fan/go/{index}"
        assert _git(repo, "show", f"{branch}:out.txt") == f"{item}\n"
        assert _git(repo, "rev-parse", f"{branch}~1").strip() == start
        worktree = Path(results[index]["worktree"])
        assert worktree.parent == (repo / ".loops" / ".worktrees").resolve()
        assert results[index]["captured"]["where"]["output"] == f"{worktree}\n"
        assert not worktree.exists()
    assert _git(repo, "status", "--porcelain") == ""
    assert not (repo / "out.txt").exists()
    assert _git(repo, "rev-parse", "HEAD").strip() == start
    assert len(_git(repo, "worktree", "list").splitlines()) == 1
    assert list((repo / ".loops" / ".worktrees").iterdir()) == []


def test_issue25_item4_outside_a_repository_each_item_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No git: no worktree; each item's verdict is `error` with git's reason, and the
    state routes no (an expected failure is a result, never a crash)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "commit-one.yaml").write_text(CHILD)
    (tmp_path / ".loops" / "fan.yaml").write_text(PARENT)
    executor = PersistentExecutor(
        load_loop(tmp_path / ".loops" / "fan.yaml"), loops_dir=tmp_path / ".loops"
    )
    result = executor.run()
    assert result.final_state == "failed"
    results = json.loads(executor._executor.captured["go"]["results"])
    assert [e["verdict"] for e in results] == ["error", "error"]
    assert results[0]["error"].startswith(
        "worktree of branch 'll/fan/go/0': git worktree add failed: fatal: not a git repository"
    )
