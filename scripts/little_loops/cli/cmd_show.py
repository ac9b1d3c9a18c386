"""`ll-loop show <loop>`: the loop at a glance, as text, JSON, or a Mermaid/DOT diagram.

With a run of the loop saved under `.loops/.running/`, the run's status, current state
and visits per state are shown too (the diagram highlights the current state).
"""

from __future__ import annotations

import json

from little_loops.cli.diagram import RunMarks, render_diagram
from little_loops.cli.exit_codes import OK
from little_loops.cli.loop_outline import outline, outline_lines
from little_loops.cli.output import write_line
from little_loops.cli.resolve import LOOPS_DIR, load_resolved
from little_loops.cli.run_marks import latest_run, run_marks


def show_command(loop_arg: str, *, diagram: str | None = None, as_json: bool = False) -> int:
    """Print the outline (or `diagram`: "mermaid"/"dot"; or JSON) of a loop; exit 0."""
    _, fsm = load_resolved(loop_arg)
    run = latest_run(fsm.name, LOOPS_DIR)
    marks = run_marks(run, LOOPS_DIR) if run is not None else None
    if diagram is not None:
        text = render_diagram(fsm, diagram, marks or RunMarks())
        if as_json:
            write_line(json.dumps({"format": diagram, "diagram": text}))
        else:
            write_line(text.rstrip("\n"))
        return OK
    view = outline(fsm, run, marks)
    if as_json:
        write_line(json.dumps(view, indent=2))
    else:
        for line in outline_lines(view):
            write_line(line)
    return OK
