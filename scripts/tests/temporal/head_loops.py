"""The HEAD parent and child loops the Temporal tests of sub-loops share: the parent runs
the child with a parameter, then reports what it counted; the child marks each state it
finishes in `child-steps`, and its check first runs `WAIT` (a command the test chooses)."""

from __future__ import annotations

PARENT = """\
name: parent
description: Run a child with a parameter, then report.
initial: count
states:
  count:
    loop: child
    with: {target: 2}
    on_yes: report
    on_no: failed
  report:
    action: "echo reached ${captured.count.tally.output}"
    capture: said
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""

CHILD = """\
name: child
description: Count to the target, marking each step it runs in a file.
initial: first
parameters:
  target: {type: integer, required: true}
states:
  first:
    action: "echo first >> child-steps; printf 0"
    capture: tally
    next: bump
  bump:
    action: "echo bump >> child-steps; printf %d $(( ${captured.tally.output} + 1 ))"
    capture: tally
    next: check
  check:
    action: "echo check >> child-steps; WAIT; test ${captured.tally.output} -ge ${context.target}"
    on_yes: reached
    on_no: bump
  reached: {terminal: true}
"""


def child_waiting_with(command: str) -> str:
    """The child loop whose check runs `command` first."""
    return CHILD.replace("WAIT", command)
