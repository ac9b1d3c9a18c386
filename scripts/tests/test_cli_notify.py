"""`notify:` and `--notify CMD` through the real `ll-loop` (issue 13, item 6 and (d)).

Each loop's notify command appends `$LL_EVENT $LL_STATUS` to a file in `tmp_path`; the
tests wait for the lines (the command runs detached), never for a time.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from fixtures.cli_support import (
    ERROR_LOOP,
    FAILING_LOOP,
    HANDOFF_LOOP,
    LL_LOOP,
    SIMPLE_LOOP,
    SLOW_LOOP,
    cli_env,
    run_cli,
    wait_for_action_start,
    write_loop,
)
from fixtures.notify_support import RECORD_EVENT, lines_of, log_outcomes, wait_for_lines, wait_until


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path


def _env(project: Path) -> dict[str, str]:
    env = cli_env(project)
    env["NOTIFY_OUT"] = str(project / "told")
    return env


def _with_notify(loop: str, command: str = RECORD_EVENT) -> str:
    """`loop` with a loop-level `notify:` (after its `name:` line)."""
    name_line, rest = loop.split("\n", 1)
    return f"{name_line}\nnotify: {json.dumps(command)}\n{rest}"


def _ll_loop(project: Path, *args: str) -> int:
    return run_cli(project, *args, env=_env(project), timeout=120).returncode


def _notify_log(project: Path, name: str) -> Path:
    return project / ".loops" / ".running" / f"{name}.notify.log"


def test_a_completed_run_is_told(project: Path) -> None:
    write_loop(project, "simple", _with_notify(SIMPLE_LOOP))
    assert _ll_loop(project, "run", "simple") == 0
    assert wait_for_lines(project / "told", 1) == ["completed completed"]
    assert log_outcomes(_notify_log(project, "simple"), 1) == ["completed exit 0"]


def test_a_handoff_pause_then_the_resumed_completion_are_told_in_order(project: Path) -> None:
    write_loop(project, "handoff", _with_notify(HANDOFF_LOOP))
    assert _ll_loop(project, "run", "handoff") == 3
    assert wait_for_lines(project / "told", 1) == ["handoff awaiting_continuation"]
    assert _ll_loop(project, "resume", "handoff") == 0
    assert wait_for_lines(project / "told", 2) == [
        "handoff awaiting_continuation",
        "completed completed",
    ]
    assert log_outcomes(_notify_log(project, "handoff"), 2) == [
        "handoff exit 0",
        "completed exit 0",
    ]


def test_a_failed_run_is_told_with_its_error(project: Path) -> None:
    command = 'echo "$LL_EVENT $LL_STATUS: $LL_MESSAGE" >> "$NOTIFY_OUT"'
    write_loop(project, "erroring", _with_notify(ERROR_LOOP, command))
    assert _ll_loop(project, "run", "erroring") == 1
    [line] = wait_for_lines(project / "told", 1)
    assert line.startswith("failed failed: ")
    state = json.loads((project / ".loops/.running/erroring.state.json").read_text())
    assert line == f"failed failed: {' '.join(state['error'].split())}"


STALLING_LOOP = """\
name: stuck
initial: check
stall_threshold: 2
states:
  check:
    action: "echo same; exit 1"
    on_success: done
    on_failure: check
  done:
    terminal: true
