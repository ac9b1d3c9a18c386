"""Turning Ctrl-C and SIGTERM (sent by `ll-loop stop`) into a clean stop of a run.

The first signal asks the executor to shut down: it cancels the running action's process
group, saves the state as `interrupted` and returns `terminated_by="signal"`. A second
signal means "stop now": it raises KeyboardInterrupt, which the CLI turns into exit 130.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def shutdown_on_signals(request_shutdown: Callable[[], None]) -> Iterator[None]:
    """While active, SIGINT/SIGTERM call `request_shutdown` (then interrupt for real)."""
    if threading.current_thread() is not threading.main_thread():
        # Signal handlers can only be installed from the main thread; leave defaults.
        yield
        return
    received: list[int] = []

    def handle(signum: int, frame: FrameType | None) -> None:
        if received:
            raise KeyboardInterrupt
        received.append(signum)
        request_shutdown()

    previous = {signum: signal.signal(signum, handle) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
