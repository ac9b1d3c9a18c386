"""`ll-loop validate <loop>`: is this loop file usable, and what does it contain?"""

from __future__ import annotations

from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.output import Logger, write_error_line, write_line
from little_loops.cli.resolve import load_resolved, loop_file_stem
from little_loops.fsm.errors import LoopFileError


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
    logger.success(f"{loop_arg} is valid")
    write_line(f"  States: {', '.join(fsm.states)}")
    write_line(f"  Initial: {fsm.initial}")
    write_line(f"  Max iterations: {fsm.max_iterations}")
    stem = loop_file_stem(path)
    if fsm.name != stem:
        logger.warning(
            f"loop name '{fsm.name}' differs from the file name '{stem}': "
            f"its state and history are kept under '{fsm.name}'"
        )
    return OK
