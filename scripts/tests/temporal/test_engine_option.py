"""Choosing the engine on the command line (`--engine`, `LL_ENGINE`): mistakes are one
line and a usage exit code; none of these reaches a Temporal server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, normalize


def test_detach_without_the_temporal_engine_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LL_ENGINE", raising=False)
    code, _, err = cli_in_process(capsys, "run", "hello", "--detach")
    assert code == 2
    assert err == ("ll-loop run: error: --detach needs --engine temporal (locally: --background)\n")


def test_a_prompt_without_the_temporal_engine_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LL_ENGINE", raising=False)
    code, _, err = cli_in_process(capsys, "resume", "hello", "--prompt", "go on")
    assert code == 2
    assert err == "ll-loop resume: error: --prompt needs --engine temporal\n"


def test_an_unknown_engine_in_the_environment_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LL_ENGINE", "cloud")
    code, _, err = cli_in_process(capsys, "status", "hello")
    assert code == 1
    assert normalize(err).splitlines() == [
        "[T] LL_ENGINE=cloud: unknown engine (choose from local, temporal)"
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "hello", "--engine", "temporal"],
        ["run", "hello", "--engine", "temporal"],
        ["worker"],
    ],
)
def test_without_the_temporal_extra_the_engine_is_one_line(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`temporalio` not installed: say how to install it, no traceback, exit 1."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "temporalio", None)  # as if it were not installed
    code, out, err = cli_in_process(capsys, *argv)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "[T] the Temporal engine needs the temporal extra: "
        'pip install -e ".[temporal]" (in this checkout)'
    ]


def test_a_worker_told_to_run_neither_kind_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = cli_in_process(capsys, "worker", "--activities-only", "--workflows-only")
    assert code == 2
    assert err.splitlines()[-1] == (
        "ll-loop worker: error: argument --workflows-only: not allowed with argument "
        "--activities-only"
    )
