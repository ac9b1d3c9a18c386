"""workspace: the fingerprint that lets the stall guard tell work from going round.

Real git repositories in tmp_path; git reads no global or system config.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from little_loops.fsm.process.workspace import CONTENT_HASH_LIMIT, WorkspaceWatcher


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(root: Path, *args: str) -> str:
    settings = ["-c", "user.name=t", "-c", "user.email=t@t"]
    done = subprocess.run(["git", *settings, *args], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / ".gitignore").write_text("*.log\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


def test_a_clean_tree_has_a_stable_fingerprint(repo: Path) -> None:
    watcher = WorkspaceWatcher(repo)
    first = watcher.fingerprint()
    assert first is not None
    assert watcher.fingerprint() == first
    assert WorkspaceWatcher(repo).fingerprint() == first


@pytest.mark.parametrize(
    "change",
    ["tracked", "tracked-again", "untracked", "deleted", "staged", "commit"],
)
def test_every_kind_of_change_moves_it(repo: Path, change: str) -> None:
    watcher = WorkspaceWatcher(repo)
    (repo / "src" / "a.py").write_text("a = 2\n")
    before = watcher.fingerprint()
    if change == "tracked":
        (repo / "src" / "a.py").write_text("a = 3\n")  # dirty before, dirty after
    elif change == "tracked-again":
        (repo / "src" / "a.py").write_text("a = 1\n")  # back to HEAD: clean
    elif change == "untracked":
        (repo / "src" / "new" / "b.py").parent.mkdir()
        (repo / "src" / "new" / "b.py").write_text("b\n")
    elif change == "deleted":
        (repo / ".gitignore").unlink()
    elif change == "staged":
        git(repo, "add", "src/a.py")
    else:
        git(repo, "commit", "-qam", "next")
    assert watcher.fingerprint() != before


def test_ignored_files_and_runtime_folders_do_not_count(repo: Path) -> None:
    watcher = WorkspaceWatcher(repo)
    before = watcher.fingerprint()
    (repo / "build.log").write_text("noise\n")
    for runtime in (".running", ".history"):
        (repo / ".loops" / runtime).mkdir(parents=True)
        (repo / ".loops" / runtime / "x.state.json").write_text("{}")
    assert watcher.fingerprint() == before
    (repo / ".loops" / "other.yaml").write_text("name: other\n")
    assert watcher.fingerprint() != before


def test_a_subdirectory_watches_the_whole_work_tree(repo: Path) -> None:
    watcher = WorkspaceWatcher(repo / "src", loops_dir=Path("../.loops"))
    before = watcher.fingerprint()
    (repo / ".loops" / ".running").mkdir(parents=True)
    (repo / ".loops" / ".running" / "x").write_text("1")
    assert watcher.fingerprint() == before
    (repo / "README").write_text("hello\n")
    assert watcher.fingerprint() != before


def test_nothing_is_written_into_the_repository(repo: Path) -> None:
    (repo / "src" / "a.py").write_text("a = 2\n")
    (repo / "new.py").write_text("new\n")
    objects_before = git(repo, "count-objects", "-v")
    WorkspaceWatcher(repo).fingerprint()
    assert git(repo, "count-objects", "-v") == objects_before


def test_a_big_dirty_file_is_judged_by_size_and_time(repo: Path) -> None:
    big = repo / "data.bin"
    big.write_bytes(b"x" * (CONTENT_HASH_LIMIT + 1))
    watcher = WorkspaceWatcher(repo)
    before = watcher.fingerprint()
    os.utime(big, ns=(1, 1))
    assert watcher.fingerprint() != before


def test_outside_git_nothing_is_watched_without_progress_paths(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert WorkspaceWatcher(plain).fingerprint() is None


def test_progress_paths_outside_git(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "out" / "deep").mkdir(parents=True)
    watcher = WorkspaceWatcher(plain, progress_paths=["n", "out", "*.txt"])
    before = watcher.fingerprint()
    assert before is not None
    (plain / "n").write_text("1\n")
    after_n = watcher.fingerprint()
    (plain / "out" / "deep" / "f").write_text("x")
    after_folder = watcher.fingerprint()
    (plain / "notes.txt").write_text("x")
    after_glob = watcher.fingerprint()
    (plain / "other.md").write_text("x")
    assert len({before, after_n, after_folder, after_glob}) == 4
    assert watcher.fingerprint() == after_glob  # not watched
    os.utime(plain / "n", ns=(5, 5))
    assert watcher.fingerprint() == after_glob  # same content: not progress


def test_progress_paths_add_ignored_files_in_git(repo: Path) -> None:
    watcher = WorkspaceWatcher(repo, progress_paths=["*.log"])
    before = watcher.fingerprint()
    (repo / "build.log").write_text("step 1\n")
    assert watcher.fingerprint() != before


def test_a_missing_git_means_nothing_is_watched(tmp_path: Path) -> None:
    assert WorkspaceWatcher(tmp_path, git=str(tmp_path / "no-git")).fingerprint() is None
