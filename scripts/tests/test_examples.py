"""Docs that run: every example loop validates, and every runnable one ends as documented.

Covers the loop files in `.loops/` and every fenced ```yaml block in `docs/*.md` that is a
loop (it mentions `states:` or `paradigm:`). Each `.loops/` example states its exit code
in its header comment (`# Exit code: N`); the examples that need no `claude` are run end
to end with the real CLI in a copy of `.loops/` inside `tmp_path`, and must end with that
code and the matching saved status. The README keeps its two set-up commands and shows
what `ll-loop run hello` and `ll-loop resume hello` really print (timings aside): the
first command a reader runs pauses for a context handoff and resumes it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.validation import load_loop

REPO_ROOT = Path(__file__).resolve().parents[2]
LOOPS_DIR = REPO_ROOT / ".loops"
DOCS_DIR = REPO_ROOT / "docs"
README = REPO_ROOT / "README.md"

YAML_BLOCK = re.compile(r"^```yaml[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
LOOP_MARKER = re.compile(r"^\s*(states|paradigm):", re.MULTILINE)
EXIT_CODE_LINE = re.compile(r"^# Exit code: (\d+)$", re.MULTILINE)
README_HELLO_SAMPLE = re.compile(
    r"^```text\n\$ ll-loop run hello\n(.*?)^```\n\n```text\n\$ ll-loop resume hello\n(.*?)^```",
    re.MULTILINE | re.DOTALL,
)
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
ANCHOR_LINK = re.compile(r"\]\(#([^)]+)\)")
SECONDS = re.compile(r"\b\d+\.\ds\)")

# The saved status that goes with each documented exit code (docs/user-guide.md).
STATUS_FOR_EXIT_CODE = {
    0: "completed",
    1: "failed",
    3: "awaiting_continuation",
    4: "interrupted",
    5: "stalled",
}

README_INSTALL_AND_RUN = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && ll-loop run hello; "
    "ll-loop resume hello"
)
README_INSTALL_AND_TEST = (
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]" && pytest'
)


def example_files() -> list[Path]:
    return sorted(LOOPS_DIR.glob("*.yaml"))


def doc_loop_blocks() -> list[tuple[str, str]]:
    """(`docs/<file>:<line>`, block text) for every YAML block in the docs that is a loop."""
    blocks = []
    for markdown in sorted(DOCS_DIR.glob("*.md")):
        text = markdown.read_text(encoding="utf-8")
        for match in YAML_BLOCK.finditer(text):
            if LOOP_MARKER.search(match.group(1)):
                line = text.count("\n", 0, match.start()) + 1
                blocks.append((f"docs/{markdown.name}:{line}", match.group(1)))
    return blocks


def documented_exit_code(path: Path) -> int:
    found = EXIT_CODE_LINE.findall(path.read_text(encoding="utf-8"))
    assert len(found) == 1, f"{path.name}: header needs exactly one '# Exit code: N' line"
    return int(found[0])


def needs_claude(loop: FSMLoop) -> bool:
    """True when a state runs a slash command (same rule as the executor)."""
    for state in loop.states.values():
        if state.action_type == "slash_command":
            return True
        action = (state.action or "").strip()
        first_word = action.split(maxsplit=1)[0] if action else ""
        if state.action_type is None and first_word.startswith("/") and "/" not in first_word[1:]:
            return True
    return False


def runnable_examples() -> list[Path]:
    return [path for path in example_files() if not needs_claude(load_loop(path))]


def run_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(project), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "little_loops.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def copy_examples(tmp_path: Path) -> Path:
    shutil.copytree(LOOPS_DIR, tmp_path / ".loops", ignore=shutil.ignore_patterns(".running"))
    return tmp_path


def saved_status(project: Path, loop_name: str) -> str:
    state_file = project / ".loops" / ".running" / f"{loop_name}.state.json"
    status = json.loads(state_file.read_text(encoding="utf-8"))["status"]
    assert isinstance(status, str)
    return status


@pytest.mark.parametrize("path", example_files(), ids=lambda path: path.name)
def test_example_loop_file_validates(path: Path) -> None:
    loop = load_loop(path)

    assert isinstance(loop, FSMLoop)
    assert loop.name == path.stem, "an example's name: should match its file name"
    assert loop.get_terminal_states()


@pytest.mark.parametrize("path", example_files(), ids=lambda path: path.name)
def test_example_loop_file_explains_itself(path: Path) -> None:
    first_line = path.read_text(encoding="utf-8").splitlines()[0]

    assert first_line.startswith(f"# {path.stem}: ")
    documented_exit_code(path)


@pytest.mark.parametrize(
    ("where", "block"), doc_loop_blocks(), ids=[where for where, _ in doc_loop_blocks()]
)
def test_loop_in_docs_validates(where: str, block: str, tmp_path: Path) -> None:
    loop_file = tmp_path / "example.yaml"
    loop_file.write_text(block, encoding="utf-8")

    loop = load_loop(loop_file)

    assert isinstance(loop, FSMLoop), where
    assert loop.states, where


@pytest.mark.parametrize("path", runnable_examples(), ids=lambda path: path.name)
def test_example_loop_runs_to_its_documented_exit_code(path: Path, tmp_path: Path) -> None:
    project = copy_examples(tmp_path)
    expected = documented_exit_code(path)
    loop_name = load_loop(path).name

    result = run_cli(project, "run", path.stem)

    assert result.returncode == expected, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert saved_status(project, loop_name) == STATUS_FOR_EXIT_CODE[expected]


def test_tour_pauses_for_handoff_then_resumes_to_done(tmp_path: Path) -> None:
    project = copy_examples(tmp_path)

    paused = run_cli(project, "run", "tour")
    state_file = project / ".loops" / ".running" / "tour.state.json"
    saved = json.loads(state_file.read_text(encoding="utf-8"))
    resumed = run_cli(project, "resume", "tour")

    assert paused.returncode == 3, paused.stdout + paused.stderr
    assert saved["status"] == "awaiting_continuation"
    assert saved["current_state"] == "pause_here"
    assert saved["continuation_prompt"] == "finish the tour from pause_here"
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert saved_status(project, "tour") == "completed"


def test_convergence_demo_leaves_no_scratch_file(tmp_path: Path) -> None:
    project = copy_examples(tmp_path)

    result = run_cli(project, "run", "convergence-demo")

    assert result.returncode == 0, result.stdout + result.stderr
    assert not (project / ".loops" / ".running" / "convergence-demo.metric").exists()


def test_every_paradigm_and_the_readme_loop_have_an_example() -> None:
    paradigms = {load_loop(path).paradigm for path in example_files()}
    names = {path.stem for path in example_files()}

    assert {"goal", "convergence", "invariants", "imperative"} <= paradigms
    assert {"hello", "tour"} <= names
    assert len(doc_loop_blocks()) >= 10


def test_readme_keeps_the_two_setup_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()

    assert README_INSTALL_AND_RUN in lines
    assert README_INSTALL_AND_TEST in lines


def test_readme_shows_what_hello_prints(tmp_path: Path) -> None:
    sample = README_HELLO_SAMPLE.search(README.read_text(encoding="utf-8"))
    assert sample is not None, (
        "README needs a ```text block starting with $ ll-loop run hello, "
        "then one starting with $ ll-loop resume hello"
    )
    project = copy_examples(tmp_path)

    paused = run_cli(project, "run", "hello")
    resumed = run_cli(project, "resume", "hello")

    assert paused.returncode == 3, paused.stdout + paused.stderr
    assert SECONDS.sub("s)", paused.stdout) == SECONDS.sub("s)", sample.group(1))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert SECONDS.sub("s)", resumed.stdout) == SECONDS.sub("s)", sample.group(2))


def heading_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as '-'."""
    kept = re.sub(r"[^\w\- ]", "", heading.lower())
    return kept.replace(" ", "-")


