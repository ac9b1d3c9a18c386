"""The kill test: SIGKILL the real `ll-loop run`/`resume` at random moments, again and again.

A loop of short states with a silent check runs in a fresh directory (an "episode"): the
states `s1`..`s4` go round `ROUNDS` times, and `check` (`test ... -ge N`, no output) fails
the same way after each round but the last, as a counting loop's check does. Before issue
10 every resume of such a loop stopped as stalled; now the guard is off unless asked for.
Each attempt starts `ll-loop run` (or `resume` once something was saved) and SIGKILLs it
at a random moment: sometimes during start-up (lock, clearing the old files), mostly while
it works through its states. After every kill:

- the state file is missing (nothing saved yet) or parses (`load_state_checked`);
- every complete line of the events file is a JSON object (a last line cut short by the
  kill is allowed; the next resume removes it);
- `ll-loop status` calls a killed run interrupted.

Then `ll-loop resume` runs the loop to its end, and the counters must be right. Every
action but the check appends `<state> <iteration>` to `counter.txt`; a state is never
counted twice (resume re-runs a cut-off state under the same iteration number, so a
repeated line is the same line, which the check does not count twice), so:

- the loop ends `completed` after exactly `ROUNDS * (len(STATES) + 1)` iterations;
- each counter line names the iteration its state belongs to;
- consecutive repeats aside, the counter lines are the rounds of states in order, and
  there are no more repeats than kills (only the state a kill cut off runs again).

Seeded, so a failure can be replayed; bounded in time (well under 90 s).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env

from little_loops.cli.processes import action_groups, wait_until_gone
from little_loops.fsm.persistence import StatePersistence

SEED = 6_2026
KILLS_WANTED = 50
TIME_BUDGET_SECONDS = 80.0
STATES = [f"s{number}" for number in range(1, 5)]
ROUNDS = 4  # the check fails silently ROUNDS - 1 times: more than a stall_threshold of 3
ROUND_LENGTH = len(STATES) + 1  # the states and the check
STARTUP_KILL_SHARE = 0.2  # kills aimed at start-up, before any state runs


def _loop_text() -> str:
    lines = ["name: counted", f"initial: {STATES[0]}", "max_iterations: 100", "states:"]
    for position, state in enumerate(STATES):
        after = STATES[position + 1] if position + 1 < len(STATES) else "check"
        lines += [
            f"  {state}:",
            '    action: "echo ${state.name} ${state.iteration} >> counter.txt; sleep 0.01"',
            f"    next: {after}",
        ]
    lines += [
        "  check:",
        f'    action: "test $(sort -u counter.txt | wc -l) -ge {len(STATES) * ROUNDS}"',
        "    on_success: done",
        f"    on_failure: {STATES[0]}",
    ]
    return "\n".join([*lines, "  done:", "    terminal: true", ""])


class Episode:
    """One directory, one loop, killed until it is done."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.kills = 0
        (root / ".loops").mkdir(parents=True)
        (root / ".loops" / "counted.yaml").write_text(_loop_text())
        self.persistence = StatePersistence("counted", root / ".loops")
        self.status_checked = False

    def attempt(self) -> bool:
        """Start run/resume, kill it at a random moment; True when the loop is complete."""
        process = self._start()
        if self.rng.random() < STARTUP_KILL_SHARE:
            time.sleep(self.rng.uniform(0.0, 0.35))
        else:
            self._wait_for_progress(process)
            time.sleep(self.rng.uniform(0.0, 0.12))
        self._kill(process)
        self._check_files()
        state = self.persistence.load_state_checked()
        return state is not None and state.status == "completed"

    def finish(self) -> None:
        """Resume without a kill, to the end."""
        state = self.persistence.load_state_checked()
        if state is not None and state.status == "completed":
            return
        done = subprocess.run(
            self._command(),
            cwd=self.root,
            env=cli_env(self.root),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, (done.stdout, done.stderr)

    def _command(self) -> list[str]:
        saved = self.persistence.load_state_checked() is not None
        return [str(LL_LOOP), "resume" if saved else "run", "counted", "-q"]

    def _start(self) -> subprocess.Popen[bytes]:
        self._events_before = self._events_size()
        return subprocess.Popen(
            self._command(),
            cwd=self.root,
            env=cli_env(self.root),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def _events_size(self) -> int:
        try:
            return self.persistence.events_file.stat().st_size
        except FileNotFoundError:
            return 0

    def _wait_for_progress(self, process: subprocess.Popen[bytes]) -> None:
        """Until the run has written an event of its own (it is past start-up)."""
        deadline = time.monotonic() + 20
        while self._events_size() <= self._events_before and process.poll() is None:
            assert time.monotonic() < deadline, "ll-loop made no progress"
            time.sleep(0.005)

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        # Its actions run in sessions of their own and outlive it: wait for them too, so
        # an orphaned action cannot write after the next attempt has started.
        groups = action_groups(process.pid)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            self.kills += 1
        _, err = process.communicate()
        assert process.returncode in (0, -signal.SIGKILL), err.decode()
        for group in groups:
            assert wait_until_gone(group, 10)

    def _check_files(self) -> None:
        self.persistence.load_state_checked()  # raises StateFileError if damaged
        raw = self._events_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]
        for line in complete.splitlines():
            assert isinstance(json.loads(line), dict), line
        state = self.persistence.load_state_checked()
        if state is not None and state.status == "running" and not self.status_checked:
            self.status_checked = True
            shown = subprocess.run(
                [str(LL_LOOP), "status", "counted"],
                cwd=self.root,
                env=cli_env(self.root),
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            assert shown.stdout.splitlines()[1].startswith("Status: interrupted (process ")

    def _events_bytes(self) -> bytes:
        try:
            return self.persistence.events_file.read_bytes()
        except FileNotFoundError:
            return b""

    def check_counters(self) -> None:
        state = self.persistence.load_state_checked()
        assert state is not None
        iterations = ROUNDS * ROUND_LENGTH
        assert (state.status, state.current_state, state.iteration) == (
            "completed",
            "done",
            iterations,
        )
        raw = self._events_bytes()
        assert raw.endswith(b"\n")  # a cut-off line was removed by the resume
        events = [json.loads(line) for line in raw.splitlines()]
        assert events[-1]["event"] == "loop_complete"
        assert (events[-1]["terminated_by"], events[-1]["iterations"]) == ("terminal", iterations)
        assert not list(self.persistence.running_dir.glob(".*.tmp"))
        counted = [line.split() for line in (self.root / "counter.txt").read_text().splitlines()]
        for name, iteration in counted:
            assert STATES.index(name) == (int(iteration) - 1) % ROUND_LENGTH, counted
        collapsed = [
            name
            for position, (name, _) in enumerate(counted)
            if position == 0 or counted[position - 1][0] != name
        ]
        assert collapsed == STATES * ROUNDS, counted
        assert len(counted) - len(STATES) * ROUNDS <= self.kills, counted


@pytest.mark.slow
def test_random_kills_never_lose_or_corrupt_a_loop(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    started = time.monotonic()
    kills = 0
    episodes = 0
    while kills < KILLS_WANTED:
        assert time.monotonic() - started < TIME_BUDGET_SECONDS, f"only {kills} kills"
        episode = Episode(tmp_path / f"episode-{episodes}", rng)
        for _ in range(rng.randint(3, 7)):
            if episode.attempt():
                break
        episode.finish()
        episode.check_counters()
        kills += episode.kills
        episodes += 1
    assert kills >= KILLS_WANTED
