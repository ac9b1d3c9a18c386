"""Fixtures of the Claude Code end-to-end tests (see docs/testing.md).

`claude_bin` is the real CLI; a missing one fails every test here with the command that
installs it (never a skip: CI must not pass without having run them). `fake_api` is a
`FakeAnthropicServer` on 127.0.0.1 answering from an `ApiScript`; `project` is a
temporary project whose `ll-loop` and `claude` talk to that server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_script import ApiScript
from claude_code import claude_binary, missing_binary_message
from e2e_project import E2EProject
from fake_anthropic import FakeAnthropicServer


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    binary = claude_binary()
    if binary is None:
        pytest.fail(missing_binary_message(), pytrace=False)
    return binary


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
