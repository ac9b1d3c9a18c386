"""`benchmarks/guards.py --quick` runs end to end and prints every figure (no timing checks)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "guards.py"
NUMBER = r"[+-]?\d+(\.\d+)?"

EXPECTED_LINES = [
    rf"ll-loop guard benchmarks \(quick\): Linux .*, {NUMBER} CPUs, Python 3\.\d+\.\d+, .*",
    r"\(a\) guard work after one state \(median of 3 x 200 calls\)",
    rf"one `bash -c true` from Python \(the cheapest action\) +{NUMBER} ms",
    rf"healthy step \(success: nothing hashed\) +{NUMBER} us  {NUMBER}% of that action",
    rf"failing step, 1 KiB output +{NUMBER} us  {NUMBER}% of that action",
    rf"failing step, 64 KiB output +{NUMBER} us  {NUMBER}% of that action",
    rf"failing step, 1 MiB output +{NUMBER} us  {NUMBER}% of that action",
    r"\(b\) a loop of 40 failing actions, output changing each time \(median of 3\)",
    rf"stall_threshold: 0 \(guard off\) +{NUMBER} s",
    rf"stall_threshold: 3 \(hashing every step, never triggered\) +{NUMBER} s",
    rf"difference per action +{NUMBER} ms  spread of the runs {NUMBER} s",
]


def test_quick_guard_benchmark_prints_every_figure(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    finished = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    lines = [line.strip() for line in finished.stdout.splitlines()]
    assert len(lines) == len(EXPECTED_LINES), finished.stdout
    for line, pattern in zip(lines, EXPECTED_LINES, strict=True):
        assert re.fullmatch(pattern, line), f"{line!r} does not match {pattern!r}"
    assert list(tmp_path.iterdir()) == []  # the benchmark cleaned up after itself
