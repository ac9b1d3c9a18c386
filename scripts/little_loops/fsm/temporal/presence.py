"""Whether a worker runs a checkout's workflows, and what to say when none does.

A run on Temporal needs a worker that takes its workflow tasks (`ll-loop worker` in the
checkout, or one with `--workflows-only` for its queue). Without one the server keeps the
run, and every query of it fails once its time limit (30 s) has passed. The client asks
the server for the queue's pollers first, so a missing worker is said at once, in one
line, and a run being followed waits for one instead of failing.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable

from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from little_loops.fsm.errors import LoopError

__all__ = [
    "WORKER_POLL_SECONDS",
    "NoWorkflowWorkerError",
    "is_unanswered",
    "polls_as",
    "stop_pending",
    "wait_for_workflow_worker",
    "workflow_worker_polls",
]

WORKER_POLL_SECONDS = 1.0
"""How often a client waiting for a worker asks the server whether one polls."""


class NoWorkflowWorkerError(LoopError):
    """No worker runs the workflows of the run's task queue (exit 1, one line); with
    `polling`, one polls the queue but did not answer for this run in time (busy, paused,
    or not yet given the run: issue 23 item 9)."""

    def __init__(self, task_queue: str, *, polling: bool = False) -> None:
        if polling:
            said = (
                f"a worker polls the workflows of task queue '{task_queue}' but did not "
                "answer for this run in time (busy, paused, or not given the run yet); "
                "ask again in a moment"
            )
        else:
            said = (
                f"no worker runs the workflows of task queue '{task_queue}' (start `ll-loop "
                "worker` in that checkout); the run waits on the server until one does"
            )
        super().__init__(said)
        self.task_queue = task_queue
        self.polling = polling


def stop_pending(loop_name: str, task_queue: str, workflow_id: str | None = None) -> str:
    """What a stop asked for while no worker runs the workflow does: the server keeps
    the request, and the run ends when a worker takes it; to end it at once without a
    worker, Temporal's own command (issue 23 item 23)."""
    said = (
        f"Stop requested for {loop_name}: no worker runs its workflow (task queue "
        f"'{task_queue}'), so it stops when one does"
    )
    if workflow_id is None:
        return said
    return (
        f"{said}; to end it now without a worker (it cannot be resumed then): "
        f"temporal workflow terminate --workflow-id {workflow_id}"
    )


def is_unanswered(exc: RPCError) -> bool:
    """Whether a query failed because no worker answered it: the server's time limit
    (DEADLINE_EXCEEDED), the client's (CANCELLED), or the server's word that the queue's
    worker went quiet (FAILED_PRECONDITION, "no poller seen for task queue recently")."""
    if exc.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
        return True
    return exc.status == RPCStatusCode.FAILED_PRECONDITION and "poller" in exc.message


async def workflow_worker_polls(client: Client, task_queue: str) -> bool:
    """Whether a worker has polled `task_queue` for workflow tasks lately (the server
    forgets a poller some minutes after its last poll; a worker of this host that has
    stopped does not count, one of another host that died just now still does: its
    queries then time out, see `is_unanswered`). A server that cannot
    tell (the time-skipping test server does not implement the call; a role may not be
    allowed it) counts as having one: the queries' time limits still hold."""
    pollers = await _pollers(client, task_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
    return pollers is None or len(pollers) > 0


async def polls_as(client: Client, task_queue: str, *, workflows: bool) -> bool:
    """Whether this client's identity polls `task_queue` (for workflow tasks, else
    activity tasks) yet; a server that cannot tell says yes."""
    kind = (
        TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
        if workflows
        else TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
    )
    pollers = await _pollers(client, task_queue, kind)
    return pollers is None or client.identity in pollers


async def _pollers(
    client: Client, task_queue: str, kind: TaskQueueType.ValueType
) -> set[str] | None:
    """The identities that polled `task_queue` for tasks of `kind` lately; None when the
    server cannot tell."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
        task_queue_type=kind,
    )
    try:
        response = await client.workflow_service.describe_task_queue(request)
    except RPCError as exc:
        if exc.status in (RPCStatusCode.UNIMPLEMENTED, RPCStatusCode.PERMISSION_DENIED):
            return None
        raise
    return {poller.identity for poller in response.pollers if not _gone(poller.identity)}


def _gone(identity: str) -> bool:
    """Whether the poller `identity` (the SDK's `<pid>@<host>`) was a process on this host
    that is no longer there. The server keeps listing a stopped worker's polls for some
    minutes; on its own host we know at once (issue 23 item 9). Another host's poller, or
    an identity of another form, counts as there."""
    pid, at, host = identity.partition("@")
    if not at or host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # another user's process: alive
    return False


async def wait_for_workflow_worker(
    client: Client,
    task_queue: str,
    *,
    on_wait: Callable[[str], None],
    stopping: Callable[[], bool] = lambda: False,
    poll_seconds: float = WORKER_POLL_SECONDS,
) -> None:
    """Return once a worker polls `task_queue` for workflow tasks; while none does, tell
    `on_wait` once why it waits. Raises `NoWorkflowWorkerError` when `stopping()` turns
    true first (the caller was asked to give up)."""
    told = False
    while not await workflow_worker_polls(client, task_queue):
        if stopping():
            raise NoWorkflowWorkerError(task_queue)
        if not told:
            on_wait(
                f"Waiting for a worker: none runs the workflows of task queue '{task_queue}' "
                "(start `ll-loop worker` in that checkout)"
            )
            told = True
        await asyncio.sleep(poll_seconds)
