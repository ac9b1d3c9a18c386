"""`require_tool`: a missing program skips a test locally and fails it in CI."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.required_tools import require_tool


def test_a_present_tool_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "sometool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert require_tool("sometool", "apt-get install sometool") == str(tool)


def test_a_missing_tool_skips_locally_and_fails_in_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"notool is not installed \(install it"):
        require_tool("notool", "apt-get install notool")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must install it"):
        require_tool("notool", "apt-get install notool")
