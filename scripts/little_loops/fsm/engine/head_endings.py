"""How a HEAD run can end besides the legacy ways: the `terminated_by` values of
spec/ll-head-dialect.md §2.2 (`failure`), §7.3–§7.5 and §7.7.

The store maps each to a saved status and the CLI to an exit code (`cli/exit_codes.py`,
`store/run_record.FINAL_STATUSES`); a legacy run never ends with one of them.
"""

from __future__ import annotations

__all__ = [
    "CAP_ENDINGS",
    "CYCLE_DETECTED",
    "FAILURE_TERMINAL",
    "MAX_PASSES_REACHED",
    "MAX_STEPS",
    "STALL_DETECTED",
]

# The run reached a terminal state marked `failure` (status `failed`, exit 1).
FAILURE_TERMINAL = "failure_terminal"
# The step cap (`max_steps`) and the pass cap (`max_iterations` beside `max_steps`):
# resumable like the legacy iteration limit (exit 4).
MAX_STEPS = "max_steps"
MAX_PASSES_REACHED = "max_iterations_reached"
CAP_ENDINGS = frozenset({MAX_STEPS, MAX_PASSES_REACHED})
# An edge taken more than `max_edge_revisits` times; `circuit.repeated_failure` aborting.
# Both are reported as stalled (exit 5).
CYCLE_DETECTED = "cycle_detected"
STALL_DETECTED = "stall_detected"
