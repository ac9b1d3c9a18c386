"""Issue 24 item 2 in the legacy dialect: a state's own `host:` wins over the loop's.

Our additions work in both dialects and never decide one (decisions.md, last section):
a legacy state that writes `host:` is read as a `HostedStateConfig`, its action runs on
the host it names, the reference's "unknown key" message is unchanged, and the file
stays legacy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.host_driver import JumpingClock, run_core, use_fake_hosts

from little_loops.fsm.errors import LoopValidationError
from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.loading.yaml_text import dump_yaml
from little_loops.fsm.model.hosted_state import HostedStateConfig
from little_loops.fsm.schema import FSMLoop, StateConfig

REFERENCE_KEYS = (
    "action, evaluate, route, on_success, on_failure, on_error, next, terminal, capture, "
    "timeout, on_maintain, action_type, max_visits, on_max_visits"
)


def _loop(state_host: Any = None, loop_host: Any = None) -> dict[str, Any]:
    first: dict[str, Any] = {"action": "/ll:go", "next": "second"}
    if state_host is not None:
        first["host"] = state_host
    data: dict[str, Any] = {
        "name": "l",
        "initial": "first",
        "states": {
            "first": first,
            "second": {"action": "/ll:check", "next": "done"},
            "done": {"terminal": True},
        },
    }
    if loop_host is not None:
        data["host"] = loop_host
    return data


def _load(tmp_path: Path, data: dict[str, Any]) -> FSMLoop:
    path = tmp_path / "l.yaml"
    path.write_text(dump_yaml(data), encoding="utf-8")
    return load_loop(path)


def test_a_legacy_state_reads_its_host_and_the_file_stays_legacy(tmp_path: Path) -> None:
    fsm = _load(tmp_path, _loop(state_host=["codex", "claude-code"]))
    assert type(fsm) is FSMLoop and fsm.dialect == "legacy"
    first = fsm.states["first"]
    assert isinstance(first, HostedStateConfig) and first.host == ["codex", "claude-code"]
    assert first.to_dict() == {
        "action": "/ll:go",
        "next": "second",
        "host": ["codex", "claude-code"],
    }
    assert type(fsm.states["second"]) is StateConfig  # a state without `host:` is as before


def test_a_legacy_states_unknown_host_is_one_line_and_other_keys_keep_the_reference_message(
    tmp_path: Path,
) -> None:
    with pytest.raises(LoopValidationError) as caught:
        _load(tmp_path, _loop(state_host="cursor"))
    assert [f"{e.path}: {e.message}" for e in caught.value.errors] == [
        "states.first.host: unknown host 'cursor' (allowed: claude, codex, gemini, opencode, qwen)"
    ]
    data = _loop()
    data["states"]["first"]["hots"] = "codex"
    with pytest.raises(LoopValidationError) as caught:
        _load(tmp_path, data)
    assert [f"{e.path}: {e.message}" for e in caught.value.errors] == [
        f"states.first.hots: unknown key 'hots' (allowed: {REFERENCE_KEYS})"
    ]


def test_the_states_host_wins_over_the_loops_and_the_next_state_takes_the_loops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_hosts(monkeypatch, tmp_path, [{"text": "done"}])
    fsm = _load(tmp_path, _loop(state_host="gemini", loop_host="codex"))
    result, events, requests = run_core(fsm, tmp_path, JumpingClock())
    assert result.final_state == "done"
    assert [(r.action, r.host) for r in requests] == [("/ll:go", "gemini"), ("/ll:check", "codex")]
    started = [(e["state"], e.get("host")) for e in events if e["event"] == "state_enter"]
    assert started == [("first", None), ("second", None)]
    hosts = [e.get("host") for e in events if e["event"] == "action_start"]
    assert hosts == ["gemini", "codex"]
