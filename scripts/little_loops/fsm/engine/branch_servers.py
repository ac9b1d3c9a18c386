"""The servers of a local fan-out's branches (`branch_threads`), built from the run's
executor: each a sibling `FSMExecutor` that only serves requests, with an action runner
of its own (the run's settings: claude binary, output cap, working directory), whose
long-running action groups are recorded beside the run's (so a resume after kill -9
stops them) under the core lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from little_loops.fsm.engine.run_requests import RunAction

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = ["ExecutorBranchServer", "RequestServer", "SerialBranchServer"]


class RequestServer(Protocol):
    """What serves a branch's requests (`run_loop.FSMExecutor`)."""

    def serve_request(self, request: Request) -> Any: ...

    def request_shutdown(self) -> None: ...


class ExecutorBranchServer:
    """One branch's server (see the module docstring)."""

    def __init__(
        self,
        server: RequestServer,
        runner: Any,
        groups: dict[int, Any],
        tell: Callable[[Any], None] | None,
        lock: threading.Lock,
    ) -> None:
        self.server, self.runner, self.groups = server, runner, groups
        self._tell, self._lock = tell, lock
        runner.on_group_running = self._record_group

    def serve(self, request: Request) -> Any:
        try:
            return self.server.serve_request(request)
        finally:
            if isinstance(request, RunAction):
                self.groups.pop(id(self), None)

    def stop(self) -> None:
        self.server.request_shutdown()

    def close(self) -> None:
        self.groups.pop(id(self), None)
        self.runner.stop_background()

    def _record_group(self, group: Any) -> None:
        """Called from the branch's thread while its action runs (outside the lock)."""
        with self._lock:
            self.groups[id(self)] = group
            if self._tell is not None:
                self._tell(group)


class SerialBranchServer:
    """The run's own executor serving branches one at a time (a runner not copied)."""

    def __init__(self, executor: RequestServer) -> None:
        self.executor = executor

    def serve(self, request: Request) -> Any:
        return self.executor.serve_request(request)

    def stop(self) -> None:
        """The run's own stop already reaches its runner."""

    def close(self) -> None:
        """Nothing of its own to close."""