@pytest.mark.parametrize("markdown", sorted(DOCS_DIR.glob("*.md")), ids=lambda path: path.name)
def test_links_inside_a_doc_point_at_its_headings(markdown: Path) -> None:
    text = markdown.read_text(encoding="utf-8")
    anchors = {heading_anchor(heading) for heading in HEADING.findall(text)}

    broken = [link for link in ANCHOR_LINK.findall(text) if link not in anchors]

    assert broken == []


def test_heading_anchor_matches_github() -> None:
    assert heading_anchor("11. Files under `.loops/.running/`") == "11-files-under-loopsrunning"
    assert heading_anchor("3.5 `llm` keys") == "35-llm-keys"


def test_needs_claude_follows_the_slash_command_rule() -> None:
    def loop_with(action: str, action_type: str | None = None) -> FSMLoop:
        state: dict[str, object] = {"action": action, "next": "done"}
        if action_type is not None:
            state["action_type"] = action_type
        return FSMLoop.from_dict(
            {"name": "x", "initial": "a", "states": {"a": state, "done": {"terminal": True}}}
        )

    assert needs_claude(loop_with("/ll:check_code types"))
    assert not needs_claude(loop_with("/usr/bin/env true"))
    assert not needs_claude(loop_with("/ll:check_code", action_type="shell"))
    assert needs_claude(loop_with("echo hi", action_type="slash_command"))