"""


def test_a_stalled_run_is_told(project: Path) -> None:
    write_loop(project, "stuck", _with_notify(STALLING_LOOP))
    assert _ll_loop(project, "run", "stuck") == 5
    assert wait_for_lines(project / "told", 1) == ["stalled stalled"]


def test_the_iteration_limit_is_told(project: Path) -> None:
    write_loop(project, "failing", _with_notify(FAILING_LOOP))
    assert _ll_loop(project, "run", "failing") == 4
    assert wait_for_lines(project / "told", 1) == ["max_iterations interrupted"]


def test_a_stopped_run_is_told_interrupted(project: Path) -> None:
    write_loop(project, "slow", _with_notify(SLOW_LOOP))
    process = subprocess.Popen(
        [str(LL_LOOP), "run", "slow"],
        cwd=project,
        env=_env(project),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_action_start(project, "slow")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 130
    assert wait_for_lines(project / "told", 1) == ["interrupted interrupted"]


def test_notify_on_the_command_line_replaces_the_loop_files(project: Path) -> None:
    write_loop(project, "simple", _with_notify(SIMPLE_LOOP, 'echo file >> "$NOTIFY_OUT.file"'))
    assert _ll_loop(project, "run", "simple", "--notify", RECORD_EVENT) == 0
    assert wait_for_lines(project / "told", 1) == ["completed completed"]
    # One call was made (the log line is written after the command ended): the flag's.
    assert log_outcomes(_notify_log(project, "simple"), 1) == ["completed exit 0"]
    assert lines_of(_notify_log(project, "simple"))[1:] == []
    assert not (project / "told.file").exists()


def test_an_empty_notify_turns_the_loop_files_off(project: Path) -> None:
    write_loop(project, "simple", _with_notify(SIMPLE_LOOP))
    assert _ll_loop(project, "run", "simple", "--notify", "") == 0
    # The log is opened before a call returns, so no log means no call was made.
    assert not _notify_log(project, "simple").exists()


@pytest.mark.parametrize(
    ("command", "outcome"),
    [
        ("echo 'no route to host' >&2; exit 7", "completed exit 7: no route to host"),
        ("no-such-notifier-xyz", "completed exit 127: "),
    ],
)
def test_a_failing_notify_command_is_logged_and_the_run_still_succeeds(
    project: Path, command: str, outcome: str
) -> None:
    write_loop(project, "simple", SIMPLE_LOOP)
    result = run_cli(project, "run", "simple", "--notify", command, env=_env(project))
    assert (result.returncode, result.stderr) == (0, "")
    assert "notify" not in result.stdout
    [logged] = log_outcomes(_notify_log(project, "simple"), 1)
    assert logged.startswith(outcome)


def test_ll_loop_exits_while_its_notify_command_still_runs(project: Path) -> None:
    # The command waits for a file only this test writes, after `ll-loop` has exited.
    go = project / "go"
    command = f'while [ ! -e "{go}" ]; do sleep 0.05; done; {RECORD_EVENT}'
    write_loop(project, "simple", _with_notify(SIMPLE_LOOP, command))
    result = run_cli(project, "run", "simple", env=_env(project), timeout=120)
    assert result.returncode == 0
    assert not (project / "told").exists()  # it is still waiting
    go.touch()
    assert wait_for_lines(project / "told", 1) == ["completed completed"]
    assert log_outcomes(_notify_log(project, "simple"), 1) == ["completed exit 0"]


def test_the_command_gets_every_variable(project: Path) -> None:
    command = (
        'printf "%s\\n" "$LL_LOOP" "$LL_EVENT" "$LL_STATUS" "$LL_MESSAGE" "$LL_STATE_FILE" '
        '> "$NOTIFY_OUT.tmp" && mv "$NOTIFY_OUT.tmp" "$NOTIFY_OUT"'
    )
    write_loop(project, "simple", SIMPLE_LOOP)
    assert _ll_loop(project, "run", "simple", "--notify", command) == 0
    loop, event, status, message, state_file = wait_for_lines(project / "told", 5)
    assert (loop, event, status) == ("simple", "completed", "completed")
    assert message.startswith("done at state 'done' after 1 iteration, ")
    assert state_file == str(project / ".loops" / ".running" / "simple.state.json")
    assert json.loads(Path(state_file).read_text())["status"] == "completed"


def test_a_background_run_tells_too(project: Path) -> None:
    write_loop(project, "simple", SIMPLE_LOOP)
    assert _ll_loop(project, "run", "simple", "--background", "--notify", RECORD_EVENT) == 0
    assert wait_for_lines(project / "told", 1) == ["completed completed"]
    log = project / ".loops" / ".running" / "simple.log"
    wait_until(lambda: "Loop completed" in log.read_text(), "the background run completed")


# --- the ready-made commands of docs/long-running-loops.md ------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "long-running-loops.md"


def _documented_notify(marker: str) -> str:
    """The `notify:` value of the docs' YAML block whose command contains `marker`."""
    section = DOCS.read_text(encoding="utf-8").split("## 8. Tell a person: notify", 1)[1]
    blocks = re.findall(r"^```yaml\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    commands = [yaml.safe_load(block)["notify"] for block in blocks]
    [command] = [command for command in commands if marker in command]
    assert isinstance(command, str)
    return command


def test_the_documented_desktop_notification_gets_title_and_text(project: Path) -> None:
    # A stand-in `notify-send` on PATH records its two arguments.
    bin_dir = project / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "notify-send"
    fake.write_text('#!/bin/sh\nprintf "%s|%s\\n" "$1" "$2" >> "$NOTIFY_OUT"\n')
    fake.chmod(0o755)
    write_loop(project, "simple", SIMPLE_LOOP)
    env = _env(project)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    command = _documented_notify("notify-send")
    assert run_cli(project, "run", "simple", "--notify", command, env=env).returncode == 0
    [line] = wait_for_lines(project / "told", 1)
    assert line.startswith("ll-loop simple|completed: done at state 'done' after 1 iteration, ")


class _Webhook(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, object]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.headers["Content-Type"], json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[tuple[str, object]]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Webhook)
    _Webhook.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", _Webhook.received
    server.shutdown()
    server.server_close()


def test_the_documented_webhook_posts_the_message_as_json(
    project: Path, webhook: tuple[str, list[tuple[str, object]]]
) -> None:
    url, received = webhook
    write_loop(project, "handoff", HANDOFF_LOOP)
    env = _env(project)
    env["WEBHOOK_URL"] = url
    command = _documented_notify("WEBHOOK_URL")
    result = run_cli(project, "run", "handoff", "--notify", command, env=env)
    assert result.returncode == 3
    assert log_outcomes(_notify_log(project, "handoff"), 1) == ["handoff exit 0"]
    assert received == [
        ("application/json", {"text": "ll-loop handoff handoff: Continue with module B"})
    ]
