"""`ll-loop worker`: the process that runs a checkout's workflows and activities.

Started in each checkout, it polls the checkout's task queue (`names.task_queue_for`)
for both: the activities must run here (the action's files are here); the workflows may
run on any worker of the queue. The workflow sandbox lets `little_loops` through: the run
core is deterministic by design (its clock and environment are injected).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from little_loops.fsm.temporal.activities import ACTIVITIES
from little_loops.fsm.temporal.scope_registry import ScopeRegistry
from little_loops.fsm.temporal.workflow import LoopWorkflow

__all__ = ["HEARTBEAT_THROTTLE", "build_worker", "workflow_runner"]

HEARTBEAT_THROTTLE = timedelta(seconds=1)
"""Heartbeats reach the server at most this often: a `stop` reaches a running action
within about this time (it is delivered with a heartbeat's reply)."""


def workflow_runner() -> SandboxedWorkflowRunner:
    restrictions = SandboxRestrictions.default.with_passthrough_modules("little_loops")
    return SandboxedWorkflowRunner(restrictions=restrictions)


def build_worker(client: Client, task_queue: str) -> Worker:
    """A worker for `task_queue` with the loop workflow, its activities and the
    checkout's scope registry."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[LoopWorkflow, ScopeRegistry],
        activities=ACTIVITIES,
        workflow_runner=workflow_runner(),
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
    )
