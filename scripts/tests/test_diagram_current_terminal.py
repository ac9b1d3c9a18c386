"""`ll-loop show --diagram` of a run that ended in a terminal state marks that state as
the current one (issue 29 item 7): in Mermaid it has both the `terminal` and the
`current` class (`current` last, so its colour wins), in DOT the current fill. A real run
of a real loop file in `tmp_path`, then the real `ll-loop show`."""

from __future__ import annotations

from pathlib import Path

from fixtures.cli_support import run_cli, write_loop

LOOP = """\
name: small
initial: work
states:
  work:
    action: echo hi
    next: done
  done:
    terminal: true
"""


def _ran(tmp_path: Path) -> Path:
    write_loop(tmp_path, "small", LOOP)
    assert run_cli(tmp_path, "run", "small", "-q").returncode == 0
    return tmp_path


def test_mermaid_marks_the_terminal_state_a_run_ended_in_as_current(tmp_path: Path) -> None:
    shown = run_cli(_ran(tmp_path), "show", "small", "--diagram", "mermaid")
    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout == (
        "flowchart TD\n"
        '    start(("start"))\n'
        '    s0(["work<br>1 visit"])\n'
        '    s1((("done")))\n'
        "    start --> s0\n"
        '    s0 -->|"next"| s1\n'
        "    classDef current fill:#ffd54f,stroke:#e65100,stroke-width:3px\n"
        "    classDef terminal fill:#e0e0e0\n"
        "    classDef note stroke-dasharray:4 4\n"
        "    class s1 terminal\n"
        "    class s1 current\n"
    )


def test_dot_fills_the_terminal_state_a_run_ended_in_as_current(tmp_path: Path) -> None:
    shown = run_cli(_ran(tmp_path), "show", "small", "--diagram", "dot")
    assert shown.returncode == 0
    assert (
        '    s1 [label="done", shape=doublecircle, style="filled,bold", '
        'fillcolor="#ffd54f", penwidth=2];\n'
    ) in shown.stdout
