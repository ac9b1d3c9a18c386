"""A local `run`/`resume` refuses, in one line and before its first state, a loop whose
prompt states name an agent CLI that is not installed (issue 24 item 2; cli/host_preflight.py).
A loop that names no host is not checked: as the reference did, it says so at its first
slash command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.cli_support import cli_env, run_cli, write_loop

from little_loops.cli.host_preflight import missing_host_refusal
from little_loops.fsm.loading.pipeline import load_loop

FAILOVER = """\
name: work
initial: ask
host: [claude, codex]
states:
  ask:
    action: "/ll:fix"
    next: done
  done: {terminal: true}
"""

SHELL_ONLY = """\
name: shell
initial: run
host: codex
states:
  run: {action: "echo hi", next: done}
  done: {terminal: true}
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**cli_env(tmp_path), **extra}


def test_a_missing_failover_cli_refuses_the_run_before_its_first_state(tmp_path: Path) -> None:
    write_loop(tmp_path, "work", FAILOVER)
    missing = tmp_path / "nowhere" / "codex"

    done = run_cli(tmp_path, "run", "work", env=_env(tmp_path, LL_CODEX_BIN=str(missing)))

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Cannot run work: state 'ask' runs on codex, but codex CLI not found at {missing}: "
        "npm install -g @openai/codex (or set LL_CODEX_BIN)\n"
    )
    assert not (tmp_path / ".loops" / ".running" / "work.state.json").exists()


def test_resume_checks_again(tmp_path: Path) -> None:
    """A run handed off while the CLI was there, resumed after it went away."""
    write_loop(tmp_path, "work", FAILOVER)
    running = tmp_path / ".loops" / ".running"
    running.mkdir(parents=True)
    state = {
        "loop_name": "work",
        "current_state": "ask",
        "iteration": 1,
        "captured": {},
        "prev_result": None,
        "last_result": None,
        "started_at": "2026-11-26T00:00:00+00:00",
        "updated_at": "2026-11-26T00:00:00+00:00",
        "status": "awaiting_continuation",
    }
    (running / "work.state.json").write_text(json.dumps(state), encoding="utf-8")
    missing = tmp_path / "gone" / "codex"

    done = run_cli(tmp_path, "resume", "work", env=_env(tmp_path, LL_CODEX_BIN=str(missing)))

    assert done.returncode == 1
    assert done.stderr.startswith("Cannot run work: state 'ask' runs on codex, but codex CLI")
    assert json.loads((running / "work.state.json").read_text())["status"] == (
        "awaiting_continuation"
    )


def test_ll_host_cli_names_the_host_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_loop(tmp_path, "work", FAILOVER.replace("host: [claude, codex]\n", ""))
    monkeypatch.setenv("LL_HOST_CLI", "gemini-cli")
    monkeypatch.setenv("LL_GEMINI_BIN", str(tmp_path / "no-gemini"))
    refusal = missing_host_refusal(load_loop(tmp_path / ".loops" / "work.yaml"))
    assert refusal is not None
    assert refusal.startswith("Cannot run work: state 'ask' runs on gemini, but gemini CLI")


def test_an_installed_cli_and_a_loop_without_prompts_are_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_loop(tmp_path, "work", FAILOVER)
    write_loop(tmp_path, "shell", SHELL_ONLY)
    codex = tmp_path / "bin" / "codex"
    codex.parent.mkdir()
    codex.write_text("#!/bin/sh\n", encoding="utf-8")
    monkeypatch.setenv("LL_CODEX_BIN", str(codex))
    monkeypatch.delenv("LL_HOST_CLI", raising=False)
    assert missing_host_refusal(load_loop(tmp_path / ".loops" / "work.yaml")) is not None
    os.chmod(codex, 0o755)  # found only once it can be run
    assert missing_host_refusal(load_loop(tmp_path / ".loops" / "work.yaml")) is None
    monkeypatch.setenv("LL_CODEX_BIN", str(tmp_path / "nowhere"))
    assert missing_host_refusal(load_loop(tmp_path / ".loops" / "shell.yaml")) is None


def test_reference_behaviour_a_loop_naming_no_host_is_not_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """little-loops at aada157e1 starts the run and fails at the slash command."""
    write_loop(tmp_path, "work", FAILOVER.replace("host: [claude, codex]\n", ""))
    monkeypatch.delenv("LL_HOST_CLI", raising=False)
    monkeypatch.setenv("LL_CLAUDE_BIN", str(tmp_path / "no-claude"))
    assert missing_host_refusal(load_loop(tmp_path / ".loops" / "work.yaml")) is None
