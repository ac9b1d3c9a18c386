"""Budgets that route (issue 26 item 1; docs/budgets.md): the loop's `on_budget` wrap-up,
`max_tokens` / `--max-tokens`, a state's own budget and its `on_budget` route, sub-loop
spending counted by the parent, and the checks `validate` makes.

Real `ll-loop` processes in `tmp_path` with the scripted stream-json `claude`
(`fixtures/scripted_claude`: each call costs what its step says and reports 100 input and
20 output tokens, so 120 tokens per call).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures import scripted_claude
from fixtures.cli_support import cli_env, run_cli, write_loop

SPEND = """\
name: spend
initial: a
{head}max_cost_usd: 0.5
on_budget: wrap
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
  wrap:
    action: echo wrapped >> wrap.txt
    next: done
  done:
    terminal: true
"""

TOKENS = """\
name: tokens
initial: a
max_tokens: 200
states:
  a:
    action: /ll:a
    next: b
  b:
    action: /ll:b
    next: c
  c:
    action: /ll:c
    next: d
  d:
    action: /ll:d
    next: done
  done:
    terminal: true
"""

STATE_BUDGET = """\
name: polish
initial: work
states:
  work:
    action: /ll:work
    max_cost_usd: 0.5
    on_budget: hand_off
    next: work
  hand_off:
    action: echo handed off >> handoff.txt
    next: done
  done:
    terminal: true
