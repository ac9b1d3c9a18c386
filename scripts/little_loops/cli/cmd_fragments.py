"""`ll-loop fragments <library>`: the fragments a library offers (spec/ll-head-dialect.md §5).

A library is any YAML file; its `fragments:` mapping names state templates that HEAD
loops use with `import: [<library>]` and `fragment: <name>`. One line per fragment: its
name and the first line of its description.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.output import Logger, write_error_line, write_line
from little_loops.cli.resolve import LOOPS_DIR
from little_loops.fsm.errors import LoopError
from little_loops.fsm.loading.fragments import library_fragments
from little_loops.fsm.loading.pipeline import read_yaml_values


def library_candidates(arg: str) -> list[Path]:
    """Where the library `arg` may live: as given, then under `.loops/`."""
    return [Path(arg), LOOPS_DIR / arg, LOOPS_DIR / f"{arg}.yaml", LOOPS_DIR / f"{arg}.yml"]


def fragment_lines(fragments: dict[str, Any]) -> list[str]:
    """`name  first line of the description`, names aligned."""
    width = max(len(str(name)) for name in fragments)
    lines = []
    for name, body in fragments.items():
        description = body.get("description") if isinstance(body, dict) else None
        text = description.strip() if isinstance(description, str) else ""
        first = (text.splitlines() or [""])[0]
        lines.append(f"  {name!s:<{width}}  {first}".rstrip())
    return lines


def fragments_command(library: str) -> int:
    """List the fragments of `library` (exit 0), or say why it cannot be read (exit 1)."""
    logger = Logger()
    candidates = library_candidates(library)
    path = next((candidate for candidate in candidates if candidate.is_file()), None)
    if path is None:
        logger.error(f"Fragment library not found: {library}")
        write_error_line(f"  looked in: {', '.join(map(str, candidates))}")
        return FAILED
    try:
        fragments = library_fragments(read_yaml_values(path))
    except LoopError as exc:
        logger.error(f"{library} cannot be read:")
        for line in exc.user_lines():
            write_error_line(f"  {line}")
        return FAILED
    if not fragments:
        write_line(f"{path}: no fragments")
        return OK
    write_line(f"{path}: {len(fragments)} fragment{'s' if len(fragments) != 1 else ''}")
    for line in fragment_lines(fragments):
        write_line(line)
    return OK
