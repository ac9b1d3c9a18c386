"""Fixtures of the Claude Code end-to-end tests (see docs/testing.md).

`claude_bin` is the real CLI, installed with npm into `.cache/claude-code/` by the first
session that needs it (`claude_install.py`); when it cannot be installed every test here
fails with one line saying what to install (never a skip: a run must not pass without
them). `fake_api` is a `FakeAnthropicServer` on 127.0.0.1 answering from an `ApiScript`;
`project` is a temporary project whose `ll-loop` and `claude` talk to that server.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_script import ApiScript
from e2e_project import E2EProject
from fake_anthropic import FakeAnthropicServer
from npm_cli import (
    CLAUDE_CODE,
    CODEX,
    GEMINI_CLI,
    OPENCODE,
    QWEN_CODE,
    CliUnavailable,
    NpmCli,
    ensure,
)


@pytest.fixture(scope="session")
def claude_bin(pytestconfig: pytest.Config) -> Path:
    """The real Claude Code CLI (.ci/claude-code-version), installed on first use."""
    return _installed(CLAUDE_CODE, pytestconfig)


@pytest.fixture(scope="session")
def codex_bin(pytestconfig: pytest.Config) -> Path:
    """The real Codex CLI (.ci/codex-version), installed on first use."""
    return _installed(CODEX, pytestconfig)


@pytest.fixture(scope="session")
def gemini_bin(pytestconfig: pytest.Config) -> Path:
    """The real Gemini CLI (.ci/gemini-cli-version), installed on first use."""
    return _installed(GEMINI_CLI, pytestconfig)


@pytest.fixture(scope="session")
def opencode_bin(pytestconfig: pytest.Config) -> Path:
    """The real OpenCode CLI (.ci/opencode-version), installed on first use."""
    return _installed(OPENCODE, pytestconfig)


@pytest.fixture(scope="session")
def qwen_bin(pytestconfig: pytest.Config) -> Path:
    """The real Qwen Code CLI (.ci/qwen-code-version), installed on first use."""
    return _installed(QWEN_CODE, pytestconfig)


def _installed(cli: NpmCli, config: pytest.Config) -> Path:
    """`cli`'s binary, installed first if needed; else the test fails with one line."""
    try:
        return ensure(cli, lambda line: _say(config, line))
    except CliUnavailable as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)  # outside `except`: one line, no exception chain


def _say(config: pytest.Config, line: str) -> None:
    """Write `line` to the terminal now, past pytest's output capture."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if capture is None or reporter is None:  # run without those plugins (`-p no:...`)
        print(line, file=sys.stderr, flush=True)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


@pytest.fixture
def script() -> ApiScript:
    """The rules the fake API answers from; each test fills in `script.rules`."""
    return ApiScript([])


@pytest.fixture
def fake_api(script: ApiScript) -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        server.responder = script
        yield server


@pytest.fixture
def project(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_api: FakeAnthropicServer,
    claude_bin: Path,
) -> E2EProject:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    monkeypatch.chdir(root)
    return E2EProject(root, home, fake_api.base_url, claude_bin)
