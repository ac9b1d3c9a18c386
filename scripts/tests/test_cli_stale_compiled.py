"""A compiled `x.fsm.yaml` older than its source `x.yaml` (issue 11, item 7).

The resolver keeps the reference's order (`.loops/<name>.fsm.yaml` wins), so the stale
compiled file is what runs; a note on stderr says so and how to recompile.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop

GOAL = 'name: goal-demo\nparadigm: goal\ngoal: green\ntools:\n  - "true"\n  - "true"\n'
NOTE = (
    "note: using .loops/goal-demo.fsm.yaml; .loops/goal-demo.yaml is newer "
    "(recompile with: ll-loop compile .loops/goal-demo.yaml)\n"
)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _compiled_then_source_edited(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    source = write_loop(tmp_path, "goal-demo", GOAL)
    assert cli_in_process(capsys, "compile", ".loops/goal-demo.yaml")[0] == 0
    compiled = tmp_path / ".loops" / "goal-demo.fsm.yaml"
    stamp = compiled.stat().st_mtime_ns
    source.write_text(GOAL.replace("green", "greener"), encoding="utf-8")
    os.utime(source, ns=(stamp + 10**9, stamp + 10**9))
    return compiled


def test_validate_and_run_say_the_compiled_file_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _compiled_then_source_edited(tmp_path, capsys)

    code, out, err = cli_in_process(capsys, "validate", "goal-demo")
    assert (code, err) == (0, NOTE)
    assert out.startswith("[T] goal-demo is valid\n")

    code, _out, err = cli_in_process(capsys, "run", "goal-demo", "--dry-run")
    assert (code, err) == (0, NOTE)


def test_the_compiled_file_still_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Reference order: `.loops/<name>.fsm.yaml` is found before `.loops/<name>.yaml`."""
    compiled = _compiled_then_source_edited(tmp_path, capsys)
    compiled.write_text(compiled.read_text().replace("goal-demo", "from-compiled", 1))
    os.utime(compiled, ns=(1, 1))  # still older than the source

    code, _out, err = cli_in_process(capsys, "validate", "goal-demo")
    assert code == 0
    # The note first; then validate's own warning that the name differs (on stderr, as
    # every warning is), which shows the compiled file is the one that was read.
    assert err.startswith(NOTE)
    assert "kept under 'from-compiled'" in err.removeprefix(NOTE)


def test_no_note_when_the_compiled_file_is_newer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    compiled = _compiled_then_source_edited(tmp_path, capsys)
    later = (tmp_path / ".loops" / "goal-demo.yaml").stat().st_mtime_ns + 10**9
    os.utime(compiled, ns=(later, later))

    code, _out, err = cli_in_process(capsys, "validate", "goal-demo")
    assert (code, err) == (0, "")
