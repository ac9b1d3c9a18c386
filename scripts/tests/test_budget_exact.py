"""The budget is reached when the spending equals it (issue 29 item 3): `--max-cost 0.5`
after two actions of $0.25 each ends the run before the third, with exit 8. Real
`ll-loop` with a scripted stream-json `claude` in `tmp_path` (binary-exact amounts, so
"equal" is exact)."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import scripted_claude
from fixtures.cli_support import cli_env, normalize, run_cli, write_loop

LOOP = """\
name: spend
initial: a
states:
  a:
    action: /ll:a
    next: b
  b:
    action: /ll:b
    next: c
  c:
    action: /ll:c
    next: done
  done:
    terminal: true
"""


def test_spending_exactly_the_budget_ends_the_run_before_the_next_state(tmp_path: Path) -> None:
    write_loop(tmp_path, "spend", LOOP)
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(scripted_claude.install(tmp_path / "fake", [{"cost": 0.25}]))

    ended = run_cli(tmp_path, "run", "spend", "--max-cost", "0.5", env=env)

    assert ended.returncode == 8, ended.stdout + ended.stderr
    assert len(scripted_claude.calls(tmp_path / "fake")) == 2  # `c` never ran
    first = ended.stderr.splitlines()[0]
    assert normalize(first) == (
        "Loop stopped: c (2 iterations, Ns, $C, N tokens) - budget reached: spent $C of $C"
    )
    assert first.endswith(" - budget reached: spent $0.5000 of $0.5000")
    state = json.loads((tmp_path / ".loops/.running/spend.state.json").read_text())
    assert (state["status"], state["current_state"]) == ("budget_exhausted", "c")
    assert state["spending"]["cost_usd"] == 0.5


def test_spending_just_under_the_budget_goes_on(tmp_path: Path) -> None:
    write_loop(tmp_path, "spend", LOOP)
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(scripted_claude.install(tmp_path / "fake", [{"cost": 0.25}]))

    done = run_cli(tmp_path, "run", "spend", "--max-cost", "0.50001", env=env)

    assert done.returncode == 0, done.stdout + done.stderr  # the terminal state was reached
    assert len(scripted_claude.calls(tmp_path / "fake")) == 3  # 0.5 < 0.75001: `c` ran
