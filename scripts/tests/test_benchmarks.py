"""`benchmarks/run.py --quick` and `benchmarks/guards.py --quick` run end to end and print
every figure (no timing checks). run.py's (e), the Temporal engine, runs on its own: it
needs the dev server (`temporal`, from the dev extra), skipped locally without it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
NUMBER = r"\d+(\.\d+)?"
SIGNED = r"[+-]?\d+(\.\d+)?"
TARGET = r"target [<=]+ [\d.]+ ?(x|s|MiB): (ok|MISSED)"

# One pattern per printed figure line, in order.
EXPECTED_LINES = [
    rf"ll-loop benchmarks \(quick\): Linux .*, {NUMBER} CPUs, Python 3\.\d+\.\d+, load average .*",
    r"\(a\) a loop of 50 `true` actions \(median of 1\)",
    rf"floor: 50 x bash -c true from Python +{NUMBER} s",
    rf"ll-loop run +{NUMBER} s",
    rf"per action: floor +{NUMBER} ms",
    rf"per action: ll-loop +{NUMBER} ms",
    rf"ratio ll-loop / floor +{NUMBER}x  {TARGET}",
    r"per action, layer by layer, in one process:",
    rf"subprocess.run \(the floor\) +{NUMBER} ms",
    rf"\+ the runner \(own session, log file, select\) +{NUMBER} ms",
    rf"\+ the executor \(states, events, no files\) +{NUMBER} ms",
    rf"\+ state, events, logs on disk, no fsync +{NUMBER} ms",
    rf"\+ fsync of each state write \(as shipped\) +{NUMBER} ms",
    r"\(b\) one action printing 5 MB, CONTEXT_HANDOFF on its last line",
    rf"cat to a file +{NUMBER} s",
    rf"ll-loop run +{NUMBER} s",
    rf"ratio ll-loop / cat +{NUMBER}x  {TARGET}",
    rf"ll-loop fixed cost \(a loop of one `true`\) +{NUMBER} s",
    rf"ratio without the fixed cost +{NUMBER}x",
    rf"peak RSS of ll-loop +{NUMBER} MiB  {TARGET}",
    rf"state file +{NUMBER} B  target < 1 MiB: ok",
    r"action log \(whole stdout\) +5\.0 MB  1-work\.log",
    r"handoff marker found +yes  status awaiting_continuation",
    r"\(c\) history --tail 10 over 20000 events, \d+ MB \(median of 3\)",
    rf"ll-loop history --tail 10 +{NUMBER} s  {TARGET}",
    r"lines printed +10",
    r"\(d\) start-up \(median of 5\)",
    rf"python -c pass +{NUMBER} s",
    rf"ll-loop --help +{NUMBER} s  {TARGET}",
]

TEMPORAL_EXPECTED_LINES = [
    EXPECTED_LINES[0],
    r"\(e\) the Temporal engine, a loop of 20 `true` actions \(median of 1\)",
    r"in one process \(no CLI start-up\), net of a loop of one action:",
    rf"local: a loop of one `true` +{NUMBER} s",
    rf"temporal: a loop of one `true` +{NUMBER} s",
    rf"per action: local \(executor, state files\) +{NUMBER} ms",
    rf"per action: temporal \(workflow, activity\) +{NUMBER} ms",
    rf"ratio temporal / local, per action +({NUMBER}|inf)x",
    r"through the CLI \(`ll-loop run`; one `ll-loop worker`\), net of a loop of one:",
    rf"local: a loop of one `true` +{NUMBER} s",
    rf"temporal: a loop of one `true` +{NUMBER} s",
    rf"per action: local +{NUMBER} ms",
    rf"per action: temporal +{NUMBER} ms",
    rf"ratio temporal / local, per action +({NUMBER}|inf)x",
]


GUARD_EXPECTED_LINES = [
    rf"ll-loop guard benchmarks \(quick\): Linux .*, {SIGNED} CPUs, Python 3\.\d+\.\d+, .*",
    r"\(a\) guard work after one state \(median of 3 x 200 calls\)",
    rf"one `bash -c true` from Python \(the cheapest action\) +{SIGNED} ms",
    rf"healthy step \(success: nothing hashed\) +{SIGNED} us  {SIGNED}% of that action",
    rf"failing step, 1 KiB output +{SIGNED} us  {SIGNED}% of that action",
    rf"failing step, 64 KiB output +{SIGNED} us  {SIGNED}% of that action",
    rf"failing step, 1 MiB output +{SIGNED} us  {SIGNED}% of that action",
    r"\(b\) a loop of 40 failing actions, output changing each time \(median of 3\)",
    rf"stall_threshold: 0 \(guard off\) +{SIGNED} s",
    rf"stall_threshold: 3 \(hashing every step, never triggered\) +{SIGNED} s",
    rf"difference per action +{SIGNED} ms  spread of the runs {SIGNED} s",
    r"\(c\) workspace fingerprint, git repository of 1000 files \(median of 12\)",
    rf"one fingerprint \(5 modified, 5 untracked\) +{SIGNED} ms  {SIGNED}x that action",
]


@pytest.mark.parametrize(
    ("script", "expected_lines"),
    [("run.py", EXPECTED_LINES), ("guards.py", GUARD_EXPECTED_LINES)],
)
@pytest.mark.slow
def test_quick_benchmark_prints_every_figure(
    tmp_path: Path, script: str, expected_lines: list[str]
) -> None:
    options = ["--only", "abcd"] if script == "run.py" else []
    _check_quick_run(tmp_path, [script, *options], expected_lines)


@pytest.mark.slow
def test_quick_temporal_benchmark_prints_every_figure(
    tmp_path: Path, temporal_cli_path: Path
) -> None:
    _check_quick_run(tmp_path, ["run.py", "--only", "e"], TEMPORAL_EXPECTED_LINES)


def _check_quick_run(tmp_path: Path, argv: list[str], expected_lines: list[str]) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    script, *options = argv
    finished = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick", *options],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    lines = [line.strip() for line in finished.stdout.splitlines()]
    assert len(lines) == len(expected_lines), finished.stdout
    for line, pattern in zip(lines, expected_lines, strict=True):
        assert re.fullmatch(pattern, line), f"{line!r} does not match {pattern!r}"
    assert list(tmp_path.iterdir()) == []  # the benchmark cleaned up after itself