"""


def _env(root: Path, steps: list[dict[str, Any]] | None = None) -> dict[str, str]:
    env = cli_env(root)
    fake = scripted_claude.install(root / "fake", steps or [{"cost": 0.25}])
    env["LL_CLAUDE_BIN"] = str(fake)
    return env


def _events(root: Path, name: str) -> list[dict[str, Any]]:
    path = root / ".loops/.running" / f"{name}.events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _state(root: Path, name: str) -> dict[str, Any]:
    path = root / ".loops/.running" / f"{name}.state.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _path(events: list[dict[str, Any]]) -> list[str]:
    """The states entered, in order."""
    return [event["state"] for event in events if event["event"] == "state_enter"]


def _calls(root: Path) -> int:
    return len(scripted_claude.calls(root / "fake"))


# --- the loop's budget and its wrap-up ------------------------------------------------------


def _assert_wrapped_up_once(root: Path) -> None:
    events = _events(root, "spend")
    assert _path(events) == ["a", "b", "wrap"]
    assert (root / "wrap.txt").read_text() == "wrapped\n"
    wrap_up = [event for event in events if event["event"] == "budget_wrap_up"]
    assert [(e["wrap_up_state"], e["cost_usd"], e["max_cost_usd"]) for e in wrap_up] == [
        ("wrap", 0.5, 0.5)
    ]
    back = [event for event in events if event.get("reason") == "budget_exhausted"]
    assert [(e["from"], e["to"]) for e in back] == [("done", "c")]
    assert events[-1]["terminated_by"] == "budget_exhausted"
    state = _state(root, "spend")
    assert (state["status"], state["current_state"]) == ("budget_exhausted", "c")


def test_loop_budget_with_on_budget_runs_the_wrap_up_once_then_exits_8(tmp_path: Path) -> None:
    """A legacy loop: the wrap-up runs once (its `next: done` is not taken), exit 8."""
    write_loop(tmp_path, "spend", SPEND.format(head=""))
    env = _env(tmp_path)

    ended = run_cli(tmp_path, "run", "spend", env=env)

    assert ended.returncode == 8, ended.stdout + ended.stderr
    assert _calls(tmp_path) == 2  # `c` never ran
    _assert_wrapped_up_once(tmp_path)
    assert ended.stderr.splitlines()[0].endswith(" - budget reached: spent $0.5000 of $0.5000")


def test_loop_budget_wrap_up_in_the_head_dialect(tmp_path: Path) -> None:
    """The same in a HEAD file (`max_steps` makes it HEAD): same wrap-up, same exit."""
    write_loop(tmp_path, "spend", SPEND.format(head="max_steps: 20\n"))
    env = _env(tmp_path)

    ended = run_cli(tmp_path, "run", "spend", env=env)

    assert ended.returncode == 8, ended.stdout + ended.stderr
    assert _calls(tmp_path) == 2
    _assert_wrapped_up_once(tmp_path)


def test_resume_over_budget_does_not_wrap_up_again_but_a_larger_budget_goes_on(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "spend", SPEND.format(head=""))
    env = _env(tmp_path)
    assert run_cli(tmp_path, "run", "spend", env=env).returncode == 8

    again = run_cli(tmp_path, "resume", "spend", env=env)

    assert again.returncode == 8, again.stdout + again.stderr
    assert (tmp_path / "wrap.txt").read_text() == "wrapped\n"  # not a second time
    assert _calls(tmp_path) == 2

    more = run_cli(tmp_path, "resume", "spend", "--max-cost", "1", env=env)

    assert more.returncode == 0, more.stdout + more.stderr
    assert _calls(tmp_path) == 3  # `c` ran, then `done`
    assert _state(tmp_path, "spend")["status"] == "completed"


def test_without_on_budget_the_budget_stops_the_run_as_before(tmp_path: Path) -> None:
    write_loop(tmp_path, "spend", SPEND.format(head="").replace("on_budget: wrap\n", ""))
    env = _env(tmp_path)

    ended = run_cli(tmp_path, "run", "spend", env=env)

    assert ended.returncode == 8
    assert _path(_events(tmp_path, "spend")) == ["a", "b"]
    assert not (tmp_path / "wrap.txt").exists()
    assert "wrapped_up" not in _state(tmp_path, "spend")["spending"]


# --- max_tokens ------------------------------------------------------------------------------


def test_max_tokens_stops_after_the_crossing_action(tmp_path: Path) -> None:
    """120 tokens per call: 120 < 200 goes on, 240 >= 200 stops before `c`."""
    write_loop(tmp_path, "tokens", TOKENS)
    env = _env(tmp_path, [{"cost": 0.0}])

    ended = run_cli(tmp_path, "run", "tokens", env=env)

    assert ended.returncode == 8, ended.stdout + ended.stderr
    assert _calls(tmp_path) == 2
    assert _path(_events(tmp_path, "tokens")) == ["a", "b"]
    assert ended.stderr.splitlines()[0].endswith(
        " - token budget reached: spent 240 tokens of 200 tokens"
    )
    assert ended.stderr.splitlines()[1] == (
        "Resume with a higher budget: ll-loop resume tokens --max-tokens N"
    )
    state = _state(tmp_path, "tokens")
    assert (state["status"], state["current_state"]) == ("budget_exhausted", "c")


def test_max_tokens_flag_is_kept_on_resume_and_a_larger_value_continues(tmp_path: Path) -> None:
    write_loop(tmp_path, "tokens", TOKENS.replace("max_tokens: 200\n", ""))
    env = _env(tmp_path, [{"cost": 0.0}])

    first = run_cli(tmp_path, "run", "tokens", "--max-tokens", "100", env=env)

    assert first.returncode == 8, first.stdout + first.stderr
    assert _calls(tmp_path) == 1
    assert _state(tmp_path, "tokens")["max_tokens"] == 100
    status = run_cli(tmp_path, "status", "tokens", env=env).stdout.splitlines()
    assert "Next: ll-loop resume tokens --max-tokens <a higher budget>" in status
    assert status[-1] == "Token budget: 100 tokens (--max-tokens)"

    kept = run_cli(tmp_path, "resume", "tokens", env=env)

    assert kept.returncode == 8, kept.stdout + kept.stderr
    assert _calls(tmp_path) == 1  # still 120 of 100: nothing ran

    larger = run_cli(tmp_path, "resume", "tokens", "--max-tokens", "250", env=env)

    assert larger.returncode == 8, larger.stdout + larger.stderr
    assert _calls(tmp_path) == 3  # 120 and 240 < 250 go on; 360 after `c` stops the run
    assert _path(_events(tmp_path, "tokens"))[-2:] == ["b", "c"]
    assert _state(tmp_path, "tokens")["max_tokens"] == 250


# --- a state's own budget --------------------------------------------------------------------


def test_state_budget_routes_on_budget_after_the_visit_that_crosses_it(tmp_path: Path) -> None:
    """`work` costs $0.25 a visit: its second visit reaches $0.50 and routes `on_budget`
    instead of `next: work`."""
    write_loop(tmp_path, "polish", STATE_BUDGET)
    env = _env(tmp_path)

    done = run_cli(tmp_path, "run", "polish", env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert _calls(tmp_path) == 2
    events = _events(tmp_path, "polish")
    assert _path(events) == ["work", "work", "hand_off"]  # (a terminal is not entered)
    spent = [e for e in events if e["event"] == "state_budget_exhausted"]
    assert [(e["state"], e["cost_usd"], e["tokens"], e["max_cost_usd"]) for e in spent] == [
        ("work", 0.5, 240, 0.5)
    ]
    routes = [(e["from"], e["to"], e.get("reason")) for e in events if e["event"] == "route"]
    assert routes == [
        ("work", "work", None),
        ("work", "hand_off", "state_budget"),
        ("hand_off", "done", None),
    ]
    assert (tmp_path / "handoff.txt").read_text() == "handed off\n"
    spending = _state(tmp_path, "polish")["spending"]
    assert spending["states"] == {"work": {"cost_usd": 0.5, "tokens": 240}}


def test_a_state_over_its_budget_goes_to_on_budget_without_running(tmp_path: Path) -> None:
    """HEAD file; `max_tokens` on the state: one visit (120) reaches 100; entering it again
    (from `check`) goes straight on, counted as a step, nothing run."""
    loop = """\
