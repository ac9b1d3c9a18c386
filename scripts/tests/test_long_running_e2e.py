"""Long-running loops end to end: the installed `ll-loop`, real processes, real git.

Covers `on_handoff: continue`, the stall guard, `max_visits`, the error report,
`return_metadata` routing and `checkpoint: git`, plus the worked example of
`docs/long-running-loops.md`, run as written (with its stand-in agent) in a temporary
git repository. HOME points into tmp_path and git reads no global or system config.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import cli_env, normalize, run_cli, write_loop

REPO_ROOT = Path(__file__).resolve().parents[2]
GUIDE = REPO_ROOT / "docs" / "long-running-loops.md"
AGENT = REPO_ROOT / ".loops" / "scripts" / "implementer-agent.sh"
COMMIT = re.compile(r"committed [0-9a-f]{7,}")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / ".loops").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    # Inherited by every ll-loop and git started below: no real ~ or /etc/gitconfig.
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return root


def ll_loop(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(root, *args, env=cli_env(Path(os.environ["HOME"])))


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def init_repository(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")


def state_of(root: Path, name: str) -> dict[str, Any]:
    path = root / ".loops" / ".running" / f"{name}.state.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def events_of(root: Path, name: str) -> list[dict[str, Any]]:
    path = root / ".loops" / ".running" / f"{name}.events.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def guide_block(language: str, marker: str) -> str:
    """The fenced block of the guide in `language` that contains `marker`."""
    text = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    found = [block for block in blocks if marker in block]
    assert len(found) == 1, f"expected one {language} block with {marker!r}"
    return found[0]


# --- the worked example --------------------------------------------------------------------


def test_the_guide_shows_the_stand_in_agent_that_the_demo_runs() -> None:
    assert guide_block("sh", "implementer-agent.sh") == AGENT.read_text(encoding="utf-8")


def test_the_worked_example_runs_as_documented_with_one_commit_per_session(
    project: Path,
) -> None:
    write_loop(project, "implementer", guide_block("yaml", "name: implementer"))
    (project / "specs").mkdir()
    (project / "specs" / "plan.md").write_text("# plan\n")
    agent = project / "agent.sh"
    agent.write_text(guide_block("sh", "implementer-agent.sh"))
    agent.chmod(0o755)
    init_repository(project)

    result = ll_loop(project, "run", "implementer")

    assert result.returncode == 0, result.stdout + result.stderr
    shown = guide_block("text", "Running loop: implementer")
    assert COMMIT.sub("committed H", normalize(result.stdout)) == COMMIT.sub(
        "committed H", normalize(shown)
    )
    log = git(project, "log", "--format=%s")
    assert log == guide_block("text", "checkpoint after 'resume' (iteration 4)") + "start\n"
    assert (project / "progress.md").read_text() == (
        "phase 1 of specs/plan.md: done\n"
        "phase 2 of specs/plan.md: started\n"
        "phase 2 of specs/plan.md: done\n"
        "phase 3 of specs/plan.md: done\n"
    )
    # The loop's runtime files are never committed; the project's work all is.
    assert ".loops/.running" not in git(project, "log", "--name-only", "--format=")
    assert git(project, "status", "--porcelain") == "?? .loops/.running/\n"


def test_checkpoints_outside_a_repository_warn_once(project: Path) -> None:
    write_loop(project, "implementer", guide_block("yaml", "name: implementer"))
    (project / "specs").mkdir()
    (project / "specs" / "plan.md").write_text("# plan\n")
    (project / "agent.sh").write_text(AGENT.read_text(encoding="utf-8"))
    (project / "agent.sh").chmod(0o755)

    result = ll_loop(project, "run", "implementer")

    assert result.returncode == 0, result.stdout + result.stderr
    warning = (
        f"       ! checkpoint: git: {project} is not in a git work tree, "
        "so no checkpoints will be made\n"
    )
    assert result.stdout.count(warning) == 1
    assert "Loop completed: done (4 iterations" in result.stdout


# --- on_handoff: continue --------------------------------------------------------------------


def test_a_loop_that_hands_off_twice_finishes_in_one_run(project: Path) -> None:
    write_loop(project, "keep-going", guide_block("yaml", "name: keep-going"))

    result = ll_loop(project, "run", "keep-going", "-v")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "       | finished: go on with part 3\n" in result.stdout
    assert result.stdout.count("continuing in a fresh process") == 2
    handoffs = [e for e in events_of(project, "keep-going") if "handoff" in e["event"]]
    assert [(e["event"], e.get("count"), e["continuation"]) for e in handoffs] == [
        ("handoff_detected", None, "go on with part 2"),
        ("handoff_continued", 1, "go on with part 2"),
        ("handoff_detected", None, "go on with part 3"),
        ("handoff_continued", 2, "go on with part 3"),
    ]
    state = state_of(project, "keep-going")
    assert (state["status"], state["iteration"], state["handoff_count"]) == ("completed", 3, 2)


FOREVER = """\
name: forever
initial: work
on_handoff: continue
max_continuations: 2
states:
  work:
    action: 'echo "CONTEXT_HANDOFF: part ${handoff.count}"'
    next: done
  done:
    terminal: true
