"""The e2e tests install the pinned Claude Code CLI on first use (issue 10 #8).

Each test copies the e2e support files into a temporary "repository" (so `.cache/` is its
own) and runs pytest on a tiny e2e test there, in a subprocess. npm is either absent from
PATH or a stand-in script that records its calls and creates a fake `claude`: nothing is
downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
REPO = TESTS.parents[1]
VERSION = (REPO / ".ci" / "claude-code-version").read_text(encoding="utf-8").strip()
ANNOUNCEMENT = f"installing Claude Code {VERSION} into .cache/claude-code for the end-to-end tests"

TINY_E2E_TEST = """\
import subprocess


def test_claude_runs(claude_bin):
    version = subprocess.run([str(claude_bin), "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("{version} ")
"""

# Stands in for npm: appends its arguments to npm-calls.log, waits a little (so a second
# process arrives during the "install"), and puts a claude that reports the pinned version
# into <prefix>/node_modules/.bin/.
FAKE_NPM = """\
#!{python}
import sys, time
from pathlib import Path

args = sys.argv[1:]
with open({calls!r}, "a") as log:
    log.write(" ".join(args) + "\\n")
time.sleep(1)
bin_dir = Path(args[args.index("--prefix") + 1]) / "node_modules" / ".bin"
bin_dir.mkdir(parents=True, exist_ok=True)
claude = bin_dir / "claude"
claude.write_text("#!/bin/sh\\necho '{version} (Claude Code)'\\n")
claude.chmod(0o755)
"""


def make_repository(root: Path) -> Path:
    """A copy of what the e2e tests need, laid out as in the repository."""
    e2e = root / "scripts" / "tests" / "e2e"
    e2e.mkdir(parents=True)
    for path in (TESTS / "e2e").glob("*.py"):
        if not path.name.startswith("test_"):
            shutil.copy(path, e2e)
    # the conftest puts tests/ on sys.path
    for name in ("conftest.py", "fake_anthropic.py", "local_server.py"):
        shutil.copy(TESTS / name, e2e.parent)
    (e2e / "test_tiny_e2e.py").write_text(TINY_E2E_TEST.replace("{version}", VERSION))
    (root / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "claude-code-version", root / ".ci")
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n'
    )
    return root


def pytest_env(path: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "LL_E2E_CLAUDE"}
    env["PATH"] = path
    return env


def run_pytest(repository: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "scripts/tests/e2e/test_tiny_e2e.py"],
        cwd=repository,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.slow
def test_without_npm_the_e2e_tests_fail_with_one_line_saying_what_to_install(
    tmp_path: Path,
) -> None:
    repository = make_repository(tmp_path / "repo")
    no_npm = tmp_path / "bin"  # PATH holds only this python: no npm, no node
    no_npm.mkdir()
    (no_npm / "python3").symlink_to(sys.executable)
    output, _ = run_pytest(repository, pytest_env(str(no_npm))).communicate(timeout=120)
    assert "1 error" in output, output
    expected = (
        f"npm not found: the end-to-end tests install Claude Code {VERSION} with npm into "
        ".cache/claude-code; install Node.js with npm (https://nodejs.org) and run pytest again"
    )
    failure_lines = [line for line in output.splitlines() if "npm not found" in line]
    assert failure_lines[0].endswith(expected)
    assert "skipped" not in output
    assert "Traceback" not in output
    assert "During handling" not in output
    assert not (repository / ".cache" / "claude-code").exists()


@pytest.mark.slow
def test_first_use_installs_once_for_concurrent_sessions(tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "repo")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    calls = tmp_path / "npm-calls.log"
    npm = fake_bin / "npm"
    npm.write_text(
        FAKE_NPM.replace("{python}", sys.executable)
        .replace("{calls!r}", repr(str(calls)))
        .replace("{version}", VERSION)
    )
    npm.chmod(0o755)
    env = pytest_env(f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    sessions = [run_pytest(repository, env) for _ in range(2)]
    outputs = [session.communicate(timeout=120)[0] for session in sessions]
    assert [session.returncode for session in sessions] == [0, 0], outputs
    assert sum(output.count(ANNOUNCEMENT) for output in outputs) == 1
    prefix = repository / ".cache" / "claude-code"
    assert calls.read_text().splitlines() == [
        f"install --prefix {prefix} --cache {repository / '.cache' / 'npm'} --no-audit "
        f"--no-fund --no-save --loglevel=error @anthropic-ai/claude-code@{VERSION}"
    ]
    # Installed: a later session neither installs nor announces.
    later, _ = run_pytest(repository, env).communicate(timeout=120)
    assert "1 passed" in later
    assert ANNOUNCEMENT not in later
    assert len(calls.read_text().splitlines()) == 1
