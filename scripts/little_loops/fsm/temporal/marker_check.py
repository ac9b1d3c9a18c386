"""Whether the workflow a `.on-temporal` marker names is still open (`store.temporal_markers`).

Asked by a local run only when a marker concerns its loop: one connection, one describe.
"""

from __future__ import annotations

import asyncio

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

__all__ = ["CHECK_TIMEOUT_SECONDS", "workflow_is_open"]

CHECK_TIMEOUT_SECONDS = 5.0
"""How long a local run waits for the marker's server before it goes on without it."""


def workflow_is_open(address: str, namespace: str, workflow_id: str) -> bool:
    """True while the latest run of `workflow_id` is open (a continue-as-new goes on)."""
    asking = _is_open(address, namespace, workflow_id)
    return asyncio.run(asyncio.wait_for(asking, CHECK_TIMEOUT_SECONDS))


async def _is_open(address: str, namespace: str, workflow_id: str) -> bool:
    try:
        client = await Client.connect(address, namespace=namespace)
    except RuntimeError as exc:
        from little_loops.fsm.temporal.client import connect_problem

        raise ConnectionError(connect_problem(str(exc))) from None
    try:
        described = await client.get_workflow_handle(workflow_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return described.status == WorkflowExecutionStatus.RUNNING
