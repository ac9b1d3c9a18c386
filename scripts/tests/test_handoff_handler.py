"""HandoffHandler: pause, terminate, and spawning a detached fake claude."""

from __future__ import annotations

from pathlib import Path

import pytest

from little_loops.fsm.handoff_handler import (
    HandoffBehavior,
    HandoffHandler,
    HandoffResult,
    spawn_prompt,
)
from little_loops.fsm.runner import CLAUDE_NOT_FOUND

RECORDING_CLAUDE = """#!/bin/bash
for arg in "$@"; do printf '[%s]\\n' "$arg"; done
read -ra fields < /proc/$$/stat
echo "session leader: $([ "${fields[5]}" = "$$" ] && echo yes || echo no)"
read -r line; echo "stdin read exit: $?"
echo "to stderr" >&2
"""


def fake_claude(tmp_path: Path, body: str = RECORDING_CLAUDE) -> Path:
    path = tmp_path / "claude"
    path.write_text(body)
    path.chmod(0o755)
    return path


def test_behaviour_values() -> None:
    assert [b.value for b in HandoffBehavior] == ["terminate", "pause", "spawn"]
    assert HandoffBehavior("spawn") is HandoffBehavior.SPAWN


def test_default_behaviour_is_pause() -> None:
    handler = HandoffHandler()
    assert (handler.behavior, handler.claude_bin, handler.log_dir) == (
        HandoffBehavior.PAUSE,
        None,
        None,
    )


@pytest.mark.parametrize("behavior", [HandoffBehavior.PAUSE, HandoffBehavior.TERMINATE])
def test_pause_and_terminate_only_report(behavior: HandoffBehavior) -> None:
    result = HandoffHandler(behavior).handle("demo", "go on")
    assert result == HandoffResult(behavior, "go on", None, None)


def test_spawn_prompt() -> None:
    assert spawn_prompt("demo", None) == "Continue loop execution. Run: ll-loop resume demo"
    assert spawn_prompt("demo", "") == "Continue loop execution. Run: ll-loop resume demo"
    assert spawn_prompt("demo", "fix B") == (
        "Continue loop execution. Run: ll-loop resume demo\n\nfix B"
    )


def test_spawn_starts_claude_detached_with_output_in_the_log(tmp_path: Path) -> None:
    claude = fake_claude(tmp_path)
    logs = tmp_path / "logs"
    handler = HandoffHandler(HandoffBehavior.SPAWN, claude_bin=str(claude), log_dir=logs)
    result = handler.handle("demo", "fix module B")
    assert result.spawned_process is not None
    assert result.spawned_process.wait(timeout=10) == 0
    assert (result.behavior, result.continuation_prompt, result.error) == (
        HandoffBehavior.SPAWN,
        "fix module B",
        None,
    )
    assert handler.log_path("demo") == logs / "demo.handoff.log"
    assert (logs / "demo.handoff.log").read_text() == (
        "[--dangerously-skip-permissions]\n[-p]\n"
        "[Continue loop execution. Run: ll-loop resume demo\n\nfix module B]\n"
        "session leader: yes\nstdin read exit: 1\nto stderr\n"
    )


def test_spawn_appends_to_an_existing_log(tmp_path: Path) -> None:
    claude = fake_claude(tmp_path, "#!/bin/sh\necho spawned\n")
    handler = HandoffHandler(HandoffBehavior.SPAWN, claude_bin=str(claude), log_dir=tmp_path)
    for _ in range(2):
        process = handler.handle("demo", None).spawned_process
        assert process is not None
        process.wait(timeout=10)
    assert (tmp_path / "demo.handoff.log").read_text() == "spawned\nspawned\n"


def test_spawn_without_log_dir_discards_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LL_CLAUDE_BIN", str(fake_claude(tmp_path)))
    result = HandoffHandler(HandoffBehavior.SPAWN).handle("demo", "x")
    assert result.spawned_process is not None
    assert result.spawned_process.wait(timeout=10) == 0
    assert HandoffHandler(HandoffBehavior.SPAWN).log_path("demo") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claude"]


def test_spawn_with_missing_claude_reports_instead_of_raising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = HandoffHandler(HandoffBehavior.SPAWN).handle("demo", "go")
    assert result == HandoffResult(HandoffBehavior.SPAWN, "go", None, CLAUDE_NOT_FOUND)


def test_spawn_with_unrunnable_claude_reports_the_reason(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    claude.write_text("not a program")
    result = HandoffHandler(HandoffBehavior.SPAWN, claude_bin=str(claude)).handle("demo", None)
    assert result.spawned_process is None
    assert result.error == f"Cannot start claude for the handoff: {claude}: Permission denied"


def test_spawn_with_an_unusable_log_dir_reports_the_reason(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    handler = HandoffHandler(
        HandoffBehavior.SPAWN, claude_bin=str(fake_claude(tmp_path)), log_dir=not_a_dir
    )
    result = handler.handle("demo", None)
    assert result.spawned_process is None
    assert result.error == f"Cannot start claude for the handoff: {not_a_dir}: File exists"
