"""Exit codes of `ll-loop`, the map from a run's outcome to a code, and the help table.

0 keeps meaning "terminal state reached" (or "valid") and 2 keeps meaning "usage error",
as in the reference; the other outcomes get their own codes so scripts can tell them apart.
"""

from __future__ import annotations

OK = 0
FAILED = 1
USAGE = 2
HANDOFF = 3
MAX_ITERATIONS = 4
STALLED = 5
BUSY = 6  # already running, or a running loop shares the scope (not a run outcome)
USAGE_LIMITED = 7
BUDGET_EXHAUSTED = 8
BROKEN_PIPE = 141
INTERRUPTED = 130

# `terminated_by` of an ExecutionResult -> exit code. Anything unknown is a failure.
_BY_OUTCOME = {
    "terminal": OK,
    "signal_stop": OK,
    "error": FAILED,
    "timeout": FAILED,
    "handoff": HANDOFF,
    "max_iterations": MAX_ITERATIONS,
    "stalled": STALLED,
    "signal": INTERRUPTED,
    "usage_limited": USAGE_LIMITED,
    "budget_exhausted": BUDGET_EXHAUSTED,
    # HEAD loops (fsm/engine/head_endings.py)
    "failure_terminal": FAILED,
    "max_steps": MAX_ITERATIONS,
    "max_iterations_reached": MAX_ITERATIONS,
    "cycle_detected": STALLED,
    "stall_detected": STALLED,
}

EXIT_CODE_TABLE = """\
exit codes:
  0    terminal state reached, or LOOP_STOP (validate: the loop is valid)
  1    loop failed (error, FATAL_ERROR, loop timeout, no route), loop not found or invalid
  2    command-line usage error
  3    context handoff: paused (ll-loop resume <loop>), or spawned/ended as on_handoff says
  4    max_iterations (max_steps) reached (maintain: true loops always end here or on timeout)
  5    stalled (a guard stopped a loop going round in circles; cycle or repeated failure)
  6    not started: the loop is already running, or a running loop shares its scope
  7    usage limit: Claude's limit resets beyond rate_limit.max_wait (resume after it)
  8    budget reached: max_cost_usd / --max-cost (resume with a higher --max-cost)
  130  interrupted (Ctrl-C, SIGTERM, ll-loop stop)
  141  stdout closed early (e.g. ll-loop list | head -1)"""


def exit_code_for(terminated_by: str) -> int:
    """The exit code for a run that ended with `terminated_by`."""
    return _BY_OUTCOME.get(terminated_by, FAILED)
