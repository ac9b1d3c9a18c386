"""Turning Ctrl-C and SIGTERM (sent by `ll-loop stop`) into a clean stop of a run.

The first signal asks the executor to shut down: it cancels the running action's process
group, saves the state as `interrupted` and returns `terminated_by="signal"`. A second
signal means "stop now": it raises KeyboardInterrupt, which the CLI turns into exit 130.

A process started with SIGINT ignored (a background job of a shell without job control,
`nohup`-like wrappers) would otherwise never see Ctrl-C outside a run's handler: `watch`,
a `--queue` wait, a lock wait. `ll-loop` takes SIGINT as "stop" whatever it inherited
(`restore_interrupt`), as a run always did, and its actions then start with the default.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def restore_interrupt() -> None:
    """Make SIGINT raise KeyboardInterrupt again when the process inherited it ignored.

    Python installs its Ctrl-C handler only when SIGINT is not ignored at start; without
    it only a run's own handler (`shutdown_on_signals`) would react. A handler, unlike
    SIG_IGN, is not inherited through exec, so the actions get the default too."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
