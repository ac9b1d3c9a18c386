"""The rule for tests that need an outside tool: skip locally, fail in CI."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.external_tools import ToolMissing, find_program, require_tool


def missing() -> Path:
    raise ToolMissing("dot is not on PATH")


def test_a_missing_tool_skips_the_test_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)

    with pytest.raises(pytest.skip.Exception, match="graphviz is needed: dot is not on PATH"):
        require_tool(missing, why="graphviz is needed")


def test_a_missing_tool_fails_the_test_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")

    with pytest.raises(pytest.fail.Exception, match="CI must run this test"):
        require_tool(missing, why="graphviz is needed")


def test_a_tool_that_is_there_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")

    assert require_tool(lambda: Path("/usr/bin/dot"), why="x") == Path("/usr/bin/dot")


def test_find_program_names_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match=r"`notool` is not on PATH \(apt-get install notool\)"):
        find_program("notool", "apt-get install notool")
    tool = tmp_path / "notool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert find_program("notool", "apt-get install notool") == tool
