"""`ll-loop validate <loop>`: is this loop file usable, and what does it contain?

A HEAD file (spec/ll-head-dialect.md §1.1) also gets the line `  dialect: head` and its
caps as HEAD names them, and a WARNING when it has no `description` (§2.1). A legacy file's
output is unchanged (its exact lines are pinned by tests and scripts), so `dialect: legacy`
is never printed: a file without the line is legacy.
"""

from __future__ import annotations

from pathlib import Path

from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.output import Logger, write_error_line, write_line
from little_loops.cli.resolve import load_resolved, loop_file_stem
from little_loops.fsm.errors import LoopFileError
from little_loops.fsm.judging.llm_needs import llm_sdk_available, missing_llm_problem
from little_loops.fsm.loading.warning_lines import warning_line
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.head_loop import HeadLoop


def validate_command(loop_arg: str) -> int:
    """Print the loop's outline (exit 0) or every problem, one per line (exit 1)."""
    logger = Logger()
    try:
        path, fsm = load_resolved(loop_arg)
    except LoopFileError as exc:
        logger.error(f"{loop_arg} is invalid:")
        for line in exc.user_lines():
            write_error_line(f"  {line}")
        return FAILED
    problem = None if llm_sdk_available() else missing_llm_problem(fsm)
    if problem is not None:  # its run would be refused (issue 23 item 8)
        logger.error(f"{loop_arg} is invalid:")
        write_error_line(f"  {problem}")
        return FAILED
    logger.success(f"{loop_arg} is valid")
    write_line(f"  States: {states_text(list(fsm.states))}")
    write_line(f"  Initial: {fsm.initial}")
    if isinstance(fsm, HeadLoop):
        _print_head_outline(fsm, path)
    else:
        write_line(f"  Max iterations: {fsm.max_iterations}")
    stem = loop_file_stem(path)
    if fsm.name != stem:
        logger.warning(
            f"loop name '{fsm.name}' differs from the file name '{stem}': "
            f"its state and history are kept under '{fsm.name}'"
        )
    return OK


def _print_head_outline(fsm: HeadLoop, path: Path) -> None:
    write_line(f"  Max steps: {fsm.max_steps}")
    if fsm.max_passes is not None:
        write_line(f"  Max iterations: {fsm.max_passes}")
    write_line(f"  dialect: {fsm.dialect}")
    if not fsm.description:
        warning = ValidationError(
            "a loop without a description (list and show print it)",
            "description",
            ValidationSeverity.WARNING,
        )
        write_error_line(warning_line(warning, path, head=True))


STATES_WIDTH = 200
"""Longest `States:` list printed whole; a larger loop's is cut and counted."""


def states_text(names: list[str]) -> str:
    """`a, b, c`; for a loop whose list would be longer than `STATES_WIDTH`, the first
    names that fit and `... (1000 states)` (a line of thousands of characters helps no one)."""
    whole = ", ".join(names)
    if len(whole) <= STATES_WIDTH:
        return whole
    shown: list[str] = []
    for name in names:
        if len(", ".join([*shown, name])) > STATES_WIDTH:
            break
        shown.append(name)
    return f"{', '.join(shown)}, ... ({len(names)} states)"
