"""Context handoff end to end: the installed `ll-loop`, real processes, a fake `claude`.

Every test works in a project directory inside tmp_path with HOME and TMPDIR pointing
at empty directories next to it, and checks what the user sees (exit code, stdout,
stderr), the state file, the events, and that nothing was written outside the project.
The fake `claude` is a shell script written here: for a spawned continuation it does
what a real session is asked to do, `ll-loop resume <name>`.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from fixtures.cli_support import LL_LOOP, normalize

# A state that hands off on its first run and reports the prompt when resumed.
HANDS_OFF_ONCE = """\
  step:
    action: >-
      if [ ${handoff.count} -eq 0 ]; then echo "CONTEXT_HANDOFF: carry on with part 2";
      else echo "resumed (${handoff.count}, ${handoff.state}): ${handoff.prompt}"; fi
    capture: step
    next: done
  done:
    terminal: true
"""

# The stand-in for claude. A spawned continuation runs `ll-loop resume <name>` as the
# prompt asks; a slash command hands off until its prompt carries the continuation.
FAKE_CLAUDE = """#!/bin/bash
prompt="${*: -1}"
case "$prompt" in
  "Continue loop execution. Run: ll-loop resume "*)
    echo "fake claude was asked: $prompt"
    name="${prompt#Continue loop execution. Run: ll-loop resume }"
    name="${name%%$'\\n'*}"
    exec "$LL_LOOP_BIN" resume "$name" ;;
  *"carry on"*) echo "slash command got: $prompt" ;;
  *) echo "CONTEXT_HANDOFF: carry on from the slash command" ;;
