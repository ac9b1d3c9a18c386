"""Issue 24 through `ll-loop`: the progress line and `status` name the host of each
action, a failover is shown, and spending is split by host in the summary, `status` and
`status --json`. `codex` and `gemini` are the scripted `fake-agent` (fixtures/fake_host.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop
from fixtures.host_driver import use_fake_hosts

from little_loops.fsm.store.notifier import limit_notification

LOOP = """\
name: pair
initial: a
host: [codex, gemini]
states:
  a: {action: "/work a", next: b}
  b: {action: "/work b", next: done}
  done: {terminal: true}
"""


def test_a_failover_run_shows_its_hosts_and_spending_per_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 items 3 and 5 (spec: agent-hosts.md): progress, summary, status, --json."""
    monkeypatch.chdir(tmp_path)
    far = time.time() + 7200
    script = [
        {"limit": far, "cost": 0},
        {"text": "a done", "cost": 0.02},
        {"text": "b", "cost": 0.03},
    ]
    use_fake_hosts(monkeypatch, tmp_path, script)
    write_loop(tmp_path, "pair", LOOP)

    code, out, err = cli_in_process(capsys, "run", "pair")
    assert (code, err) == (0, "")
    assert out == (
        "Running loop: pair\n"
        "Max iterations: 50\n"
        "\n"
        "[1/50] a -> /work a (on codex)\n"
        "       codex: usage limit\n"
        "       moving a from codex to gemini\n"
        "[1/50] a -> /work a --- Note: this task was started by another agent (co... "
        "(on gemini)\n"
        "       -> b (Ns, $C)\n"
        "[2/50] b -> /work b (on gemini)\n"
        "       -> done (Ns, $C)\n"
        "\n"
        "Loop completed: done (2 iterations, Ns, $C, N tokens (codex $C, gemini $C))\n"
    )

    code, out, _ = cli_in_process(capsys, "status", "pair")
    status = out.splitlines()
    assert "Host: gemini" in status
    limited = [line for line in status if line.startswith("Host limited: codex until ")]
    assert len(limited) == 1 and limited[0].endswith("(codex: usage limit)")
    spent = next(line for line in status if line.startswith("Spent: "))
    assert "; by host: codex $C (" in spent and ", gemini $C (" in spent

    code, out, _ = cli_in_process(capsys, "status", "pair", "--json")
    spending = json.loads(out)["spending"]
    assert spending["hosts"] == {
        "codex": {"cost_usd": 0.0, "tokens": 0},
        "gemini": {"cost_usd": 0.05, "tokens": 20},
    }
    assert spending["cost_usd"] == 0.05  # budgets count every host


def test_a_claude_only_run_keeps_its_spending_record() -> None:
    """Issue 24 item 5: no `hosts` split unless another host than claude ran."""
    from little_loops.fsm.engine.spending import RunSpending

    spent = RunSpending()
    spent.add(0.01, {"input": 5}, host="claude")
    assert spent.to_dict() == {
        "cost_usd": 0.01,
        "tokens": {"input": 5, "output": 0, "cache_read": 0, "cache_creation": 0},
    }


def test_notify_is_told_a_host_switch() -> None:
    """Issue 24 item 3: notify gets `host_switch`."""
    event = {
        "event": "host_switch",
        "state": "a",
        "from": "codex",
        "to": "gemini",
        "message": "codex: usage limit",
    }
    told = limit_notification(event)
    assert told is not None
    assert (told.event, told.status, told.message) == (
        "host_switch",
        "running",
        "a: codex -> gemini (codex: usage limit)",
    )
