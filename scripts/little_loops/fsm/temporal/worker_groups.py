"""The action groups of one `ll-loop worker` process, from its start to its end.

At start: stop what this host's dead workers left running (`group_watchdog.sweep`, the
directory is `<checkout>/.loops/.running/.workers/`), open this worker's ledger, start
its watchdog, and install the `KeptGroups` its actions keep their background groups in.
While it serves: the reaper. At the end: stop every kept group, remove the ledger, and
let the watchdog go.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from temporalio.client import Client

from little_loops.fsm.process.group_watchdog import GroupLedger, start_watchdog, sweep
from little_loops.fsm.temporal import kept_groups

__all__ = ["WORKERS_DIR", "worker_groups"]

WORKERS_DIR = ".workers"
"""Under the checkout's `.loops/.running/`: one ledger per live worker of this checkout."""


@contextlib.asynccontextmanager
async def worker_groups(
    client: Client, running_dir: Path, say: Callable[[str], None]
) -> AsyncIterator[kept_groups.KeptGroups]:
    directory = running_dir / WORKERS_DIR
    for pgid in await asyncio.to_thread(sweep, directory):
        say(f"Stopped an action left running by a worker that died (pid group {pgid})")
    ledger = GroupLedger(directory)
    watchdog = start_watchdog(ledger.path)
    kept = kept_groups.KeptGroups(ledger)
    kept_groups.install(kept)
    reaper = asyncio.ensure_future(kept.reap_forever(client))
    try:
        yield kept
    finally:
        reaper.cancel()
        kept_groups.install(None)
        await asyncio.to_thread(kept.release_all)
        ledger.close()
        if watchdog.stdin is not None:
            watchdog.stdin.close()  # the watchdog finds no ledger and ends
        await asyncio.to_thread(watchdog.wait)