"""


def test_a_loop_that_hands_off_forever_stops_at_max_continuations(project: Path) -> None:
    write_loop(project, "forever", FOREVER)

    result = ll_loop(project, "run", "forever")

    assert result.returncode == 3, result.stdout + result.stderr
    assert normalize(result.stderr) == (
        "Loop paused for handoff: work (3 iterations, Ns) - max_continuations (2) reached, "
        "so it is not continued\n"
        "Continue anyway with: ll-loop resume forever --max-continuations 3\n"
    )
    state = state_of(project, "forever")
    assert (state["status"], state["handoff_count"], state["continuation_prompt"]) == (
        "awaiting_continuation",
        3,
        "part 2",
    )


# --- the stall guard ---------------------------------------------------------------------------

# An unattended loop (`on_handoff: continue`, so the guard is on at 3 without being set)
# whose check fails the same way; `WORK` is what it does to the files each round.
CONTINUOUS = """\
name: unattended
initial: work
max_iterations: 12
on_handoff: continue
states:
  work:
    action: "{work}echo 'FAILED test_login'; exit 1"
    on_success: done
    on_failure: work
  done:
    terminal: true
"""


def test_a_continuous_loop_failing_the_same_way_in_an_unchanged_git_tree_stalls(
    project: Path,
) -> None:
    write_loop(project, "unattended", CONTINUOUS.format(work=""))
    (project / "notes.txt").write_text("untouched\n")
    init_repository(project)

    result = ll_loop(project, "run", "unattended")

    assert result.returncode == 5, result.stdout + result.stderr
    assert "Loop stalled: work (3 iterations, " in result.stderr
    assert state_of(project, "unattended")["iteration"] == 3
    # The fingerprint never writes into the user's repository.
    assert git(project, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.mark.parametrize(
    "work",
    [
        "date +%N > notes.txt; ",  # a tracked file changes
        "date +%N > new-$(date +%N).txt; ",  # untracked files appear
        "git commit -q --allow-empty -m round; ",  # HEAD moves
    ],
    ids=["tracked", "untracked", "head"],
)
@pytest.mark.slow
def test_a_continuous_loop_whose_work_tree_changes_each_round_is_not_stalled(
    project: Path, work: str
) -> None:
    write_loop(project, "unattended", CONTINUOUS.format(work=work))
    (project / "notes.txt").write_text("untouched\n")
    init_repository(project)
    git(project, "config", "user.name", "t")
    git(project, "config", "user.email", "t@t")

    result = ll_loop(project, "run", "unattended")

    assert result.returncode == 4, result.stdout + result.stderr
    assert state_of(project, "unattended")["iteration"] == 12


def test_ignored_files_and_the_loop_runtime_files_are_not_progress(project: Path) -> None:
    work = "date +%N > build.log; date +%N > .loops/scratch.txt; "
    write_loop(project, "unattended", CONTINUOUS.format(work=work))
    (project / ".gitignore").write_text("build.log\n.loops/scratch.txt\n")
    init_repository(project)

    result = ll_loop(project, "run", "unattended")

    assert result.returncode == 5, result.stdout + result.stderr


def test_progress_paths_outside_git_count_as_progress(project: Path) -> None:
    work = "mkdir -p out; date +%N > out/attempt.txt; "
    watched = CONTINUOUS.format(work=work).replace(
        "on_handoff: continue\n", "on_handoff: continue\nprogress_paths: [out/*.txt]\n"
    )
    write_loop(project, "unattended", watched)

    moving = ll_loop(project, "run", "unattended")
    write_loop(project, "unattended", CONTINUOUS.format(work=work))
    unwatched = ll_loop(project, "run", "unattended")

    assert moving.returncode == 4, moving.stdout + moving.stderr
    # Outside git without progress_paths only the outputs count: the same failure stalls.
    assert unwatched.returncode == 5, unwatched.stdout + unwatched.stderr


def test_on_stall_routes_to_the_recovery_state_once_then_the_run_stalls(project: Path) -> None:
    recovering = CONTINUOUS.format(work="").replace(
        "on_handoff: continue\n", "on_handoff: continue\non_stall: reset\n"
    ) + ("  reset:\n    action: echo 'starting over'\n    next: work\n")
    write_loop(project, "unattended", recovering)

    result = ll_loop(project, "run", "unattended")

    assert result.returncode == 5, result.stdout + result.stderr
    assert "stalled, on_stall -> reset" in result.stdout
    entered = [e["state"] for e in events_of(project, "unattended") if e["event"] == "state_enter"]
    assert entered == ["work", "work", "work", "reset", "work"]
    assert "work (5 iterations, " in result.stderr


STUCK = """\
name: stuck
initial: check
max_iterations: 50
stall_threshold: 3
states:
  check:
    action: >-
      if [ -f fixed ]; then echo ok; else
      echo "$(date +%H:%M:%S) FAILED test_login"; echo "AssertionError: 500" >&2; exit 1; fi
    on_success: done
    on_failure: fix
  fix:
    action: echo "trying"
    next: check
  done:
    terminal: true
