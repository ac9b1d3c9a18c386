"""After an `on_stall` recovery that changed files, the next stall of the same state is
found as soon as it repeats (issue 29 item 4): the round through the recovery state is
neither compared nor chained into the stall streak, so two identical endings after it
are a stall again at once, not rounds later. Real `ll-loop` in `tmp_path`; the recovery
changes a file under `progress_paths` (the work-tree fingerprint the guard compares)."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.cli_support import normalize, run_cli, write_loop

# `check` fails the same way every time. `recover` changes a watched file the first time
# only: a new streak starts after it, and the second recovery changes nothing.
LOOP = """\
name: stuck
initial: check
max_iterations: 30
stall_threshold: 2
on_stall: recover
progress_paths: [out/*]
states:
  check:
    action: "echo same; exit 1"
    on_success: done
    on_failure: check
  recover:
    action: "mkdir -p out; [ -f out/once ] || echo changed > out/once"
    next: check
  done:
    terminal: true
"""


def _entered(root: Path) -> list[str]:
    text = (root / ".loops/.running/stuck.events.jsonl").read_text()
    events = [json.loads(line) for line in text.splitlines()]
    return [e["state"] for e in events if e["event"] == "state_enter"]


def test_a_stall_after_a_recovery_that_changed_files_is_found_at_the_second_repeat(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "stuck", LOOP)

    stalled = run_cli(tmp_path, "run", "stuck")

    assert stalled.returncode == 5, stalled.stdout + stalled.stderr
    # Two identical endings: recover (files change); two more: recover (nothing changes);
    # the next identical ending is the same streak (3 in a row): the run stalls.
    assert _entered(tmp_path) == [
        "check", "check", "recover", "check", "check", "recover", "check"
    ]  # fmt: skip
    assert normalize(stalled.stderr).splitlines()[0] == (
        "Loop stalled: check (7 iterations, Ns) - state 'check' ended with verdict "
        "'failure' and the same output 3 times in a row; it said:"
    )
