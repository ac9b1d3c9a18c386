"""HandoffHandler: pause, terminate, and spawning a detached fake claude."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from little_loops.fsm.handoff_handler import (
    HandoffBehavior,
    HandoffHandler,
    HandoffResult,
    SpawnError,
    spawn_prompt,
)
from little_loops.fsm.process.runner import CLAUDE_NOT_FOUND

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
    assert [b.value for b in HandoffBehavior] == ["terminate", "pause", "spawn", "continue"]
    assert HandoffBehavior("spawn") is HandoffBehavior.SPAWN


def test_default_behaviour_is_pause() -> None:
    handler = HandoffHandler()
    assert (handler.behavior, handler.claude_bin, handler.log_dir, handler.hold_spawn) == (
        HandoffBehavior.PAUSE,
        None,
        None,
        False,
    )


@pytest.mark.parametrize(
    "behavior", [HandoffBehavior.PAUSE, HandoffBehavior.TERMINATE, HandoffBehavior.CONTINUE]
)
def test_pause_terminate_and_continue_only_report(behavior: HandoffBehavior) -> None:
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
    claude.write_text("not a program")  # not executable
    result = HandoffHandler(HandoffBehavior.SPAWN, claude_bin=str(claude)).handle("demo", None)
    assert result.spawned_process is None
    assert result.error == f"Cannot start claude for the handoff: {claude}: not an executable file"
    directory = HandoffHandler(HandoffBehavior.SPAWN, claude_bin=str(tmp_path)).handle("d", None)
    assert directory.error == (
        f"Cannot start claude for the handoff: {tmp_path}: not an executable file"
    )


def test_claude_is_found_on_path_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_claude(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    assert HandoffHandler(HandoffBehavior.SPAWN).claude_path() == str(tmp_path / "claude")
    (tmp_path / "bin").mkdir()
    other = fake_claude(tmp_path / "bin")
    monkeypatch.setenv("LL_CLAUDE_BIN", str(other))
    assert HandoffHandler(HandoffBehavior.SPAWN).claude_path() == str(other)


def test_a_missing_claude_is_reported_before_anything_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    handler = HandoffHandler(HandoffBehavior.SPAWN, log_dir=tmp_path / "logs")
    with pytest.raises(SpawnError, match=r"^claude CLI not found"):
        handler.claude_path()
    assert handler.handle("demo", "x").error == CLAUDE_NOT_FOUND
    assert not (tmp_path / "logs").exists()


def _command_line(pid: int) -> list[str]:
    """The process's argv (read again while the kernel still shows it empty after exec)."""
    deadline = time.monotonic() + 5
    while not (raw := Path(f"/proc/{pid}/cmdline").read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return raw.decode().split("\0")[:-1]


def test_a_held_spawn_waits_until_released_and_keeps_its_pid(tmp_path: Path) -> None:
    claude = fake_claude(tmp_path, '#!/bin/sh\necho "claude pid $$"\n')
    handler = HandoffHandler(
        HandoffBehavior.SPAWN, claude_bin=str(claude), log_dir=tmp_path, hold_spawn=True
    )
    process = handler.handle("demo", "go").spawned_process
    assert process is not None
    # Held: still the waiting shell (it blocks on its stdin until released).
    assert _command_line(process.pid)[:2] == ["/bin/sh", "-c"]
    assert _command_line(process.pid)[3:5] == ["ll-loop-handoff:demo", str(claude)]
    assert (tmp_path / "demo.handoff.log").read_text() == ""
    handler.release_spawned()
    handler.release_spawned()  # a second release does nothing
    assert process.wait(timeout=10) == 0
    assert (tmp_path / "demo.handoff.log").read_text() == f"claude pid {process.pid}\n"


def test_release_without_a_spawn_does_nothing(tmp_path: Path) -> None:
    """Nothing held: no error, and the next spawn is held all the same (an early release
    is not kept for it)."""
    claude = fake_claude(tmp_path, '#!/bin/sh\necho "claude pid $$"\n')
    handler = HandoffHandler(
        HandoffBehavior.SPAWN, claude_bin=str(claude), log_dir=tmp_path, hold_spawn=True
    )
    handler.release_spawned()
    process = handler.handle("demo", "go").spawned_process
    assert process is not None
    assert _command_line(process.pid)[3:5] == ["ll-loop-handoff:demo", str(claude)]
    assert (tmp_path / "demo.handoff.log").read_text() == ""
    handler.release_spawned()
    assert process.wait(timeout=10) == 0
    assert (tmp_path / "demo.handoff.log").read_text() == f"claude pid {process.pid}\n"


def test_a_held_spawn_starts_when_its_parent_exits_without_releasing(tmp_path: Path) -> None:
    claude = fake_claude(tmp_path, "#!/bin/sh\necho started\n")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler\n"
        f"handler = HandoffHandler(HandoffBehavior.SPAWN, claude_bin={str(claude)!r}, "
        f"log_dir=Path({str(tmp_path)!r}), hold_spawn=True)\n"
        "print(handler.handle('demo', None).spawned_process.pid)\n"
    )
    parent = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    pid = int(parent.stdout)
    log = tmp_path / "demo.handoff.log"
    deadline = time.monotonic() + 10
    while log.read_text() != "started\n":
        assert time.monotonic() < deadline, f"held session {pid} never started"
        time.sleep(0.02)


def test_spawn_with_an_unusable_log_dir_reports_the_reason(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    handler = HandoffHandler(
        HandoffBehavior.SPAWN, claude_bin=str(fake_claude(tmp_path)), log_dir=not_a_dir
    )
    result = handler.handle("demo", None)
    assert result.spawned_process is None
    assert result.error == f"Cannot start claude for the handoff: {not_a_dir}: File exists"


def test_package_exports_the_signal_and_handoff_names_of_the_plan() -> None:
    import little_loops.fsm as fsm
    from little_loops.fsm import handoff_handler, signal_detector

    phase_8 = {
        "DetectedSignal": signal_detector.DetectedSignal,
        "SignalDetector": signal_detector.SignalDetector,
        "SignalPattern": signal_detector.SignalPattern,
        "HANDOFF_SIGNAL": signal_detector.HANDOFF_SIGNAL,
        "ERROR_SIGNAL": signal_detector.ERROR_SIGNAL,
        "STOP_SIGNAL": signal_detector.STOP_SIGNAL,
        "HandoffBehavior": handoff_handler.HandoffBehavior,
        "HandoffHandler": handoff_handler.HandoffHandler,
        "HandoffResult": handoff_handler.HandoffResult,
    }
    assert set(phase_8) <= set(fsm.__all__)
    assert {name: getattr(fsm, name) for name in phase_8} == phase_8