"""


@pytest.mark.slow
def test_a_loop_failing_the_same_way_stalls_and_resumes_with_its_counters(
    project: Path,
) -> None:
    write_loop(project, "stuck", STUCK)

    stalled = ll_loop(project, "run", "stuck")

    assert stalled.returncode == 5, stalled.stdout + stalled.stderr
    message = re.sub(r"\d\d:\d\d:\d\d", "T", normalize(stalled.stderr))
    assert message == (
        "Loop stalled: check (5 iterations, Ns) - state 'check' ended with verdict 'failure' "
        "and the same output 3 times in a row; it said:\n"
        "  | T FAILED test_login\n"
        "Resume with: ll-loop resume stuck (once what repeats is fixed; otherwise it stalls "
        "again at once)\n"
        "Or without the stall guard: ll-loop resume stuck --stall-threshold 0 "
        "(or raise stall_threshold in the loop file)\n"
        "Errors during the run (3):\n"
        "  iterations 1 to 5, check: action failed: exit code 1 (3 times)\n"
        "    | AssertionError: 500\n"
    )
    status = ll_loop(project, "status", "stuck")
    assert "Status: stalled\n" in status.stdout
    assert status.stdout.endswith(
        "Errors during the run (3):\n"
        "  iterations 1 to 5, check: action failed: exit code 1 (3 times)\n"
        "    | AssertionError: 500\n"
    )
    listed = ll_loop(project, "list", "--running")
    assert "stuck" in listed.stdout and "stalled" in listed.stdout

    again = ll_loop(project, "resume", "stuck")
    assert again.returncode == 5, again.stdout + again.stderr
    assert "Loop stalled: check (6 iterations, " in again.stderr
    assert "the same output 4 times in a row" in again.stderr

    (project / "fixed").touch()  # a person looked and fixed the cause
    fixed = ll_loop(project, "resume", "stuck")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Loop completed: done (7 iterations, " in fixed.stdout
    assert "Errors during the run (4):" in fixed.stdout
    assert state_of(project, "stuck")["status"] == "completed"


def test_stall_threshold_zero_lets_it_run_to_max_iterations(project: Path) -> None:
    write_loop(
        project,
        "stuck",
        STUCK.replace("max_iterations: 50", "max_iterations: 7").replace(
            "stall_threshold: 3", "stall_threshold: 0"
        ),
    )

    result = ll_loop(project, "run", "stuck")

    assert result.returncode == 4, result.stdout + result.stderr


VISITS = """\
name: visits
initial: poll
states:
  poll:
    action: echo poll ${state.iteration}; exit 1
    max_visits: 3
    on_failure: poll
    on_success: done
  done:
    terminal: true
"""


def test_max_visits_without_a_way_out_stalls(project: Path) -> None:
    write_loop(project, "visits", VISITS)

    result = ll_loop(project, "run", "visits")

    assert result.returncode == 5, result.stdout + result.stderr
    assert normalize(result.stderr) == (
        "Loop stalled: poll (3 iterations, Ns) - state 'poll' was entered 3 times "
        "(max_visits: 3)\nResume with: ll-loop resume visits (after raising max_visits of "
        "'poll' in the loop file)\n"
    )


# --- return metadata -------------------------------------------------------------------------

REPORTING = """\
name: reporting
initial: work
states:
  work:
    action: cat report.json
    evaluate:
      type: return_metadata
    route:
      success: done
      partial: resume_at_${result.details.resume_phase}
      blocked: needs_review
      failure: gave_up
  resume_at_3:
    action: echo resuming
    next: done
  needs_review:
    terminal: true
  gave_up:
    terminal: true
  done:
    terminal: true
"""


@pytest.mark.parametrize(
    ("report", "final_state"),
    [
        ({"status": "implemented"}, "done"),
        ({"status": "partial", "partial_progress": {"phases_completed": 2}}, "done"),
        ({"status": "partial", "requires_user_review": True}, "needs_review"),
        ({"status": "blocked"}, "needs_review"),
        ({"status": "failed"}, "gave_up"),
    ],
)
def test_return_metadata_routes_every_status(
    project: Path, report: dict[str, Any], final_state: str
) -> None:
    write_loop(project, "reporting", REPORTING)
    (project / "report.json").write_text(f"Work report:\n```json\n{json.dumps(report)}\n```\n")

    result = ll_loop(project, "run", "reporting")

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Loop completed: {final_state} (" in result.stdout
    if report["status"] == "partial" and final_state == "done":
        assert "-> resume_at_3" in result.stdout
