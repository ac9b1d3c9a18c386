"""`ll-loop show`: the outline, `--json`, and diagrams checked by the real parsers.

DOT output goes through graphviz's `dot` and Mermaid output through the `mermaid` npm
package's parser (`graphviz_dot` / `mermaid_parser` fixtures: skipped when missing
locally, failed when missing in CI).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fixtures.cli_support import run_cli, write_loop

from little_loops.cli.diagram import RunMarks, dot_text, mermaid_text, render_dot, render_mermaid
from little_loops.fsm.schema import FSMLoop

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(
    path for path in (REPO_ROOT / ".loops").glob("*.yaml") if not path.name.endswith(".fsm.yaml")
)

# State names that break a naive diagram: YAML-ish words, Mermaid/DOT keywords, dashes,
# quotes, backslashes, markup; and a route target known only at run time.
AWKWARD_LOOP = r"""
name: awkward
initial: "on"
stall_threshold: 2
on_stall: "say \"hi\""
context:
  next: "yes"
states:
  "on":
    action: echo on
    evaluate:
      type: output_contains
      pattern: on
    route:
      success: "yes"
      failure: ${context.next}
      _error: end
      _: $current
  "yes":
    action: echo yes
    max_visits: 2
    on_max_visits: "end"
    next: a-b
  a-b:
    action: echo dash
    on_success: "say \"hi\""
    on_failure: 'back\slash'
  "say \"hi\"":
    action: echo quote
    next: "<b>&#amp;|x|</b>"
  'back\slash':
    action: echo slash
    next: "end"
  "<b>&#amp;|x|</b>":
    action: echo markup
    next: "end"
  end:
    terminal: true
