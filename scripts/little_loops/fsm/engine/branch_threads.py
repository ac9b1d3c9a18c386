"""The local driver's side of `RunBranches` (a `parallel:` fan-out, issue 25).

One thread per running branch, at most `max_workers` at once. Each thread serves its
branch's requests with a server of its own (a sibling executor with its own action
runner, so each branch's action runs in its own process group and a stop cancels every
one of them); every call into the run core (the fan-out, a branch's `next_request` /
`submit`, and so every event and save) is made under one lock, so the core stays
single-threaded and does no I/O: only the actions, waits and git work run side by side.
A runner that cannot be copied (a test double) runs the branches one at a time.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from little_loops.fsm.engine.requests import BranchToRun, FanoutToRun, RunChild
from little_loops.fsm.engine.run_requests import Finish

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = ["BranchServer", "drive_branches"]


class BranchServer(Protocol):
    """Serves one branch's requests (`serve`), stops its action and waits (`stop`),
    and is closed once the branch ended (`close`)."""

    def serve(self, request: Request) -> Any: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


# Opens the server of a new branch (given the core lock), None: branches cannot run side
# by side with this runner (they then share the run's, one at a time).
OpenServer = Callable[[threading.Lock], BranchServer | None]


@dataclass
class _Running:
    branch: BranchToRun
    server: BranchServer


def drive_branches(
    fanout: FanoutToRun,
    open_server: OpenServer,
    serial: BranchServer,
    running_servers: set[BranchServer],
) -> None:
    """Run the fan-out's branches to their end (see the module docstring).
    `running_servers` is the executor's: a stop asks each of them to `stop()`."""
    lock = threading.Lock()
    ended: queue.SimpleQueue[tuple[BranchToRun, BaseException | None]] = queue.SimpleQueue()
    running: dict[int, _Running] = {}
    workers = fanout.max_workers
    failure: BaseException | None = None

    def start_more() -> None:
        nonlocal workers
        while len(running) < workers and failure is None:
            with lock:
                branch = fanout.next_branch()
            if branch is None:
                return
            server = open_server(lock)
            if server is None:
                workers, server = 1, serial
            running[branch.index] = _Running(branch, server)
            running_servers.add(server)
            args = (branch, server, lock, ended)
            threading.Thread(target=_drive_one, args=args, daemon=True).start()

    start_more()
    while running:
        branch, error = ended.get()
        done = running.pop(branch.index)
        running_servers.discard(done.server)
        if done.server is not serial:
            done.server.close()
        if error is not None:
            failure = failure or error
            _stop_all(running, lock)
            continue
        with lock:
            to_cancel = fanout.branch_ended(branch)
        for other in to_cancel:
            with lock:
                other.cancel()
            running[other.index].server.stop()
        start_more()
    if failure is not None:
        raise failure


def _stop_all(running: dict[int, _Running], lock: threading.Lock) -> None:
    for each in running.values():
        with lock:
            each.branch.cancel()
        each.server.stop()


def _served(request: Request, server: BranchServer, lock: threading.Lock) -> Any:
    """What `request` asks for; a child's (`RunChild`: the item's, or a sub-loop's inside
    it) is served request by request here, its core's calls under the lock."""
    if not isinstance(request, RunChild):
        return server.serve(request)
    child = request.child
    with lock:
        inner = child.next_request()
    while not isinstance(inner, Finish):
        result = _served(inner, server, lock)
        with lock:
            child.submit(result)
            inner = child.next_request()
    with lock:
        return child.ended(inner)


def _drive_one(
    branch: BranchToRun,
    server: BranchServer,
    lock: threading.Lock,
    ended: queue.SimpleQueue[tuple[BranchToRun, BaseException | None]],
) -> None:
    """One branch's thread: its requests served until its `Finish`."""
    try:
        with lock:
            request = branch.next_request()
        while not isinstance(request, Finish):
            result = _served(request, server, lock)
            with lock:
                branch.submit(result)
                request = branch.next_request()
    except BaseException as exc:  # handed to the driving thread, which re-raises it
        ended.put((branch, exc))
        return
    ended.put((branch, None))
