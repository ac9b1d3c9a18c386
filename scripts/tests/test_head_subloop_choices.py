"""The run's `--no-llm` / `--llm-model` reach its sub-loops (spec/ll-head-dialect.md §4.6:
"the run's `--model`/`--llm-model`/`--effort`/`--no-llm` choices" are inherited by a
child), through a real `ll-loop run`: a fake `claude` on PATH and a fake Anthropic API on
127.0.0.1 that records what the judge asked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropicServer, Reply, tool_use_message
from fixtures.cli_support import cli_env, cli_in_process, install_fake_claude, run_cli, write_loop

TERMINALS = """\
  done:
    terminal: true
  failed:
    terminal: true
"""

PARENT = (
    """\
name: parent
description: Runs the writer.
initial: write
states:
  write:
    loop: writer
    on_yes: done
    on_no: failed
"""
    + TERMINALS
)

PROMPT_CHILD = (
    """\
name: writer
description: Drafts with claude; judged by the LLM unless the run says --no-llm.
initial: draft
states:
  draft:
    action: "Draft the notes"
    action_type: prompt
    on_yes: done
    on_no: failed
"""
    + TERMINALS
)

JUDGED_CHILD = (
    """\
name: writer
description: A shell action judged by the LLM.
initial: draft
llm:
  model: claude-own-model
states:
  draft:
    action: echo drafted
    evaluate:
      type: llm_structured
    on_yes: done
    on_no: failed
"""
    + TERMINALS
)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicServer]:
    """A judge API that says `yes` to anything (so a judged child succeeds)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    answer = {"verdict": "no", "confidence": 0.9, "reason": "judged", "evidence": "it"}
    with FakeAnthropicServer(default_reply=Reply(tool_use_message(answer))) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server


def child_evaluations(root: Path, loop: str) -> list[dict[str, Any]]:
    lines = (root / ".loops/.running" / f"{loop}.events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    return [
        {key: event[key] for key in ("type", "verdict", "depth")}
        for event in events
        if event["event"] == "evaluate" and event.get("depth") == 1
    ]


def test_s4_6_no_llm_of_the_run_reaches_the_child(tmp_path: Path, api: FakeAnthropicServer) -> None:
    """§4.6: with `run --no-llm` the child's prompt state is judged by its exit code
    (fake claude exits 0: `yes`), the judge is never asked, and the parent ends `done`."""
    write_loop(tmp_path, "parent", PARENT)
    write_loop(tmp_path, "writer", PROMPT_CHILD)
    bin_dir = install_fake_claude(tmp_path)
    result = run_cli(
        tmp_path, "run", "parent", "--no-llm", env=cli_env(tmp_path, extra_path=bin_dir)
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert api.messages_requests() == []
    assert child_evaluations(tmp_path, "parent") == [
        {"type": "default", "verdict": "yes", "depth": 1}
    ]
    saved = json.loads((tmp_path / ".loops/.running/parent.state.json").read_text())
    assert (saved["status"], saved["current_state"]) == ("completed", "done")


def test_s4_6_llm_model_of_the_run_judges_the_child(
    tmp_path: Path,
    api: FakeAnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§4.6: `run --llm-model M` is the model of the child's LLM evaluations too, over
    the child's own `llm.model`."""
    monkeypatch.chdir(tmp_path)
    write_loop(tmp_path, "parent", PARENT)
    write_loop(tmp_path, "writer", JUDGED_CHILD)
    code, _, err = cli_in_process(capsys, "run", "parent", "--llm-model", "claude-chosen")
    assert [request.body["model"] for request in api.messages_requests()] == ["claude-chosen"]
    assert child_evaluations(tmp_path, "parent") == [
        {"type": "llm_structured", "verdict": "no", "depth": 1}
    ]
    assert (code, err) == (
        1,
        "Loop failed: failed (1 iteration, Ns, $C, N tokens)"
        " - ended at failure terminal 'failed'\n",
    )


def test_s4_6_the_choices_travel_in_a_temporal_run_input() -> None:
    """On Temporal the workflow builds the core from `RunInput`: the choices must come
    through Temporal's converter as the record the core applies to each child."""
    import asyncio

    from temporalio.converter import DataConverter

    from little_loops.fsm.model.run_choices import RunChoices
    from little_loops.fsm.temporal.payloads import RunInput

    choices = RunChoices(no_llm=True, llm_model="claude-chosen")
    given = RunInput(loop={}, checkout="co", loops_dir=".loops", task_queue="q", host="h")
    given.choices = choices
    converter = DataConverter.default
    payloads = asyncio.run(converter.encode([given]))
    (back,) = asyncio.run(converter.decode(payloads, [RunInput]))
    assert back.choices == choices
