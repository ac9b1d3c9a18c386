"""`ll-loop worker`: the process that runs a checkout's workflows and activities.

Started in each checkout, it polls the checkout's task queue (`names.task_queue_for`)
for both: the activities must run here (the action's files are here); the workflows may
run on any worker of the queue, so a worker may be told to take only one kind
(`Roles`): activities in the checkout, workflows on a machine of the team's choosing.
The workflow sandbox lets `little_loops` through: the run core is deterministic by
design (its clock and environment are injected).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from little_loops.fsm.temporal.activities import ACTIVITIES
from little_loops.fsm.temporal.child_workflow import ChildLoopWorkflow
from little_loops.fsm.temporal.scope_registry import ScopeRegistry
from little_loops.fsm.temporal.timeouts import Timeouts
from little_loops.fsm.temporal.workflow import LoopWorkflow
from little_loops.fsm.temporal.worktree_activities import WORKTREE_ACTIVITIES

__all__ = ["HEARTBEAT_THROTTLE", "Roles", "build_worker", "workflow_runner"]

HEARTBEAT_THROTTLE = timedelta(seconds=1)
"""Heartbeats reach the server at most this often: a `stop` reaches a running action
within about this time (it is delivered with a heartbeat's reply)."""


# Standard modules the run core imports only when it needs them (so a local run never
# loads them): imported inside a workflow, the sandbox would hand back restricted proxies
# (`datetime.fromtimestamp(now, ZoneInfo(...))` then fails), as it does not for modules
# imported at the top of `little_loops`, which passes through.
_LAZY_STANDARD_MODULES = ("zoneinfo", "hashlib", "uuid", "tempfile", "secrets")


def workflow_runner() -> SandboxedWorkflowRunner:
    restrictions = SandboxRestrictions.default.with_passthrough_modules(
        "little_loops", *_LAZY_STANDARD_MODULES
    )
    return SandboxedWorkflowRunner(restrictions=restrictions)


@dataclass(frozen=True)
class Roles:
    """What a worker polls its queue for. Temporal hands workflow tasks and activity tasks
    out separately, so a worker without one kind leaves those tasks to the queue's other
    workers."""

    workflows: bool = True
    activities: bool = True

    def __post_init__(self) -> None:
        if not (self.workflows or self.activities):
            raise ValueError("a worker must run workflows, activities or both")

    def describe(self) -> str:
        if self.workflows and self.activities:
            return "workflows and activities"
        return "workflows only" if self.workflows else "activities only"


def build_worker(
    client: Client, task_queue: str, roles: Roles | None = None, timeouts: Timeouts | None = None
) -> Worker:
    """A worker for `task_queue` with the loop workflow (and its sub-loops' child
    workflow) and the checkout's scope registry, the loop's activities, or both (`roles`,
    default both); of `timeouts` it uses the sticky queue's
    (`timeouts.Timeouts.sticky_seconds`)."""
    roles = roles or Roles()
    timeouts = timeouts or Timeouts()
    workflows = [LoopWorkflow, ChildLoopWorkflow, ScopeRegistry]
    return Worker(
        client,
        task_queue=task_queue,
        workflows=workflows if roles.workflows else [],
        activities=[*ACTIVITIES, *WORKTREE_ACTIVITIES] if roles.activities else [],
        workflow_runner=workflow_runner(),
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        sticky_queue_schedule_to_start_timeout=timeouts.sticky,
    )
