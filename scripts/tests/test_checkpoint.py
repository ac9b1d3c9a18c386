"""checkpoint: real git commits in a temporary repository (the real ~ is never read)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from little_loops.fsm.process.checkpoint import (
    CheckpointResult,
    GitCheckpointer,
    checkpoint_message,
)


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def git(repo: Path, *args: str) -> str:
    completed = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return completed.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    (project / ".loops" / ".running").mkdir(parents=True)
    (project / ".loops" / ".history").mkdir()
    (project / ".loops" / "work.yaml").write_text("name: work\n")
    (project / "notes.txt").write_text("phase 1\n")
    return project


def log(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%an <%ae>|%s").splitlines()


def committed_files(repo: Path) -> list[str]:
    return git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()


def test_changes_are_committed_with_loop_state_and_iteration(repo: Path) -> None:
    (repo / ".loops" / ".running" / "work.state.json").write_text("{}")
    (repo / ".loops" / ".history" / "old.jsonl").write_text("{}")
    checkpointer = GitCheckpointer("work", workdir=repo)
    result = checkpointer.checkpoint("implement", 1)
    message = "ll-loop work: checkpoint after 'implement' (iteration 1)"
    assert result == CheckpointResult(
        "committed", git(repo, "rev-parse", "--short", "HEAD"), message
    )
    assert log(repo) == [f"ll-loop <ll-loop@localhost>|{message}"]
    # The loop's runtime files stay out of the commits.
    assert committed_files(repo) == [".loops/work.yaml", "notes.txt"]


def test_one_commit_per_checkpoint_with_changes_and_none_when_clean(repo: Path) -> None:
    checkpointer = GitCheckpointer("work", workdir=repo)
    assert checkpointer.checkpoint("implement", 1).status == "committed"
    assert checkpointer.checkpoint("implement", 2) == CheckpointResult("clean")
    (repo / ".loops" / ".running" / "work.state.json").write_text('{"iteration": 3}')
    assert checkpointer.checkpoint("implement", 3) == CheckpointResult("clean")
    (repo / "notes.txt").write_text("phase 2\n")
    (repo / "notes-old.txt").write_text("x")
    assert checkpointer.checkpoint("implement", 4, reason="handoff").status == "committed"
    (repo / "notes-old.txt").unlink()
    assert checkpointer.checkpoint("verify", 5).status == "committed"
    assert [line.split("|")[1] for line in log(repo)] == [
        "ll-loop work: checkpoint after 'verify' (iteration 5)",
        "ll-loop work: checkpoint at handoff in 'implement' (iteration 4)",
        "ll-loop work: checkpoint after 'implement' (iteration 1)",
    ]
    assert git(repo, "status", "--porcelain", "--", ".", ":(exclude).loops/.running") == ""


def test_a_configured_identity_is_kept(repo: Path) -> None:
    git(repo, "config", "user.name", "Ada")
    git(repo, "config", "user.email", "ada@example.org")
    GitCheckpointer("work", workdir=repo).checkpoint("s", 1)
    assert log(repo)[0].startswith("Ada <ada@example.org>|")


def test_only_the_missing_part_of_the_identity_is_supplied(repo: Path) -> None:
    git(repo, "config", "user.email", "ada@example.org")
    GitCheckpointer("work", workdir=repo).checkpoint("s", 1)
    assert log(repo)[0].startswith("ll-loop <ada@example.org>|")


def test_hooks_and_signing_cannot_block_a_checkpoint(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'lint failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    git(repo, "config", "commit.gpgsign", "true")
    git(repo, "config", "gpg.program", str(repo / "no-such-gpg"))
    assert GitCheckpointer("work", workdir=repo).checkpoint("s", 1).status == "committed"


def test_a_subdirectory_commits_the_whole_work_tree(repo: Path) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("x = 1\n")
    (repo / "pkg" / ".loops" / ".running").mkdir(parents=True)
    (repo / "pkg" / ".loops" / ".running" / "a.state.json").write_text("{}")
    GitCheckpointer("work", workdir=sub, loops_dir=Path(".loops")).checkpoint("s", 1)
    assert committed_files(repo) == [".loops/work.yaml", "notes.txt", "pkg/mod.py"]


def test_a_loops_dir_outside_the_repository_needs_no_exclusion(repo: Path, tmp_path: Path) -> None:
    # The repository's own `.loops/.running` is then ordinary project content.
    (repo / ".loops" / ".running" / "kept.txt").write_text("x")
    elsewhere = tmp_path / "elsewhere"
    checkpointer = GitCheckpointer("work", workdir=repo, loops_dir=elsewhere)
    assert checkpointer.checkpoint("s", 1).status == "committed"
    assert committed_files(repo) == [".loops/.running/kept.txt", ".loops/work.yaml", "notes.txt"]


def test_not_a_repository_warns_once_then_skips(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "file.txt").write_text("x")
    checkpointer = GitCheckpointer("work", workdir=plain)
    assert checkpointer.checkpoint("s", 1) == CheckpointResult(
        "skipped",
        warning=(
            f"checkpoint: git: {plain} is not in a git work tree, so no checkpoints will be made"
        ),
    )
    assert checkpointer.checkpoint("s", 2) == CheckpointResult("skipped")


def test_inside_the_git_directory_is_not_a_work_tree(repo: Path) -> None:
    result = GitCheckpointer("work", workdir=repo / ".git").checkpoint("s", 1)
    assert result.status == "skipped"
    assert result.warning == (
        f"checkpoint: git: {repo / '.git'} is not in a git work tree, "
        "so no checkpoints will be made"
    )


def test_git_missing_warns_once(repo: Path) -> None:
    checkpointer = GitCheckpointer("work", workdir=repo, git=str(repo / "no-git"))
    assert checkpointer.checkpoint("s", 1).warning == (
        f"checkpoint: git: '{repo / 'no-git'}' not found, so no checkpoints will be made"
    )
    assert checkpointer.checkpoint("s", 2) == CheckpointResult("skipped")


def test_git_that_cannot_be_executed(repo: Path) -> None:
    not_executable = repo / "git-file"
    not_executable.write_text("not a program")
    result = GitCheckpointer("work", workdir=repo, git=str(not_executable)).checkpoint("s", 1)
    assert result.warning == (
        f"checkpoint: git: cannot run '{not_executable}': Permission denied, "
        "so no checkpoints will be made"
    )


def test_a_failed_commit_is_a_warning_each_time_and_the_next_one_works(repo: Path) -> None:
    checkpointer = GitCheckpointer("work", workdir=repo)
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    message = "ll-loop work: checkpoint after 's' (iteration 1)"
    result = checkpointer.checkpoint("s", 1)
    assert (result.status, result.message) == ("failed", message)
    assert result.warning == (
        f"checkpoint failed: git add: fatal: Unable to create '{lock}': File exists."
    )
    assert checkpointer.checkpoint("s", 2).status == "failed"
    lock.unlink()
    assert checkpointer.checkpoint("s", 3).status == "committed"


def test_a_hanging_git_is_cut_off(repo: Path, tmp_path: Path) -> None:
    # A stand-in that answers the probe like git, then hangs on `status`.
    real_git = subprocess.run(
        ["sh", "-c", "command -v git"], capture_output=True, text=True, check=True
    ).stdout.strip()
    slow = tmp_path / "slow-git"
    slow.write_text(f'#!/bin/sh\n[ "$1" = status ] && exec sleep 30\nexec {real_git} "$@"\n')
    slow.chmod(0o755)
    checkpointer = GitCheckpointer("work", workdir=repo, git=str(slow), timeout=0.5)
    result = checkpointer.checkpoint("s", 1)
    assert (result.status, result.warning) == (
        "failed",
        "checkpoint failed: git status took longer than 0.5s",
    )


def test_failure_text_without_stderr_names_the_exit_code(repo: Path, tmp_path: Path) -> None:
    real_git = subprocess.run(
        ["sh", "-c", "command -v git"], capture_output=True, text=True, check=True
    ).stdout.strip()
    quiet = tmp_path / "quiet-git"
    quiet.write_text(f'#!/bin/sh\n[ "$1" = status ] && exit 7\nexec {real_git} "$@"\n')
    quiet.chmod(0o755)
    result = GitCheckpointer("work", workdir=repo, git=str(quiet)).checkpoint("s", 1)
    assert result.warning == "checkpoint failed: git status: exit code 7"


def test_checkpoint_message() -> None:
    assert checkpoint_message("l", "st", 4, "iteration") == (
        "ll-loop l: checkpoint after 'st' (iteration 4)"
    )
    assert checkpoint_message("l", "st", 4, "handoff") == (
        "ll-loop l: checkpoint at handoff in 'st' (iteration 4)"
    )


def test_default_workdir_is_the_current_directory(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    checkpointer = GitCheckpointer("work")
    assert (checkpointer.workdir, checkpointer.loops_dir) == (repo, repo / ".loops")
    assert checkpointer.checkpoint("s", 1).status == "committed"
    assert committed_files(repo) == [".loops/work.yaml", "notes.txt"]
