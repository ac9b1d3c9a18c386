"""Named changes to how a run proceeds, so a run already under way keeps the old way.

A local run lives and dies in one version of ll-loop. A Temporal run does not: its
workflow is replayed from its history on whichever worker picks it up, perhaps one
upgraded since the run started, and the replay must ask for the same activities and
timers, in the same order, as the run did. So a change to routing, guards or evaluators
that alters what a run asks its driver for (or where it goes) is written as

    if self._revised(SOME_CHANGE):
        ...the new way...
    else:
        ...the old way...

with `SOME_CHANGE` named here. The run core's `revised` hook answers: the local engine
says yes to all (`every_revision`); the workflow answers with `workflow.patched(name)`,
which is yes for a run that reaches the change after the upgrade and no when replaying a
history recorded before it. Once no run older than a change can be in flight, its old way
and its name can go (docs/scaling.md, "Upgrades").
"""

from __future__ import annotations

__all__ = [
    "BRANCH_PAUSES",
    "BUDGETS_OVER_PAUSES",
    "HEAD_RATE_LIMITS",
    "REVISIONS",
    "WORKSPACE_FINGERPRINT",
    "every_revision",
]

WORKSPACE_FINGERPRINT = "ll-loop:2026-11:workspace-fingerprint"
"""The stall guard compares the work tree through the driver (`InspectWorkspace`); before
it, the Temporal engine's guard compared only what the states said."""

HEAD_RATE_LIMITS = "ll-loop:2026-11:head-rate-limits"
"""A HEAD state's rate-limit keys drive its waits (§7.6) and an authentication failure of
its prompt goes straight to `on_error`; before it, such a state waited with the loop's
`rate_limit:` settings and routed the failure by its verdict."""

BRANCH_PAUSES = "ll-loop:2026-11:branch-pauses"
"""A handoff or a usage limit that ends an item of a `parallel:` fan-out pauses the run with
the item's place kept (as one inside a sub-loop does); before it, the item ended `no`."""

BUDGETS_OVER_PAUSES = "ll-loop:2026-11:budgets-over-pauses"
"""A child (sub-loop or fan-out item) that pauses the run keeps what its states with a
budget spent in its place, so their budgets go on counting after the resume; before it,
they counted again from nothing."""

REVISIONS = (WORKSPACE_FINGERPRINT, HEAD_RATE_LIMITS, BRANCH_PAUSES, BUDGETS_OVER_PAUSES)
"""Every named change, oldest first."""


def every_revision(name: str) -> bool:
    """The local engine's answer: it always runs the newest way."""
    return True
