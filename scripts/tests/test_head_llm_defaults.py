"""HEAD's `llm` defaults (spec/ll-head-dialect.md §2.1 `llm` row): a HEAD file that does
not write `llm.timeout` judges with 1800 s; a written value (even the legacy default)
stays, through a save and load of the loop (`to_dict`, as Temporal carries it); a legacy
file keeps 30 s. The model stays ours (HEAD's `sonnet` is no API model id)."""

from __future__ import annotations

from pathlib import Path

from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import DEFAULT_LLM_MODEL, FSMLoop

STATES = "states:\n  work:\n    action: 'true'\n    next: done\n  done:\n    terminal: true\n"


def loaded(tmp_path: Path, head_keys: str) -> FSMLoop:
    path = tmp_path / "x.yaml"
    path.write_text(f"name: x\ninitial: work\n{head_keys}{STATES}")
    return load_loop(path)


def test_s2_1_a_head_file_without_llm_timeout_gets_1800_seconds(tmp_path: Path) -> None:
    loop = loaded(tmp_path, "category: demo\n")
    assert isinstance(loop, HeadLoop)
    assert (loop.llm.timeout, loop.llm.model) == (1800, DEFAULT_LLM_MODEL)
    assert "llm" not in loop.to_dict()


def test_s2_1_a_written_llm_timeout_stays_even_the_legacy_default(tmp_path: Path) -> None:
    loop = loaded(tmp_path, "category: demo\nllm:\n  timeout: 30\n  effort: high\n")
    assert loop.llm.timeout == 30
    again = HeadLoop.from_dict(loop.to_dict())
    assert (again.llm.timeout, loop.to_dict()["llm"]) == (30, {"timeout": 30, "effort": "high"})


def test_s1_a_legacy_file_keeps_its_30_second_judge(tmp_path: Path) -> None:
    loop = loaded(tmp_path, "")
    assert not isinstance(loop, HeadLoop)
    assert loop.llm.timeout == 30
