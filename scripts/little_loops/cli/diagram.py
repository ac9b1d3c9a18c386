"""A loop's state graph as Mermaid or Graphviz DOT text (pure functions, no I/O).

Nodes get generated ids (`s0`, `s1`, ...) and carry the state name as a quoted, escaped
label, so any state name (`on`, `end`, `a-b`, `say "hi"`) is safe in either language.
Terminal states are drawn as double circles, the initial state has an arrow from a start
point, guard redirects (`on_max_visits`, `on_stall`) are dashed, and a target only known
at run time (`${...}`) is a dashed edge to a note holding the template. A sub-loop state
(`loop:`, little-loops' current dialect) is a double-edged box naming its child, with the
command that draws the child as its tooltip, so the picture can be followed into it. With a
run, the current state is highlighted and every state shows how often it was entered.

Rendering to SVG or PNG is left to `dot -Tsvg` and `mmdc` (see docs/user-guide.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from little_loops.cli.loop_graph import STALL_SOURCE, Edge, loop_edges, merged_edges
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.parallel_config import parallel_of
from little_loops.fsm.schema import FSMLoop

CURRENT_FILL = "#ffd54f"
TERMINAL_FILL = "#e0e0e0"


@dataclass(frozen=True)
class RunMarks:
    """What a run adds to the picture: where it is and how often each state was entered."""

    current_state: str | None = None
    visits: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Node:
    node_id: str
    label: str
    kind: str  # "state", "terminal", "note", "stall" or "subloop"
    current: bool = False
    child: str | None = None  # a sub-loop state's child loop


def _nodes_and_edges(
    fsm: FSMLoop, marks: RunMarks
) -> tuple[dict[str, _Node], list[tuple[str, str, Edge]]]:
    """Nodes keyed by what edges name (`state:x`, `note:${...}`), and edges by node id."""
    nodes: dict[str, _Node] = {}
    for index, (name, state) in enumerate(fsm.states.items()):
        label = name
        if name in marks.visits:
            count = marks.visits[name]
            label += f"\n{count} visit" + ("" if count == 1 else "s")
        kind = "terminal" if state.terminal else "state"
        child = state.loop if isinstance(state, HeadStateConfig) else None
        if child:
            kind, label = "subloop", f"{label}\n[sub-loop: {child}]"
        fanout = parallel_of(state)
        if fanout is not None:  # issue 25: the child, once per item
            child, kind = fanout.loop, "subloop"
            label += f"\n[parallel: {child} per item, {fanout.max_workers} at once]"
        current = name == marks.current_state
        nodes[f"state:{name}"] = _Node(f"s{index}", label, kind, current, child or None)
    edges: list[tuple[str, str, Edge]] = []
    for edge in merged_edges(loop_edges(fsm)):
        source = _node_for(nodes, edge.source, is_state=edge.source != STALL_SOURCE, stall=True)
        target = _node_for(nodes, edge.target, is_state=edge.target_is_state, stall=False)
        edges.append((source.node_id, target.node_id, edge))
    return nodes, edges


def _node_for(nodes: dict[str, _Node], name: str, *, is_state: bool, stall: bool) -> _Node:
    if is_state:
        return nodes[f"state:{name}"]
    key = f"stall:{name}" if stall else f"note:{name}"
    if key not in nodes:
        prefix = "stall" if stall else "n"
        count = sum(1 for existing in nodes if existing.startswith(key.split(":")[0]))
        nodes[key] = _Node(f"{prefix}{count}", name, "stall" if stall else "note")
    return nodes[key]


def _is_dashed(edge: Edge) -> bool:
    return edge.guard or not edge.target_is_state


# --- Mermaid (flowchart) ------------------------------------------------------------------


def mermaid_text(text: str) -> str:
    """`text` for a double-quoted Mermaid label: entity codes for what the parser reads."""
    replacements = {
        "#": "#35;",
        '"': "#quot;",
        "<": "#lt;",
        ">": "#gt;",
        "&": "#amp;",
        "|": "#124;",
        "`": "#96;",
    }
    escaped = "".join(replacements.get(char, char) for char in text)
    return escaped.replace("\r", "").replace("\n", "<br>")


def render_mermaid(fsm: FSMLoop, marks: RunMarks | None = None) -> str:
    """`flowchart TD` text for `fsm`; paste into Markdown or render with `mmdc`."""
    nodes, edges = _nodes_and_edges(fsm, marks or RunMarks())
    lines = ["flowchart TD", '    start(("start"))']
    for node in nodes.values():
        lines.append(f"    {node.node_id}{_mermaid_shape(node)}")
    lines.append(f"    start --> {nodes[f'state:{fsm.initial}'].node_id}")
    for source, target, edge in edges:
        arrow = "-.->" if _is_dashed(edge) else "-->"
        lines.append(f'    {source} {arrow}|"{mermaid_text(edge.label)}"| {target}')
    lines += [
        f"    classDef current fill:{CURRENT_FILL},stroke:#e65100,stroke-width:3px",
        f"    classDef terminal fill:{TERMINAL_FILL}",
        "    classDef note stroke-dasharray:4 4",
    ]
    for class_name, ids in _mermaid_classes(nodes).items():
        if ids:
            lines.append(f"    class {','.join(ids)} {class_name}")
    for node in nodes.values():
        if node.child is not None:
            lines.append(
                f'    click {node.node_id} "#" "{mermaid_text(follow_command(node.child))}"'
            )
    return "\n".join(lines) + "\n"


def follow_command(child: str) -> str:
    """What draws a sub-loop state's child (its tooltip in the diagrams)."""
    return f"ll-loop show {child} --diagram"


