"""A run whose spending is partly unknown says so (issue 29 item 2): claude reported
tokens but no cost, so the state file's `spending` carries `"unpriced": true` and
`ll-loop status` adds ", some not priced". Real `ll-loop` with a scripted stream-json
`claude` in `tmp_path`."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import scripted_claude
from fixtures.cli_support import cli_env, run_cli, write_loop

LOOP = """\
name: night
initial: work
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


def _run(tmp_path: Path, steps: list[dict[str, object]]) -> tuple[dict[str, object], str]:
    """Run the loop with `steps` as claude's answers; its saved `spending` and `status`."""
    write_loop(tmp_path, "night", LOOP)
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(scripted_claude.install(tmp_path / "fake", steps))
    done = run_cli(tmp_path, "run", "night", env=env)
    assert done.returncode == 0, done.stderr
    state = json.loads((tmp_path / ".loops/.running/night.state.json").read_text())
    status = run_cli(tmp_path, "status", "night", env=env)
    assert status.returncode == 0, status.stderr
    spent = [line for line in status.stdout.splitlines() if line.startswith("Spent:")]
    return state["spending"], "\n".join(spent)


def test_tokens_without_a_cost_mark_the_run_unpriced_in_the_state_file_and_status(
    tmp_path: Path,
) -> None:
    """The first action is priced ($0.25), the second reports its tokens without a cost."""
    spending, spent = _run(tmp_path, [{"cost": 0.25}, {"cost": None}])
    assert spending == {
        "cost_usd": 0.25,
        "tokens": {"input": 200, "output": 40, "cache_read": 0, "cache_creation": 0},
        "unpriced": True,
    }
    assert spent == "Spent: $0.2500 (240 tokens: 200 in, 40 out, some not priced)"


def test_a_run_priced_throughout_has_no_unpriced_mark(tmp_path: Path) -> None:
    spending, spent = _run(tmp_path, [{"cost": 0.25}, {"cost": 0.5}])
    assert spending == {
        "cost_usd": 0.75,
        "tokens": {"input": 200, "output": 40, "cache_read": 0, "cache_creation": 0},
    }
    assert spent == "Spent: $0.7500 (240 tokens: 200 in, 40 out)"
