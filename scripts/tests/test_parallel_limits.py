"""Limits of a `parallel:` fan-out (issue 25 item 7): the items spend against the run's
budget together (three items of $0.25 each, a scripted stream-json `claude`, leave the
run at $0.75, so `--max-cost 0.7` stops it before the state after the fan-out, exit 8),
and the scope lock is the run's, held once."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures import scripted_claude
from fixtures.cli_support import cli_env, run_cli, write_loop

CHILD = """\
name: spend-one
initial: work
states:
  work:
    action: /ll:work
    next: done
  done:
    terminal: true
"""

FAN = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nb\\nc"
      loop: spend-one
      max_workers: 3
    on_success: after
    on_partial: after
    on_failure: after
  after:
    action: /ll:after
    next: done
  done:
    terminal: true
"""


def test_issue25_item7_the_items_spending_counts_against_the_run_budget(tmp_path: Path) -> None:
    write_loop(tmp_path, "spend-one", CHILD)
    write_loop(tmp_path, "fan", FAN)
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(scripted_claude.install(tmp_path / "fake", [{"cost": 0.25}]))

    ended = run_cli(tmp_path, "run", "fan", "--max-cost", "0.7", env=env)

    assert ended.returncode == 8, ended.stdout + ended.stderr
    assert len(scripted_claude.calls(tmp_path / "fake")) == 3  # `after` never ran
    assert ended.stderr.splitlines()[0].endswith(" - budget reached: spent $0.7500 of $0.7000")
    state = json.loads((tmp_path / ".loops/.running/fan.state.json").read_text())
    assert (state["status"], state["current_state"]) == ("budget_exhausted", "after")
    assert state["spending"]["cost_usd"] == 0.75
    results = json.loads(state["captured"]["go"]["results"])
    assert [entry["verdict"] for entry in results] == ["yes", "yes", "yes"]


SCOPED_CHILD = """\
name: scoped-one
initial: work
scope: [shared]
states:
  work:
    action: "test -d shared && echo ${context.item} >> shared/marks"
    next: done
  done:
    terminal: true
"""

SCOPED_FAN = """\
name: scoped
initial: go
scope: [shared]
states:
  go:
    parallel:
      items: "a\\nb"
      loop: scoped-one
      max_workers: 2
    on_success: done
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_issue25_item7_the_scope_lock_is_held_once_by_the_parent(tmp_path: Path) -> None:
    """Items whose child loop declares the parent's scope run: they are part of the run,
    which holds the lock; they take none of their own."""
    write_loop(tmp_path, "scoped-one", SCOPED_CHILD)
    write_loop(tmp_path, "scoped", SCOPED_FAN)
    (tmp_path / "shared").mkdir()

    ended = run_cli(tmp_path, "run", "scoped", env=cli_env(tmp_path))

    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert sorted((tmp_path / "shared" / "marks").read_text().split()) == ["a", "b"]
