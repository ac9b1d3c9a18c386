"""`ll-loop run --notify ""` turns the loop file's `notify:` off for the whole run, the
resumed part too (issue 29 item 9): the empty command is saved in the state file and
`resume` keeps it. Real `ll-loop`, a handoff loop paused and resumed in `tmp_path`."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.cli_support import HANDOFF_LOOP, cli_env, run_cli, write_loop
from fixtures.notify_support import RECORD_EVENT, wait_for_lines


def _notified_loop() -> str:
    """The handoff loop with a loop-level `notify:` (after its `name:` line)."""
    name_line, rest = HANDOFF_LOOP.split("\n", 1)
    return f"{name_line}\nnotify: {json.dumps(RECORD_EVENT)}\n{rest}"


def _state(project: Path) -> dict[str, object]:
    data = json.loads((project / ".loops/.running/handoff.state.json").read_text())
    assert isinstance(data, dict)
    return data


def test_an_empty_notify_given_to_run_is_kept_by_resume(tmp_path: Path) -> None:
    write_loop(tmp_path, "handoff", _notified_loop())
    env = cli_env(tmp_path)
    env["NOTIFY_OUT"] = str(tmp_path / "told")
    notify_log = tmp_path / ".loops/.running/handoff.notify.log"

    paused = run_cli(tmp_path, "run", "handoff", "--notify", "", env=env)
    assert paused.returncode == 3, paused.stderr
    assert _state(tmp_path)["notify"] == ""

    resumed = run_cli(tmp_path, "resume", "handoff", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert _state(tmp_path)["status"] == "completed"
    # The log is opened before a notify call returns: no log, no call (run or resume).
    assert not notify_log.exists()
    assert not (tmp_path / "told").exists()


def test_without_the_flag_the_loop_files_notify_tells_the_resumed_run_too(tmp_path: Path) -> None:
    """The counterpart: the same run without `--notify ""` is told twice."""
    write_loop(tmp_path, "handoff", _notified_loop())
    env = cli_env(tmp_path)
    env["NOTIFY_OUT"] = str(tmp_path / "told")
    assert run_cli(tmp_path, "run", "handoff", env=env).returncode == 3
    assert "notify" not in _state(tmp_path)
    assert run_cli(tmp_path, "resume", "handoff", env=env).returncode == 0
    assert wait_for_lines(tmp_path / "told", 2) == [
        "handoff awaiting_continuation",
        "completed completed",
    ]
