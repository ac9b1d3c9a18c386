"""What actions on this worker left running, kept per run until that run ends or pauses.

Locally, something an action starts in the background (`python3 -m http.server &`) runs
on until the run ends (`process.background_groups`). On Temporal each action is an
activity, and the next state's action may run later on the same worker; so the worker
keeps the runner that holds such groups under the run's workflow id (`keep`), and
stops them (SIGTERM, then SIGKILL) when `reap_forever` sees that run closed (ended,
stopped, failed, terminated) or paused for a handoff, or when the run is stopped during
an action (`release`), or when the worker itself ends (`release_all`).

Every group the worker has running, the action's own while it runs and the kept ones,
is in the worker's `GroupLedger`, which its watchdog stops when the worker dies
(`process.group_watchdog`).

`ll-loop worker` installs one `KeptGroups` (`install`); without one (a worker built in a
test's process) an action's background groups end with the action, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence

from temporalio.client import Client, WorkflowExecutionStatus

from little_loops.fsm.process.group_watchdog import GroupLedger
from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.process.runner import DefaultActionRunner

__all__ = ["REAP_EVERY_SECONDS", "KeptGroups", "current", "install"]

REAP_EVERY_SECONDS = 1.0
"""How often the worker asks whether the runs it keeps groups for have ended."""

_PAUSED = "awaiting_continuation"
_installed: KeptGroups | None = None


class KeptGroups:
    """See the module doc."""

    def __init__(self, ledger: GroupLedger) -> None:
        self.ledger = ledger
        self._kept: dict[str, list[DefaultActionRunner]] = {}
        self._lock = threading.Lock()

    def running(self, group: ActionGroup) -> None:
        """An action's group started (called from the runner's thread)."""
        self.ledger.add(group)

    def keep(
        self, workflow_id: str, runner: DefaultActionRunner, groups: Sequence[ActionGroup]
    ) -> None:
        """The action ended: keep what it left in the background for its run."""
        kept = {group.pgid for group in runner.background.groups}
        for group in groups:
            if group.pgid not in kept:
                self.ledger.discard(group.pgid)
        if kept:
            with self._lock:
                self._kept.setdefault(workflow_id, []).append(runner)

    def release(self, workflow_id: str) -> None:
        """The run ended, paused or was stopped: stop what its actions left running."""
        with self._lock:
            runners = self._kept.pop(workflow_id, [])
        for runner in runners:
            groups = runner.background.groups
            runner.stop_background()
            for group in groups:
                self.ledger.discard(group.pgid)

    def release_all(self) -> None:
        for workflow_id in self.workflow_ids():
            self.release(workflow_id)

    def workflow_ids(self) -> list[str]:
        with self._lock:
            return list(self._kept)

    async def reap_forever(self, client: Client, every: float = REAP_EVERY_SECONDS) -> None:
        """Release the runs that have ended or paused, checked every `every` seconds."""
        while True:
            for workflow_id in self.workflow_ids():
                if await _run_over(client, workflow_id):
                    await asyncio.to_thread(self.release, workflow_id)
            await asyncio.sleep(every)


async def _run_over(client: Client, workflow_id: str) -> bool:
    """Whether the run is closed or paused for a handoff (a server that does not answer
    now: not over, asked again later)."""
    handle = client.get_workflow_handle(workflow_id)
    try:
        described = await handle.describe()
    except Exception:  # the server is away: keep the groups for now
        return False
    if described.status != WorkflowExecutionStatus.RUNNING:
        return True
    with contextlib.suppress(Exception):  # no workflow worker answers: not known paused
        status = await handle.query("status")
        return isinstance(status, dict) and status.get("status") == _PAUSED
    return False


def install(kept: KeptGroups | None) -> None:
    """Make `kept` the worker's (None: none again)."""
    global _installed
    _installed = kept


def current() -> KeptGroups | None:
    return _installed
