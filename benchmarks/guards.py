"""What loop guards cost when they do not trigger: `python benchmarks/guards.py [--quick]`.

(a) The guards' work after one state, in this process (`RunGuards.note_ending`, which
    also keeps errors), next to the cheapest action a loop can run (`bash -c true`
    started from Python): a healthy step (verdict `success`: nothing is hashed), and
    failing steps whose output is 1 KiB, 64 KiB and 1 MiB (a fingerprint is computed;
    outputs over 8 KiB are judged by their first and last 4 KiB).
(b) A loop of N failing actions whose output changes every time, so that the stall guard
    hashes at every step and never triggers, run through `PersistentExecutor` (state
    and event files as `ll-loop run` writes them) with `stall_threshold: 0` (off) and 3
    (the default), interleaved; the difference per action is set against the spread of
    the runs.
(c) The workspace fingerprint (`WorkspaceWatcher.fingerprint`, taken for every failing
    step while the stall guard is on) in a generated git repository of 10,000 tracked
    files in 100 folders, 5 of them modified and 5 untracked files added (1,000 files
    with --quick), next to the same `bash -c true` action.

Everything happens in a temporary directory, removed at the end. Timings are medians.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from little_loops.fsm.engine.run_guards import RunGuards, StepEnding
from little_loops.fsm.persistence import PersistentExecutor
from little_loops.fsm.process.workspace import WorkspaceWatcher
from little_loops.fsm.schema import FSMLoop

KIB = 1024
LINE = "2026-02-17T10:11:12Z tests/test_module.py::test_case_0042 PASSED [ 42%] in 0.12s\n"


def figure(label: str, value: str, note: str = "") -> None:
    print(f"    {label:<52} {value:>10}  {note}".rstrip())


def median_seconds(repeats: int, call: Callable[[], None]) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def loop_definition(actions: int, stall_threshold: int) -> FSMLoop:
    # The output names the iteration, so no two endings are the same: never a stall.
    check = {
        "action": 'echo "attempt ${state.iteration}: 3 tests failing"; exit 1',
        "on_failure": "$current",
        "on_success": "done",
    }
    return FSMLoop.from_dict(
        {
            "name": "guards-bench",
            "initial": "check",
            "max_iterations": actions,
            "stall_threshold": stall_threshold,
            "states": {"check": check, "done": {"terminal": True}},
        }
    )


def bench_step_cost(calls: int, repeats: int) -> float:
    """(a); returns the per-action cost of `bash -c true` in seconds."""
    action = median_seconds(repeats, lambda: subprocess.run(["bash", "-c", "true"], check=True))
    print(f"(a) guard work after one state (median of {repeats} x {calls} calls)")
    figure("one `bash -c true` from Python (the cheapest action)", f"{action * 1000:.2f} ms")
    cases = {
        "healthy step (success: nothing hashed)": ("success", 1 * KIB),
        "failing step, 1 KiB output": ("failure", 1 * KIB),
        "failing step, 64 KiB output": ("failure", 64 * KIB),
        "failing step, 1 MiB output": ("failure", 1024 * KIB),
    }
    for label, (verdict, size) in cases.items():
        output = (LINE * (size // len(LINE) + 1))[:size]
        per_call = _note_ending_cost(verdict, output, calls, repeats)
        share = per_call / action * 100
        figure(label, f"{per_call * 1e6:.1f} us", f"{share:.2f}% of that action")
    return action


def _note_ending_cost(verdict: str, output: str, calls: int, repeats: int) -> float:
    fsm = loop_definition(1, 3)
    ending = StepEnding(
        verdict, output, ran_action=True, exit_code=0 if verdict == "success" else 1
    )

    def many() -> None:
        guards = RunGuards(fsm)
        for iteration in range(calls):
            # A new state name each time: the streak never builds, as in a healthy run.
            guards.note_ending(f"s{iteration % 7}", iteration, ending)

    return median_seconds(repeats, many) / calls


def bench_loop(actions: int, repeats: int, root: Path) -> None:
    """(b)."""
    timings: dict[int, list[float]] = {0: [], 3: []}
    for _ in range(repeats):
        for threshold in timings:
            loops_dir = root / f"loops-{threshold}"
            executor = PersistentExecutor(loop_definition(actions, threshold), loops_dir=loops_dir)
            started = time.perf_counter()
            result = executor.run()
            timings[threshold].append(time.perf_counter() - started)
            assert result.terminated_by == "max_iterations", result
    off, on = statistics.median(timings[0]), statistics.median(timings[3])
    spread = (
        statistics.median(max(runs) - min(runs) for runs in timings.values() if len(runs) > 1)
        if repeats > 1
        else 0.0
    )
    print(
        f"(b) a loop of {actions} failing actions, output changing each time (median of {repeats})"
    )
    figure("stall_threshold: 0 (guard off)", f"{off:.3f} s")
    figure("stall_threshold: 3 (hashing every step, never triggered)", f"{on:.3f} s")
    difference = (on - off) / actions * 1000
    figure("difference per action", f"{difference:+.3f} ms", f"spread of the runs {spread:.3f} s")


def make_repository(root: Path, files: int) -> Path:
    """A committed git repository of `files` small files, with a few dirty and new ones."""
    repo = root / "repository"
    for number in range(files):
        path = repo / f"dir{number % 100:03d}" / f"file{number:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"value = {number}\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "files"]):
        subprocess.run([*git, *args], cwd=repo, check=True, env=_git_env(root))
    for number in range(5):
        (repo / f"dir{number:03d}" / f"file{number:05d}.py").write_text("changed\n")
        (repo / f"new{number}.py").write_text(f"new = {number}\n")
    return repo


def _git_env(root: Path) -> dict[str, str]:
    # The benchmark's git reads no user or system configuration (no hooks, no fsmonitor).
    return {**os.environ, "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}


def bench_workspace(files: int, repeats: int, root: Path, action: float) -> None:
    """(c)."""
    repo = make_repository(root, files)
    previous = dict(os.environ)
    os.environ.update(_git_env(root))
    try:
        watcher = WorkspaceWatcher(repo)
        watcher.fingerprint()  # git's index and stat caches warm, as from the second step on
        per_call = median_seconds(repeats, watcher.fingerprint)
    finally:
        os.environ.clear()
        os.environ.update(previous)
    print(f"(c) workspace fingerprint, git repository of {files} files (median of {repeats})")
    figure(
        "one fingerprint (5 modified, 5 untracked)",
        f"{per_call * 1000:.2f} ms",
        f"{per_call / action:.1f}x that action",
    )


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    args = parser.parse_args(argv)
    actions, calls, repeats = (40, 200, 3) if args.quick else (500, 2000, 5)
    files = 1000 if args.quick else 10_000
    print(f"ll-loop guard benchmarks{' (quick)' if args.quick else ''}: {machine()}")
    with tempfile.TemporaryDirectory(prefix="ll-loop-guards-bench-") as temp:
        root = Path(temp)
        os.chdir(root)  # actions and `.loops` live in the temporary directory
        action = bench_step_cost(calls, repeats)
        bench_loop(actions, repeats, root)
        bench_workspace(files, repeats * 4, root, action)
    return 0


if __name__ == "__main__":
    sys.exit(main())
