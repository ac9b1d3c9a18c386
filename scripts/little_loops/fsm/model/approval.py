"""A person's approval as a state (`action_type: human_approval`, issue 26 item 2).

The words both dialects share: the action type, the answers a person gives, the verdicts
an approval state routes by. The records of a question being waited on and of its answer
are in `approval_records` (loaded by a run that asks a person; still importable from here).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "APPROVAL_ROUTE_KEYS",
    "AWAITING_APPROVAL",
    "HUMAN_APPROVAL",
    "asks_a_person",
    "is_approval",
]

HUMAN_APPROVAL = "human_approval"
"""The `action_type` of a state that asks a person and waits for the answer."""

AWAITING_APPROVAL = "awaiting_approval"
"""The status of a run waiting for a person's answer (its process is alive)."""

# The routes of an approval state, by the verdict each answer gives.
APPROVAL_ROUTE_KEYS = {"on_yes": "yes", "on_no": "no", "on_edit": "edit", "on_timeout": "timeout"}


def is_approval(state: Any) -> bool:
    """Whether a built state asks a person (`action_type: human_approval`)."""
    return getattr(state, "action_type", None) == HUMAN_APPROVAL


def asks_a_person(loop: Any) -> bool:
    """Whether a built loop has a `human_approval` state."""
    return any(is_approval(state) for state in loop.states.values())


def __getattr__(name: str) -> Any:
    """`ApprovalAnswer` and `PendingApproval`, from `approval_records`, on first use."""
    if name in ("ANSWERS", "ApprovalAnswer", "PendingApproval"):
        # By name: their old home stays importable without an import of `approval_records`.
        return getattr(importlib.import_module("little_loops.fsm.model.approval_records"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