def _mermaid_shape(node: _Node) -> str:
    label = f'"{mermaid_text(node.label)}"'
    if node.kind == "terminal":
        return f"((({label})))"
    if node.kind in ("note", "stall"):
        return f">{label}]"
    if node.kind == "subloop":
        return f"[[{label}]]"  # Mermaid's subroutine box
    return f"([{label}])"


def _mermaid_classes(nodes: dict[str, _Node]) -> dict[str, list[str]]:
    classes: dict[str, list[str]] = {"terminal": [], "note": [], "current": []}
    for node in nodes.values():
        if node.kind == "terminal":
            classes["terminal"].append(node.node_id)
        elif node.kind in ("note", "stall"):
            classes["note"].append(node.node_id)
        if node.current:
            classes["current"].append(node.node_id)  # last, so it wins over terminal
    return classes


# --- Graphviz DOT -------------------------------------------------------------------------


def dot_text(text: str) -> str:
    """`text` as a double-quoted DOT string whose label shows it as written."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


def render_dot(fsm: FSMLoop, marks: RunMarks | None = None) -> str:
    """A `digraph` for `fsm`; `dot -Tsvg` renders it."""
    nodes, edges = _nodes_and_edges(fsm, marks or RunMarks())
    lines = [
        f"digraph {dot_text(fsm.name)} {{",
        "    rankdir=TB;",
        '    node [shape=box, style="rounded", fontname="Helvetica"];',
        '    edge [fontname="Helvetica", fontsize=10];',
        '    start [shape=point, width=0.15, label=""];',
    ]
    for node in nodes.values():
        lines.append(f"    {node.node_id} [{_dot_attributes(node)}];")
    lines.append(f"    start -> {nodes[f'state:{fsm.initial}'].node_id};")
    for source, target, edge in edges:
        style = ", style=dashed" if _is_dashed(edge) else ""
        lines.append(f"    {source} -> {target} [label={dot_text(edge.label)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_attributes(node: _Node) -> str:
    attributes = [f"label={dot_text(node.label)}"]
    if node.kind == "terminal":
        attributes.append("shape=doublecircle")
    elif node.kind in ("note", "stall"):
        attributes.append('shape=note, style="dashed"')
    elif node.child is not None:
        attributes.append(f"peripheries=2, tooltip={dot_text(follow_command(node.child))}")
    if node.current:
        shape = "filled,bold" if node.kind == "terminal" else "rounded,filled,bold"
        attributes.append(f'style="{shape}", fillcolor="{CURRENT_FILL}", penwidth=2')
    elif node.kind == "terminal":
        attributes.append(f'style="filled", fillcolor="{TERMINAL_FILL}"')
    return ", ".join(attributes)


def render_diagram(fsm: FSMLoop, diagram_format: str, marks: RunMarks | None = None) -> str:
    """The diagram of `fsm` in `diagram_format` (one of `DIAGRAM_FORMATS`, cli/output.py)."""
    if diagram_format == "dot":
        return render_dot(fsm, marks)
    return render_mermaid(fsm, marks)