name: again
initial: work
max_steps: 10
states:
  work:
    action: /ll:work
    max_tokens: 100
    on_budget: check
    next: check
  check:
    action: "test -f second || (touch second; exit 1)"
    on_yes: done
    on_no: work
  done:
    terminal: true
"""
    write_loop(tmp_path, "again", loop)
    env = _env(tmp_path, [{"cost": 0.0}])

    done = run_cli(tmp_path, "run", "again", env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert _calls(tmp_path) == 1
    events = _events(tmp_path, "again")
    assert _path(events) == ["work", "check", "work", "check"]
    routes = [(e["from"], e["to"], e.get("reason")) for e in events if e["event"] == "route"]
    assert routes[0] == ("work", "check", "state_budget")
    assert routes[2] == ("work", "check", "state_budget")
    assert len([e for e in events if e["event"] == "state_budget_exhausted"]) == 2


# --- sub-loops count toward the parent's budgets ---------------------------------------------


def test_sub_loop_spending_counts_toward_the_parent_token_budget(tmp_path: Path) -> None:
    parent = """\
name: parent
initial: inner
max_tokens: 200
on_budget: wrap
states:
  inner:
    loop: child
    on_yes: done
    on_no: done
  wrap:
    action: echo wrapped >> wrap.txt
    next: done
  done:
    terminal: true
"""
    child = """\
name: child
initial: one
states:
  one:
    action: /ll:one
    next: two
  two:
    action: /ll:two
    next: three
  three:
    action: /ll:three
    next: done
  done:
    terminal: true
