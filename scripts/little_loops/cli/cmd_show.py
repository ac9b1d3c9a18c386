"""`ll-loop show <loop>`: the loop at a glance, as text, JSON, or a Mermaid/DOT diagram.

With a run of the loop saved under `.loops/.running/`, the run's status, current state
and visits per state are shown too (the diagram highlights the current state).

`--json` of a loop file in today's little-loops dialect prints the file as written, as
little-loops does (spec/ll-head-dialect.md §6), so scripts written for it keep reading
`states.<name>.action`; a legacy file's `--json` is the outline, as before.
"""

from __future__ import annotations

import json

from little_loops.cli.diagram import RunMarks, render_diagram
from little_loops.cli.exit_codes import OK
from little_loops.cli.loop_outline import outline, outline_lines
from little_loops.cli.output import write_line
from little_loops.cli.resolve import LOOPS_DIR, load_resolved
from little_loops.cli.run_marks import latest_run, run_marks
from little_loops.fsm.loading.pipeline import load_loop_mapping
from little_loops.fsm.model.head_loop import is_head


def show_command(loop_arg: str, *, diagram: str | None = None, as_json: bool = False) -> int:
    """Print the outline (or `diagram`: "mermaid"/"dot"; or JSON) of a loop; exit 0."""
    path, fsm = load_resolved(loop_arg)
    if as_json and diagram is None and is_head(fsm):
        write_line(json.dumps(load_loop_mapping(path), indent=2, default=str))
        return OK
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
