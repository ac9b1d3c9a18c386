"""Tests for `little_loops.cli.app`: parsing, the shorthand rule, dispatch, error boundary."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fixtures.cli_support import SIMPLE_LOOP, ClosedPipe, cli_in_process, write_loop

from little_loops import __version__
from little_loops.cli import app, main_loop
from little_loops.cli.exit_codes import EXIT_CODE_TABLE


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("argv", "rewritten"),
    [
        ([], []),
        (["fix-types", "-n", "3"], ["run", "fix-types", "-n", "3"]),
        ([".loops/x.yaml", "--dry-run"], ["run", ".loops/x.yaml", "--dry-run"]),
        (["list"], ["list"]),
        (["help"], ["run", "help"]),
        (["--dry-run", "simple"], ["run", "--dry-run", "simple"]),
        (["--dry", "simple"], ["run", "--dry", "simple"]),
        (["--max-iterations=3", "x"], ["run", "--max-iterations=3", "x"]),
        (["-n3", "x"], ["run", "-n3", "x"]),
        (["-q", "x"], ["run", "-q", "x"]),
        (["-h"], ["-h"]),
        (["--help"], ["--help"]),
        (["--version"], ["--version"]),
        (["--queue", "x"], ["run", "--queue", "x"]),
        (["--frobnicate", "x"], ["--frobnicate", "x"]),
        (["--", "x"], ["--", "x"]),
    ],
)
def test_rewrite_shorthand(argv: list[str], rewritten: list[str]) -> None:
    assert app.rewrite_shorthand(argv) == rewritten


def test_no_arguments_is_a_usage_error_naming_the_problem(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The reference printed the whole help on stdout and exited 1; issue 23 item 17 asks
    for a usage error (exit 2) that says what is missing."""
    assert cli_in_process(capsys) == (
        2,
        "",
        "usage: ll-loop [-h] [--version] command ...\n"
        "ll-loop: error: no command given: ll-loop <loop>, or ll-loop <command> "
        "(see ll-loop --help)\n",
    )


def test_an_unknown_option_first_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 23 item 17: `ll-loop -weird` said `the following arguments are required:
    command`."""
    assert cli_in_process(capsys, "-weird")[::2] == (
        2,
        "usage: ll-loop [-h] [--version] command ...\n"
        "ll-loop: error: unknown option '-weird' (a command or a loop name comes first)\n",
    )


@pytest.mark.parametrize("amount", ["1e999", "nan", "inf"])
def test_max_cost_must_be_finite(capsys: pytest.CaptureFixture[str], amount: str) -> None:
    """Issue 23 item 13: `--max-cost 1e999` said `must be more than 0`."""
    code, _, err = cli_in_process(capsys, "run", "x", "--max-cost", amount)
    assert (code, err.splitlines()[-1]) == (
        2,
        f"ll-loop run: error: argument --max-cost: must be a finite amount, got '{amount}'",
    )


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_in_process(capsys, "--help")
    assert code == 0 and out.startswith("usage: ll-loop")
    code, out, _ = cli_in_process(capsys, "run", "-h")
    assert code == 0 and out.endswith(EXIT_CODE_TABLE + "\n")
    assert cli_in_process(capsys, "--version") == (0, f"ll-loop {__version__}\n", "")


@pytest.mark.parametrize(
    ("argv", "last_line"),
    [
        (
            ["run", "x", "-n", "0"],
            "ll-loop run: error: argument -n/--max-iterations: must be at least 1, got 0",
        ),
        (
            ["x", "-n", "abc"],
            "ll-loop run: error: argument -n/--max-iterations: invalid int value: 'abc'",
        ),
        (
            ["history", "x", "-n", "-1"],
            "ll-loop history: error: argument -n/--tail: must not be negative, got -1",
        ),
        (["x", "--frobnicate"], "ll-loop run: error: unrecognized arguments: --frobnicate"),
        (["status"], "ll-loop status: error: the following arguments are required: loop"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], last_line: str
) -> None:
    code, out, err = cli_in_process(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("usage: ll-loop")
    assert err.splitlines()[-1] == last_line


def test_subcommand_name_shadowing_a_loop_gets_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "stop", SIMPLE_LOOP)
    code, _, err = cli_in_process(capsys, "stop")
    assert code == 2
    assert err.splitlines()[-2:] == [
        "ll-loop stop: error: the following arguments are required: loop",
        "ll-loop: did you mean 'll-loop run stop'? (.loops/stop.yaml exists)",
    ]


def test_abbreviated_flags_and_help_as_a_loop_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    code, out, _ = cli_in_process(capsys, "simple", "--max", "2", "--dry")
    assert (code, out.splitlines()[-1]) == (0, "Max iterations: 2")
    assert cli_in_process(capsys, "help") == (
        1,
        "",
        "[T] Loop not found: help\n"
        "  looked in: help, .loops/help.fsm.yaml, .loops/help.yaml, .loops/help.yml\n",
    )


def _boom(args: object) -> int:
    raise RuntimeError("boom")


CRASH_LINE = re.compile(
    r"ll-loop: internal error: RuntimeError: boom \(traceback written to (.+)\)\n"
)


def test_internal_error_writes_the_traceback_under_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(app.COMMANDS, "list", _boom)
    (tmp_path / ".loops" / ".running").mkdir(parents=True)
    code, out, err = cli_in_process(capsys, "list")
    match = CRASH_LINE.fullmatch(err)
    assert (code, out) == (1, "") and match
    path = Path(match.group(1))
    assert path.parent == Path(".loops/.running")
    assert path.name.startswith("ll-loop-crash-")
    text = path.read_text()
    assert text.startswith("Traceback (most recent call last):\n")
    assert text.endswith("RuntimeError: boom\n")


def test_internal_error_without_running_dir_uses_the_temp_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(app.COMMANDS, "list", _boom)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    code, _, err = cli_in_process(capsys, "list")
    match = CRASH_LINE.fullmatch(err)
    assert code == 1 and match
    assert Path(match.group(1)).parent == temp
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    code, _, err = cli_in_process(capsys, "list")
    assert code == 1
    assert re.fullmatch(
        r"ll-loop: internal error: RuntimeError: boom \(traceback could not be written to "
        r".+/missing/ll-loop-crash-.+\.txt: No such file or directory\)\n",
        err,
    )


def test_keyboard_interrupt_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setitem(app.COMMANDS, "list", interrupted)
    assert cli_in_process(capsys, "list") == (130, "", "ll-loop: interrupted\n")


def test_closed_stdout_exits_141_quietly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main_loop(["list"]) == 141
    assert capsys.readouterr().err == ""


def test_silence_stdout_points_a_real_stdout_at_devnull(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (tmp_path / "out.txt").open("w") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        app._silence_stdout()
        stream.write("gone")
    assert (tmp_path / "out.txt").read_text() == ""


def test_logging_is_restored_after_each_call(capsys: pytest.CaptureFixture[str]) -> None:
    package_logger = logging.getLogger("little_loops")
    before = (list(package_logger.handlers), package_logger.level, package_logger.propagate)
    main_loop(["list"])
    assert (list(package_logger.handlers), package_logger.level, package_logger.propagate) == (
        before
    )


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "little_loops.cli", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"ll-loop {__version__}\n", "")