"""
    write_loop(tmp_path, "parent", parent)
    write_loop(tmp_path, "child", child)
    env = _env(tmp_path, [{"cost": 0.0}])

    ended = run_cli(tmp_path, "run", "parent", env=env)

    assert ended.returncode == 8, ended.stdout + ended.stderr
    assert _calls(tmp_path) == 2  # the child stopped at the run's budget before `three`
    assert (tmp_path / "wrap.txt").read_text() == "wrapped\n"
    state = _state(tmp_path, "parent")
    assert state["status"] == "budget_exhausted"
    assert state["spending"]["tokens"]["input"] + state["spending"]["tokens"]["output"] == 240


# --- validate ---------------------------------------------------------------------------------


def test_validate_refuses_a_state_budget_without_on_budget(tmp_path: Path) -> None:
    write_loop(tmp_path, "polish", STATE_BUDGET.replace("    on_budget: hand_off\n", ""))

    checked = run_cli(tmp_path, "validate", "polish")

    assert checked.returncode == 1
    assert (
        "states.work.on_budget: required with max_cost_usd: the state to go to when this "
        "state's budget is spent"
    ) in checked.stdout + checked.stderr
    assert "Traceback" not in checked.stderr


def test_validate_refuses_an_on_budget_naming_no_state(tmp_path: Path) -> None:
    write_loop(
        tmp_path, "spend", SPEND.format(head="").replace("on_budget: wrap", "on_budget: wrpa")
    )

    checked = run_cli(tmp_path, "validate", "spend")

    assert checked.returncode == 1
    assert (
        "on_budget: References unknown state 'wrpa' (states are: a, b, c, wrap, done)"
    ) in checked.stdout + checked.stderr


def test_validate_accepts_budget_keys_and_the_wrap_up_is_reachable(tmp_path: Path) -> None:
    write_loop(tmp_path, "spend", SPEND.format(head=""))

    checked = run_cli(tmp_path, "validate", "spend")

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "not reachable" not in checked.stdout + checked.stderr


def test_a_wrap_up_that_runs_a_sub_loop_is_not_held_to_the_spent_budget(tmp_path: Path) -> None:
    """The wrap-up is a `loop:` state: its child runs (it is not given the $0 the run's
    spent budget has left), then the run ends `budget_exhausted`."""
    parent = SPEND.format(head="").replace(
        "  wrap:\n    action: echo wrapped >> wrap.txt\n    next: done\n",
        "  wrap:\n    loop: summary\n    on_yes: done\n    on_no: done\n",
    )
    summary = """\
name: summary
initial: write
states:
  write:
    action: /ll:summarise
    next: note
  note:
    action: echo summarised >> wrap.txt
    next: done
  done:
    terminal: true
"""
    write_loop(tmp_path, "spend", parent)
    write_loop(tmp_path, "summary", summary)
    env = _env(tmp_path)

    ended = run_cli(tmp_path, "run", "spend", env=env)

    assert ended.returncode == 8, ended.stdout + ended.stderr
    assert _calls(tmp_path) == 3  # a, b, and the summary's own claude call
    assert (tmp_path / "wrap.txt").read_text() == "summarised\n"
    state = _state(tmp_path, "spend")
    assert (state["status"], state["current_state"]) == ("budget_exhausted", "c")
    assert state["spending"]["cost_usd"] == 0.75


def test_a_state_budget_inside_a_sub_loop_goes_on_counting_over_a_handoff(
    tmp_path: Path,
) -> None:
    """The child's `work` ($0.25 a call, budget $0.60) hands off on its second call: the
    run pauses; resumed, `work`'s third call reaches $0.75 and routes `on_budget` (it
    used to count again from $0 after the pause, and ran two calls more)."""
    parent = """\
name: parent
initial: inner
states:
  inner:
    loop: polish
    on_yes: done
    on_no: done
  done:
    terminal: true
"""
    write_loop(tmp_path, "parent", parent)
    write_loop(tmp_path, "polish", STATE_BUDGET.replace("max_cost_usd: 0.5", "max_cost_usd: 0.6"))
    handing_off = {"cost": 0.25, "text": "CONTEXT_HANDOFF: keep polishing"}
    env = _env(tmp_path, [{"cost": 0.25}, handing_off, {"cost": 0.25}])

    paused = run_cli(tmp_path, "run", "parent", env=env)
    assert paused.returncode == 3, paused.stdout + paused.stderr
    (record,) = _state(tmp_path, "parent")["head"]["sub_loops"]
    assert record["spending"] == {"states": {"work": {"cost_usd": 0.5, "tokens": 240}}}

    resumed = run_cli(tmp_path, "resume", "parent", env=env)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _calls(tmp_path) == 3
    assert (tmp_path / "handoff.txt").read_text() == "handed off\n"
    assert _state(tmp_path, "parent")["spending"]["cost_usd"] == 0.75
