"""Tests for `little_loops.cli.output.standard_streams`: a process started without stdout,
stderr or stdin (`ll-loop list >&-`) behaves, and none of its files lands on fd 0-2."""

from __future__ import annotations

import os
import sys

import pytest

from little_loops.cli import main_loop, output
from little_loops.cli.output import ClosedStream, standard_streams, write_error_line, write_line


def test_missing_streams_stand_in_while_active(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    monkeypatch.setattr(sys, "stderr", None)
    with standard_streams():
        assert isinstance(sys.stdout, ClosedStream)
        with pytest.raises(BrokenPipeError):
            write_line("nobody reads this")
        sys.stdout.flush()  # nothing buffered, nothing raised
        write_error_line("swallowed")  # a closed stderr takes messages quietly
    assert (sys.stdout, sys.stderr) == (None, None)


def test_present_streams_are_left_alone(capsys: pytest.CaptureFixture[str]) -> None:
    before = (sys.stdout, sys.stderr)
    with standard_streams():
        assert (sys.stdout, sys.stderr) == before
        write_line("shown")
    assert capsys.readouterr().out == "shown\n"


def test_list_without_stdout_exits_141(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    assert main_loop(["list"]) == 141


def test_a_closed_descriptor_gets_dev_null() -> None:
    saved = os.dup(0)
    try:
        os.close(0)
        output._reserve_standard_descriptors()
        assert os.fstat(0).st_rdev == os.stat(os.devnull).st_rdev
    finally:
        os.dup2(saved, 0)
        os.close(saved)