esac
"""


class Project:
    """A project directory, its environment and helpers to run `ll-loop` in it."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "project"
        self.home = tmp_path / "home"
        self.tmp = tmp_path / "tmp"
        self.bin = tmp_path / "bin"
        for directory in (self.root / ".loops", self.home, self.tmp, self.bin):
            directory.mkdir(parents=True)
        # Only bash on PATH: there is certainly no claude unless a test adds one.
        (self.bin / "bash").symlink_to("/bin/bash")
        self.env = {
            "PATH": str(self.bin),
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "LANG": "C.UTF-8",
            "LL_LOOP_BIN": str(LL_LOOP),
        }
        self.tmp_path = tmp_path

    def add_fake_claude(self) -> None:
        claude = self.bin / "claude"
        claude.write_text(FAKE_CLAUDE)
        claude.chmod(0o755)

    def write_loop(self, name: str, header: str, states: str = HANDS_OFF_ONCE) -> None:
        text = f"name: {name}\ninitial: step\n{header}states:\n{states}"
        (self.root / ".loops" / f"{name}.yaml").write_text(text)

    def ll_loop(self, *args: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [str(LL_LOOP), *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return done.returncode, normalize(done.stdout), normalize(done.stderr)

    def state(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.running(f"{name}.state.json").read_text())
        return data

    def events(self, name: str) -> list[dict[str, Any]]:
        lines = self.running(f"{name}.events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    def running(self, file_name: str) -> Path:
        return self.root / ".loops" / ".running" / file_name

    def wait_for_status(self, name: str, status: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            state = self.state(name)
            if state["status"] == status:
                return state
            assert time.monotonic() < deadline, f"{name} stayed {state['status']}"
            time.sleep(0.05)

    def assert_nothing_written_outside(self) -> None:
        assert sorted(p.name for p in self.tmp_path.iterdir()) == ["bin", "home", "project", "tmp"]
        assert list(self.home.iterdir()) == []
        assert list(self.tmp.iterdir()) == []


def _event_names(events: list[dict[str, Any]]) -> list[str]:
    return [event["event"] for event in events]


def _wait_for_exit(pid: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and "Z" not in _proc_state(pid):
        assert time.monotonic() < deadline, f"process {pid} did not end"
        time.sleep(0.05)


def _wait_for_command(pid: int, argv_start: list[str], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        if argv[: len(argv_start)] == argv_start:
            return
        assert time.monotonic() < deadline, f"process {pid} runs {argv}"
        time.sleep(0.02)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return "Z"


# --- pause ------------------------------------------------------------------------------


def test_pause_status_list_resume_completed(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.write_loop("paused", "max_iterations: 5\n")

    code, out, err = project.ll_loop("run", "paused")
    assert (code, err) == (3, "")
    assert out == (
        "Running loop: paused\n"
        "Max iterations: 5\n"
        "\n"
        '[1/5] step -> if [ 0 -eq 0 ]; then echo "CONTEXT_HANDOFF: carry on with pa...\n'
        "       handoff: carry on with part 2\n"
        "\n"
        "Loop paused for handoff: step (1 iteration, Ns)\n"
        "Continuation: carry on with part 2\n"
        "Resume with: ll-loop resume paused\n"
    )
    state = project.state("paused")
    assert {key: state[key] for key in ("status", "current_state", "iteration")} == {
        "status": "awaiting_continuation",
        "current_state": "step",
        "iteration": 1,
    }
    assert (state["continuation_prompt"], state["handoff_count"]) == ("carry on with part 2", 1)

    code, out, _ = project.ll_loop("status", "paused")
    assert code == 0
    assert out.splitlines()[1:4] == [
        "Status: awaiting_continuation",
        "Current state: step",
        "Iteration: 1",
    ]
    assert out.splitlines()[-1] == "Continuation context: carry on with part 2"
    assert project.ll_loop("list", "--running") == (
        0,
        "Unfinished runs:\n  paused: step (iteration 1) - awaiting_continuation\n",
        "",
    )

    code, out, err = project.ll_loop("resume", "paused", "-v")
    assert (code, err) == (0, "")
    assert out == (
        "Resuming loop 'paused' from state 'step' (iteration 1)\n"
        "Continuation context: carry on with part 2\n"
        "Max iterations: 5\n"
        "\n"
        '[2/5] step -> if [ 1 -eq 0 ]; then echo "CONTEXT_HANDOFF: carry on with pa...\n'
        "       | resumed (1, step): carry on with part 2\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (2 iterations, Ns)\n"
    )
    assert project.state("paused")["status"] == "completed"
    assert project.ll_loop("list", "--running") == (0, "No running loops\n", "")
    assert project.ll_loop("resume", "paused") == (
        1,
        "",
        "[T] loop 'paused' already completed; start a new run with: ll-loop run paused\n",
    )
    project.assert_nothing_written_outside()


def test_empty_payload_pauses_with_no_prompt_and_resumes(tmp_path: Path) -> None:
    project = Project(tmp_path)
    states = HANDS_OFF_ONCE.replace("CONTEXT_HANDOFF: carry on with part 2", "CONTEXT_HANDOFF:")
    project.write_loop("bare", "", states)

    code, out, _ = project.ll_loop("run", "bare")
    assert code == 3
    assert out.endswith(
        "Loop paused for handoff: step (1 iteration, Ns)\n"
        "Continuation: (no prompt)\n"
        "Resume with: ll-loop resume bare\n"
    )
    assert project.state("bare")["continuation_prompt"] == ""
    # The same words as the summary's (issue 23 item 25, earlier finding 34).
    assert "Continuation context: (no prompt)\n" in project.ll_loop("status", "bare")[1]

    code, out, _ = project.ll_loop("resume", "bare")
    assert code == 0
    assert out.startswith(
        "Resuming loop 'bare' from state 'step' (iteration 1)\n"
        "Continuation context: (no prompt)\nMax iterations"
    )
    assert project.state("bare")["captured"]["step"]["output"] == "resumed (1, step): \n"


def test_marker_at_end_of_line_does_not_take_the_next_line(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.write_loop(
        "eol",
        "",
        "  step:\n    action: printf 'CONTEXT_HANDOFF:\\nthis is not the prompt\\n'\n"
        "    next: done\n  done:\n    terminal: true\n",
    )
    assert project.ll_loop("run", "eol")[0] == 3
    assert project.state("eol")["continuation_prompt"] == ""


def test_marker_in_the_middle_of_a_huge_output_is_found(tmp_path: Path) -> None:
    project = Project(tmp_path)
    (project.bin / "yes").symlink_to("/usr/bin/yes")
    (project.bin / "head").symlink_to("/usr/bin/head")
    filler = "yes 'filler filler filler' | head -n 100000"
    project.write_loop(
        "huge",
        "",
        f"  step:\n    action: >-\n      {filler}; echo 'CONTEXT_HANDOFF: found me';\n"
        f"      {filler}\n    next: done\n  done:\n    terminal: true\n",
    )
    code, out, _ = project.ll_loop("run", "huge")
    assert code == 3
    assert "Continuation: found me\n" in out
    assert project.state("huge")["continuation_prompt"] == "found me"


def test_first_handoff_wins_and_fatal_error_beats_a_handoff(tmp_path: Path) -> None:
    project = Project(tmp_path)
    two = (
        "  step:\n    action: \"echo 'CONTEXT_HANDOFF: first'; echo 'CONTEXT_HANDOFF: second'\"\n"
        "    next: done\n  done:\n    terminal: true\n"
    )
    project.write_loop("two", "", two)
    assert project.ll_loop("run", "two")[0] == 3
    assert project.state("two")["continuation_prompt"] == "first"

    both = (
        "  step:\n    action: \"echo 'CONTEXT_HANDOFF: go on'; echo 'FATAL_ERROR: disk full'\"\n"
        "    next: done\n  done:\n    terminal: true\n"
    )
    project.write_loop("both", "", both)
    code, _, err = project.ll_loop("run", "both")
    assert (code, err) == (1, "Loop failed: step (1 iteration, Ns) - disk full\n")
    assert project.state("both")["status"] == "failed"


# --- terminate ------------------------------------------------------------------------


def test_terminate_saves_the_prompt_and_cannot_be_resumed(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.write_loop("ended", "on_handoff: terminate\n")

    code, out, err = project.ll_loop("run", "ended")
    assert (code, err) == (3, "")
    assert out.endswith(
        "Loop ended by handoff: step (1 iteration, Ns)\nContinuation: carry on with part 2\n"
    )
    state = project.state("ended")
    assert (state["status"], state["continuation_prompt"], state["terminated_by"]) == (
        "handoff_terminated",
        "carry on with part 2",
        "handoff",
    )
    code, out, _ = project.ll_loop("status", "ended")
    assert out.splitlines()[1] == "Status: handoff_terminated"
    assert out.splitlines()[-1] == "Continuation context: carry on with part 2"
    assert project.ll_loop("list", "--running") == (0, "No running loops\n", "")
    assert project.ll_loop("resume", "ended") == (
        1,
        "",
        "[T] loop 'ended' ended at a handoff (handoff_terminated); "
        "start a new run with: ll-loop run ended\n",
    )
    project.assert_nothing_written_outside()


# --- spawn ------------------------------------------------------------------------------


def test_spawn_starts_claude_which_resumes_the_loop_to_completion(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.add_fake_claude()
    project.write_loop("spawner", "on_handoff: spawn\n")

    code, out, err = project.ll_loop("run", "spawner")
    assert (code, err) == (3, "")
    assert out.endswith(
        "Loop handed off to a new Claude session: step (1 iteration, Ns)\n"
        "Continuation: carry on with part 2\n"
        "Session log: .loops/.running/spawner.handoff.log\n"
        "Follow with: ll-loop status spawner\n"
    )
    final = project.wait_for_status("spawner", "completed")
    assert final["captured"]["step"]["output"] == "resumed (1, step): carry on with part 2\n"
    events = project.events("spawner")
    spawned = next(event for event in events if event["event"] == "handoff_spawned")
    assert spawned["log"] == str(project.running("spawner.handoff.log"))
    _wait_for_exit(spawned["pid"])
    names = _event_names(events)
    at = names.index("handoff_spawned")
    assert names[at - 2 : at + 3] == [
        "handoff_detected",
        "loop_complete",
        "handoff_spawned",
        "loop_resume",
        "loop_start",
    ]
    assert names[-1] == "loop_complete"
    log = normalize(project.running("spawner.handoff.log").read_text())
    assert log.startswith(
        "fake claude was asked: Continue loop execution. Run: ll-loop resume spawner\n"
        "\n"
        "carry on with part 2\n"
        "Resuming loop 'spawner' from state 'step' (iteration 1)\n"
        "Continuation context: carry on with part 2\n"
    )
    assert log.endswith("Loop completed: done (2 iterations, Ns)\n")
    project.assert_nothing_written_outside()


def test_spawn_records_the_new_session_pid_while_it_works(tmp_path: Path) -> None:
    project = Project(tmp_path)
    # A claude that waits for a file before resuming, so the state can be read meanwhile.
    claude = project.bin / "claude"
    claude.write_text(
        '#!/bin/bash\nwhile [ ! -e go ]; do sleep 0.05; done\nexec "$LL_LOOP_BIN" resume waiter\n'
    )
    claude.chmod(0o755)
    (project.bin / "sleep").symlink_to("/bin/sleep")
    project.write_loop("waiter", "on_handoff: spawn\n")

    assert project.ll_loop("run", "waiter")[0] == 3
    state = project.state("waiter")
    spawned = [e for e in project.events("waiter") if e["event"] == "handoff_spawned"]
    assert [event["pid"] for event in spawned] == [state["pid"]]
    assert state["status"] == "awaiting_continuation"
    # The recorded pid is the session itself, which becomes claude once let go.
    _wait_for_command(state["pid"], ["/bin/bash", str(claude)])
    _, out, _ = project.ll_loop("status", "waiter")
    assert out.splitlines()[1] == "Status: awaiting_continuation"
    (project.root / "go").write_text("")
    project.wait_for_status("waiter", "completed")
    _wait_for_exit(state["pid"])


def test_spawn_from_a_slash_command_appends_the_prompt_on_resume(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.add_fake_claude()
    states = "  step:\n    action: /ll:work\n    capture: step\n    next: done\n"
    states += "  done:\n    terminal: true\n"
    project.write_loop("slash", "on_handoff: spawn\nllm:\n  enabled: false\n", states)

    assert project.ll_loop("run", "slash")[0] == 3
    final = project.wait_for_status("slash", "completed")
    assert final["captured"]["step"]["output"] == (
        "slash command got: /ll:work\n\ncarry on from the slash command\n"
    )
    spawned = next(e for e in project.events("slash") if e["event"] == "handoff_spawned")
    _wait_for_exit(spawned["pid"])
    project.assert_nothing_written_outside()


def test_spawn_without_claude_says_so_in_one_line_and_can_be_resumed(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.write_loop("nospawn", "on_handoff: spawn\n")

    code, out, err = project.ll_loop("run", "nospawn", "-q")
    assert (code, out) == (3, "")
    assert err == (
        "Loop paused for handoff: step (1 iteration, Ns) - the continuation could not be "
        "started (claude CLI not found: install Claude Code or set LL_CLAUDE_BIN); "
        "resume by hand: ll-loop resume nospawn\n"
    )
    state = project.state("nospawn")
    assert (state["status"], state["continuation_prompt"]) == (
        "awaiting_continuation",
        "carry on with part 2",
    )
    assert "handoff_spawned" not in _event_names(project.events("nospawn"))
    assert not project.running("nospawn.handoff.log").exists()
    code, out, _ = project.ll_loop("resume", "nospawn")
    assert code == 0
    assert out.endswith("Loop completed: done (2 iterations, Ns)\n")
    project.assert_nothing_written_outside()


# --- max_continuations ----------------------------------------------------------------

HANDS_OFF_TWICE = HANDS_OFF_ONCE.replace("-eq 0", "-lt 2")


def test_max_continuations_stops_continuing_and_resume_can_raise_it(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.write_loop("bounded", "max_continuations: 1\n", HANDS_OFF_TWICE)

    assert project.ll_loop("run", "bounded")[0] == 3
    code, out, err = project.ll_loop("resume", "bounded")
    assert code == 3
    assert "handoff: carry on with part 2\n" in out
    assert err == (
        "Loop paused for handoff: step (2 iterations, Ns) - max_continuations (1) reached, "
        "so it is not continued\n"
        "Continue anyway with: ll-loop resume bounded --max-continuations 2\n"
    )
    state = project.state("bounded")
    assert (state["status"], state["handoff_count"]) == ("awaiting_continuation", 2)
    code, out, _ = project.ll_loop("status", "bounded")
    assert "Error: max_continuations (1) reached: this handoff is not continued" in out
    refusal = (
        "[T] loop 'bounded' reached max_continuations (1) after 2 handoffs; to continue "
        "anyway: ll-loop resume bounded --max-continuations 2\n"
    )
    assert project.ll_loop("resume", "bounded") == (1, "", refusal)
    assert project.ll_loop("resume", "bounded", "--max-continuations", "0")[0] == 2
    code, out, _ = project.ll_loop("resume", "bounded", "--max-continuations", "2")
    assert code == 0
    assert out.endswith("Loop completed: done (3 iterations, Ns)\n")


def test_max_continuations_bounds_spawned_sessions_too(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.add_fake_claude()
    project.write_loop("chain", "on_handoff: spawn\nmax_continuations: 1\n", HANDS_OFF_TWICE)

    assert project.ll_loop("run", "chain")[0] == 3
    spawned_pid = next(e for e in project.events("chain") if e["event"] == "handoff_spawned")["pid"]
    _wait_for_exit(spawned_pid)  # the session ran `ll-loop resume`, which handed off again
    state = project.state("chain")
    assert (state["status"], state["handoff_count"]) == ("awaiting_continuation", 2)
    assert _event_names(project.events("chain")).count("handoff_spawned") == 1
    log = project.running("chain.handoff.log").read_text()
    assert "max_continuations (1) reached, so it is not continued" in log
    project.assert_nothing_written_outside()


# --- FATAL_ERROR and LOOP_STOP -----------------------------------------------------------


def test_fatal_error_fails_the_run_and_is_not_resumable(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.write_loop(
        "fatal",
        "",
        "  step:\n    action: \"echo 'FATAL_ERROR: database is gone'\"\n"
        "    on_success: done\n  done:\n    terminal: true\n",
    )
    code, _, err = project.ll_loop("run", "fatal")
    assert (code, err) == (1, "Loop failed: step (1 iteration, Ns) - database is gone\n")
    state = project.state("fatal")
    assert (state["status"], state["error"], state["terminated_by"]) == (
        "failed",
        "database is gone",
        "error",
    )
    assert project.ll_loop("resume", "fatal") == (
        1,
        "",
        "[T] loop 'fatal' failed: database is gone; start a new run with: ll-loop run fatal\n",
    )


def test_loop_stop_ends_cleanly_and_is_not_resumable(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.write_loop(
        "stopper",
        "",
        "  step:\n    action: \"echo 'LOOP_STOP: nothing left to do'\"\n"
        "    on_success: step\n    on_failure: done\n  done:\n    terminal: true\n",
    )
    code, out, err = project.ll_loop("run", "stopper")
    assert (code, err) == (0, "")
    assert out.endswith("Loop stopped by LOOP_STOP: step (1 iteration, Ns) - nothing left to do\n")
    state = project.state("stopper")
    assert (state["status"], state["terminated_by"]) == ("stopped", "signal_stop")
    assert project.ll_loop("list", "--running") == (0, "No running loops\n", "")
    assert project.ll_loop("resume", "stopper") == (
        1,
        "",
        "[T] loop 'stopper' was stopped by LOOP_STOP; start a new run with: ll-loop run stopper\n",
    )
    project.assert_nothing_written_outside()
