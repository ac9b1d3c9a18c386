"""The note in front of an output cut for the state file counts bytes, all of them
(issue 11 item 16): a 2 MB output that the runner already cut to its last 1 MiB says
2 MB minus what is kept, not "1 MiB characters"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop

from little_loops.fsm.persistence import STATE_OUTPUT_CAP, cap_output

BIG = """\
name: big
initial: talk
states:
  talk:
    action: "head -c 2000000 /dev/zero | tr '\\\\0' x"
    capture: talk
    next: done
  done:
    terminal: true
"""


def test_the_state_files_note_counts_every_byte_not_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_loop(tmp_path, "big", BIG)
    assert cli_in_process(capsys, "run", "big")[0] == 0
    state = json.loads(Path(".loops/.running/big.state.json").read_text())
    kept = state["captured"]["talk"]["output"]
    log = ".loops/.running/big.logs/1-talk.log"
    dropped = 2_000_000 - STATE_OUTPUT_CAP
    assert kept == f"[... {dropped} bytes truncated; full output in {log} ...]\n" + "x" * (
        STATE_OUTPUT_CAP
    )


def test_the_cap_is_in_bytes_and_never_splits_a_character() -> None:
    text = "é" * 10  # 20 bytes
    assert cap_output(text, cap=5) == "[... 16 bytes truncated ...]\néé"
    assert cap_output(text, cap=20) == text
