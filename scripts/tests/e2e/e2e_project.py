"""A temporary project for one scenario: loop files, slash commands, `ll-loop` runs.

    project.write_command("work", "Please work on: $ARGUMENTS")
    project.write_loop("demo", LOOP_YAML)
    done = project.ll_loop("run", "demo")
    assert done.returncode == 0
    assert project.state("demo")["status"] == "completed"

`ll-loop` runs as a real process with the environment of `claude_code.claude_env`, so
every slash command reaches the real Claude Code CLI and, through it, the fake API.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_code import claude_env

# The venv's `ll-loop` sits beside the interpreter running the tests.
VENV_BIN = Path(sys.executable).parent
LL_LOOP = VENV_BIN / "ll-loop"
RUN_TIMEOUT = 60.0


@dataclass
class E2EProject:
    """A project folder whose `ll-loop` talks to the fake API at `base_url`.

    `home` is a separate empty folder, so claude's own files (`~/.claude*`) stay out of
    the project and user-level commands never mix with the project's. `subscriber` and
    `max_retries` are those of `claude_env`: set them before a run to make claude a
    subscription user (usage limits) or let it retry a 429/529 itself.
    """

    root: Path
    home: Path
    base_url: str
    claude_bin: Path
    subscriber: bool = False
    max_retries: int = 0

    def env(self) -> dict[str, str]:
        return claude_env(
            base_url=self.base_url,
            home=self.home,
            claude_bin=self.claude_bin,
            extra_path=[VENV_BIN],
            subscriber=self.subscriber,
            max_retries=self.max_retries,
        )

    def write_loop(self, name: str, text: str) -> Path:
        path = self.root / ".loops" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def write_command(self, name: str, body: str) -> Path:
        """`.claude/commands/<name>.md`: Claude Code puts the arguments at `$ARGUMENTS`."""
        path = self.root / ".claude" / "commands" / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        return path

    def ll_loop(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """Run `ll-loop <args>` in the project and wait for it."""
        return subprocess.run(
            [str(LL_LOOP), *args],
            cwd=self.root,
            env=env or self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def running_file(self, name: str) -> Path:
        return self.root / ".loops" / ".running" / name

    def state(self, loop: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.running_file(f"{loop}.state.json").read_text())
        return data

    def events(self, loop: str) -> list[dict[str, Any]]:
        lines = self.running_file(f"{loop}.events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    def event_names(self, loop: str) -> list[str]:
        return [event["event"] for event in self.events(loop)]

    def wait_for_status(self, loop: str, status: str, timeout: float = RUN_TIMEOUT) -> None:
        """Wait until the state file of `loop` says `status` (for detached sessions)."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            try:
                seen = self.state(loop)["status"]
            except (FileNotFoundError, json.JSONDecodeError):  # not yet, or mid-replace
                seen = None
            if seen == status:
                return
            time.sleep(0.1)
        raise AssertionError(f"{loop} never reached status {status!r} (last seen: {seen!r})")


def wait_for_exit(pid: int, timeout: float = RUN_TIMEOUT) -> None:
    """Wait until process `pid` (a detached session, not our child) has gone.

    A process still there at the deadline is killed, so no test leaves one behind.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"process {pid} was still running after {timeout:g}s")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only its parent's wait is missing.
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