"""


def copy_examples(root: Path) -> None:
    shutil.copytree(REPO_ROOT / ".loops", root / ".loops", ignore=shutil.ignore_patterns(".*"))


def show(root: Path, *args: str) -> str:
    done = run_cli(root, "show", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_dot_accepts(dot: Path, text: str) -> str:
    rendered = subprocess.run(
        [str(dot), "-Tsvg"], input=text, capture_output=True, text=True, check=False
    )
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.stderr == ""  # no warnings either (a bad escape warns)
    return rendered.stdout


def assert_mermaid_accepts(parser: Path, files: list[Path]) -> None:
    checked = subprocess.run(
        ["node", str(parser), *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        cwd=parser.parent,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("\nok ") + checked.stdout.startswith("ok ") == len(files)


def run_tour_to_its_handoff(root: Path) -> None:
    paused = run_cli(root, "run", "tour")
    assert paused.returncode == 3, paused.stderr


# --- diagrams accepted by the real parsers ------------------------------------------------


@pytest.mark.slow
def test_dot_accepts_every_example_and_a_run_in_progress(
    tmp_path: Path, graphviz_dot: Path
) -> None:
    copy_examples(tmp_path)
    for example in EXAMPLES:
        assert_dot_accepts(graphviz_dot, show(tmp_path, example.stem, "--diagram", "dot"))
    run_tour_to_its_handoff(tmp_path)

    text = show(tmp_path, "tour", "--diagram", "dot")

    svg = assert_dot_accepts(graphviz_dot, text)
    assert "pause_here" in svg
    highlighted = (
        's5 [label="pause_here\\n1 visit", style="rounded,filled,bold", fillcolor="#ffd54f"'
    )
    assert highlighted in text


@pytest.mark.slow
def test_mermaid_parser_accepts_every_example_and_a_run_in_progress(
    tmp_path: Path, mermaid_parser: Path
) -> None:
    copy_examples(tmp_path)
    run_tour_to_its_handoff(tmp_path)
    files = []
    for example in EXAMPLES:
        path = tmp_path / f"{example.stem}.mmd"
        path.write_text(show(tmp_path, example.stem, "--diagram"), encoding="utf-8")
        files.append(path)
    awkward = tmp_path / "awkward.mmd"
    write_loop(tmp_path, "awkward", AWKWARD_LOOP)
    awkward.write_text(show(tmp_path, "awkward", "--diagram", "mermaid"), encoding="utf-8")

    assert_mermaid_accepts(mermaid_parser, [*files, awkward])
    assert "class s5 current" in (tmp_path / "tour.mmd").read_text()


@pytest.mark.slow
def test_mermaid_parser_rejects_a_broken_diagram(tmp_path: Path, mermaid_parser: Path) -> None:
    """The check can fail: an edge with no target is a parse error."""
    broken = tmp_path / "broken.mmd"
    broken.write_text('flowchart TD\n    s0 -->|"success"|\n', encoding="utf-8")

    with pytest.raises(AssertionError, match="FAIL"):
        assert_mermaid_accepts(mermaid_parser, [broken])


def test_awkward_names_make_a_dot_graph_with_every_state_and_a_note(
    tmp_path: Path, graphviz_dot: Path
) -> None:
    write_loop(tmp_path, "awkward", AWKWARD_LOOP)

    text = show(tmp_path, "awkward", "--diagram", "dot")

    svg = assert_dot_accepts(graphviz_dot, text)
    for label in ("on", "yes", "a&#45;b", "say &quot;hi&quot;", "back\\slash", "end"):
        assert f">{label}</text>" in svg
    assert "&lt;b&gt;&amp;#amp;|x|&lt;/b&gt;" in svg
    assert 'n0 [label="${context.next}", shape=note, style="dashed"]' in text
    assert 's0 -> n0 [label="failure", style=dashed]' in text
    assert 's0 -> s0 [label="_"]' in text  # $current
    assert 's1 -> s6 [label="on_max_visits", style=dashed]' in text
    assert 'stall0 -> s3 [label="on_stall", style=dashed]' in text
    assert 's6 [label="end", shape=doublecircle' in text


# --- labels are escaped (pure functions) ----------------------------------------------------


def test_labels_are_escaped_for_each_language() -> None:
    assert dot_text('say "hi" \\ now\nnext') == '"say \\"hi\\" \\\\ now\\nnext"'
    assert (
        mermaid_text('a "b" <c> & #d; |e|') == "a #quot;b#quot; #lt;c#gt; #amp; #35;d; #124;e#124;"
    )


def test_current_state_and_visits_marked_in_both_languages() -> None:
    fsm = FSMLoop.from_dict(
        {"name": "m", "initial": "a", "states": {"a": {"next": "b"}, "b": {"terminal": True}}}
    )
    marks = RunMarks(current_state="a", visits={"a": 3, "b": 1})

    assert 's0 [label="a\\n3 visits", style="rounded,filled,bold"' in render_dot(fsm, marks)
    mermaid = render_mermaid(fsm, marks)
    assert 's0(["a<br>3 visits"])' in mermaid
    assert 's1((("b<br>1 visit")))' in mermaid
    assert "class s0 current" in mermaid


# --- the outline and --json ---------------------------------------------------------------


def test_outline_shows_limits_guards_handoff_and_states(tmp_path: Path) -> None:
    copy_examples(tmp_path)

    text = show(tmp_path, "implementer-demo")

    assert "Loop: implementer-demo\n" in text
    assert "Limits: max_iterations 20, no timeout, logs_keep 100\n" in text
    assert "Guards: stall_threshold 3, stall ends the run, max_visits resume=10\n" in text
    assert "Handoff: continue (at most 3 continuations)\n" in text
    assert (
        "  resume\n    action:   cd ${context.workdir} && rm -f .return-meta.json"
        " && sh ${context.agent...\n" in text
    )
    assert "    evaluate: return_metadata\n" in text
    assert "    partial -> resume\n" in text
    assert "    on_max_visits -> gave_up\n" in text
    assert "  done [terminal]\n" in text


def test_outline_names_the_default_stall_threshold_of_continue_loops(tmp_path: Path) -> None:
    write_loop(
        tmp_path,
        "unattended",
        "name: unattended\ninitial: a\non_handoff: continue\n"
        "states:\n  a:\n    action: echo\n    next: b\n  b:\n    terminal: true\n",
    )

    text = show(tmp_path, "unattended")

    assert "Guards: stall_threshold 3 (default for on_handoff: continue), stall ends" in text


def test_json_outline_with_the_run(tmp_path: Path) -> None:
    copy_examples(tmp_path)
    run_tour_to_its_handoff(tmp_path)

    view = json.loads(show(tmp_path, "tour", "--json"))

    assert view["name"] == "tour"
    assert view["guards"] == {
        "stall_threshold": 0,
        "stall_threshold_set": False,
        "on_stall": None,
        "max_visits": {},
    }
    assert view["handoff"] == {"on_handoff": "pause", "max_continuations": 5}
    assert view["states"][0]["routes"] == [
        {"on": "success", "to": "report"},
        {"on": "failure", "to": "$current"},
        {"on": "_error", "to": "wrong_turn"},
    ]
    assert view["run"]["status"] == "awaiting_continuation"
    assert view["run"]["current_state"] == "pause_here"
    assert view["run"]["visits"] == {name: 1 for name in list(view["run"]["visits"])}
    assert set(view["run"]["visits"]) == {
        "measure",
        "report",
        "echo_prev",
        "bad_number",
        "recover",
        "pause_here",
    }


def test_visits_come_from_the_state_file_when_it_has_them(tmp_path: Path) -> None:
    copy_examples(tmp_path)
    run_tour_to_its_handoff(tmp_path)
    state_file = tmp_path / ".loops" / ".running" / "tour.state.json"
    state = json.loads(state_file.read_text())
    state["visits"] = {"measure": 7}
    state_file.write_text(json.dumps(state))

    view = json.loads(show(tmp_path, "tour", "--json"))

    assert view["run"]["visits"] == {"measure": 7}
    assert 's0 [label="measure\\n7 visits"]' in show(tmp_path, "tour", "--diagram", "dot")


def test_unreadable_state_file_shows_the_loop_without_the_run(tmp_path: Path) -> None:
    copy_examples(tmp_path)
    running = tmp_path / ".loops" / ".running"
    running.mkdir()
    (running / "tour.state.json").write_text("{not json")

    done = run_cli(tmp_path, "show", "tour", "--json")

    assert done.returncode == 0
    assert json.loads(done.stdout)["run"] is None
    assert "Not showing the run: unreadable state file .loops/.running/tour.state.json: " in (
        done.stderr
    )


def test_show_of_a_missing_loop_says_so_exit_1(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "show", "nope")

    assert done.returncode == 1
    assert "Loop not found: nope" in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_diagram_format_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "show", "x", "--diagram", "png")

    assert done.returncode == 2
    assert "invalid choice: 'png'" in done.stderr
