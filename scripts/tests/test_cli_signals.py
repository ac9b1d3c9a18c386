"""Tests for `little_loops.cli.signals`: SIGINT/SIGTERM become a clean shutdown request."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from little_loops.cli.signals import shutdown_on_signals


def test_first_signal_requests_shutdown_second_interrupts() -> None:
    calls: list[str] = []
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), shutdown_on_signals(lambda: calls.append("stop")):
        os.kill(os.getpid(), signal.SIGTERM)
        assert calls == ["stop"]
        os.kill(os.getpid(), signal.SIGINT)
    assert calls == ["stop"]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_outside_the_main_thread_handlers_are_left_alone() -> None:
    seen: list[object] = []

    def body() -> None:
        with shutdown_on_signals(lambda: None):
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert seen == [before]
