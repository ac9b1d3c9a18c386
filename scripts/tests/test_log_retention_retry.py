"""Log retention counts an action's run again after a limit by its own log (issue 29
item 8): with `logs_keep: 1`, the retry's log (`1-work.retry-1.log`) replaces the first
attempt's as the newest, and is itself pruned once the next action has a log. Real
`ll-loop`, a scripted stream-json `claude` answering 529 once, files in `tmp_path`."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import scripted_claude
from fixtures.cli_support import cli_env, run_cli, write_loop

LOOP = """\
name: night
initial: work
logs_keep: 1
rate_limit:
  first_backoff: 0.01
states:
  work:
    action: /ll:work
    next: more
  more:
    action: /ll:more
    next: done
  done:
    terminal: true
"""

OVERLOADED = "API Error: Repeated 529 Overloaded errors. Try again later."


def test_logs_keep_1_prunes_the_first_attempt_then_the_retry(tmp_path: Path) -> None:
    write_loop(tmp_path, "night", LOOP)
    env = cli_env(tmp_path)
    steps = [{"text": OVERLOADED, "is_error": True, "status": 529}, {"text": "worked"}, {}]
    env["LL_CLAUDE_BIN"] = str(scripted_claude.install(tmp_path / "fake", steps))

    done = run_cli(tmp_path, "run", "night", env=env)

    assert done.returncode == 0, done.stderr
    logs = tmp_path / ".loops/.running/night.logs"
    assert sorted(path.name for path in logs.iterdir()) == ["2-more.log"]
    events = [
        json.loads(line)
        for line in (tmp_path / ".loops/.running/night.events.jsonl").read_text().splitlines()
    ]
    completed = [Path(e["log_path"]).name for e in events if e["event"] == "action_complete"]
    assert completed == ["1-work.log", "1-work.retry-1.log", "2-more.log"]
