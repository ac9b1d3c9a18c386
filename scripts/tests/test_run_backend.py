"""One engine seam in the CLI (issue 22 item 3): the `RunBackend` protocol, its local and
Temporal implementations, and a dispatch that picks one backend per command instead of
branching on the engine. Specs: ll-loop-cli.md `--engine` (`run`, `resume`, `status`,
`stop`, `history`, `list --running`), and the start-up rule (`--help` stays light)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import SIMPLE_LOOP, write_loop

from little_loops.cli import dispatch, main_loop
from little_loops.cli.local_backend import LocalBackend
from little_loops.cli.run_backend import HistoryRequest, ResumeRequest, RunBackend, RunRequest
from little_loops.cli.run_options import RunOptions
from little_loops.cli.temporal_backend import TemporalBackend

BACKENDS = [LocalBackend, TemporalBackend]
COMMANDS = ["run", "resume", "status", "stop", "history", "list_running", "watch"]


def _protocol_methods() -> list[str]:
    return sorted(
        name
        for name, member in vars(RunBackend).items()
        if inspect.isfunction(member) and not name.startswith("_")
    )


def test_the_protocol_is_the_commands_that_depend_on_the_engine() -> None:
    assert _protocol_methods() == sorted(COMMANDS)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda cls: cls.__name__)
def test_each_backend_satisfies_the_protocol_signature_for_signature(backend: type) -> None:
    assert isinstance(backend(), RunBackend)
    for name in _protocol_methods():
        assert inspect.signature(getattr(backend, name)) == inspect.signature(
            getattr(RunBackend, name)
        ), name


class Recorder:
    """A backend that records what the dispatch asked of it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> int:
            self.calls.append((name, args, kwargs))
            return 0

        return call


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> tuple[Recorder, list[str | None]]:
    recorder, engines = Recorder(), []

    def backend_for(engine: str | None) -> Any:
        engines.append(engine)
        return recorder

    monkeypatch.setattr(dispatch, "backend_for", backend_for)
    return recorder, engines


@pytest.mark.parametrize(
    ("argv", "engine", "call"),
    [
        (
            ["run", "x", "--engine", "temporal", "--detach"],
            "temporal",
            ("run", ("x", RunOptions(), RunRequest(detach=True)), {}),
        ),
        (
            ["resume", "x", "--max-cost", "2", "--prompt", "go"],
            None,
            ("resume", ("x", RunOptions(max_cost=2.0), ResumeRequest(prompt="go")), {}),
        ),
        (["status", "x", "--json"], None, ("status", ("x",), {"as_json": True})),
        (["stop", "x", "--engine", "local"], "local", ("stop", ("x",), {})),
        (["list", "--running"], None, ("list_running", (), {"as_json": False})),
    ],
)
def test_the_dispatch_hands_each_engine_command_to_the_backend_chosen_once(
    recorded: tuple[Recorder, list[str | None]], argv: list[str], engine: str | None, call: Any
) -> None:
    recorder, engines = recorded
    assert main_loop(argv) == 0
    assert (recorder.calls, engines) == ([call], [engine])


def test_history_goes_to_the_backend_with_its_whole_request(
    recorded: tuple[Recorder, list[str | None]],
) -> None:
    recorder, _ = recorded
    assert main_loop(["history", "x", "--runs", "-n", "3", "--jsonl", "--state", "a"]) == 0
    [(name, (loop, request), _)] = recorder.calls
    assert (name, loop, request.tail, request.output, request.list_runs, request.run) == (
        "history",
        "x",
        3,
        "jsonl",
        True,
        None,
    )
    assert (request.query.state, request.query.events) == ("a", ())


def test_list_without_running_needs_no_backend(
    recorded: tuple[Recorder, list[str | None]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert main_loop(["list"]) == 0
    assert recorded[1] == []  # no engine was chosen
    assert capsys.readouterr().out == "Available loops:\n  simple\n"


def test_the_local_backend_runs_reports_and_keeps_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    backend: RunBackend = LocalBackend()
    assert backend.run("simple", RunOptions(quiet=True), RunRequest()) == 0
    capsys.readouterr()
    assert backend.status("simple", as_json=True) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["status"], status["current_state"]) == ("completed", "done")
    assert backend.list_running(as_json=True) == 0
    assert capsys.readouterr().out == "[]\n"


@pytest.mark.parametrize(
    ("call", "line"),
    [
        (
            lambda b: b.run("x", RunOptions(), RunRequest(detach=True)),
            "ll-loop run: error: --detach needs --engine temporal (locally: --background)",
        ),
        (
            lambda b: b.resume("x", RunOptions(), ResumeRequest(prompt="p")),
            "ll-loop resume: error: --prompt needs --engine temporal",
        ),
    ],
)
def test_the_local_backend_refuses_what_only_temporal_does(
    call: Any, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert call(LocalBackend()) == 2
    assert capsys.readouterr().err == line + "\n"


@pytest.mark.parametrize(
    ("call", "line"),
    [
        (
            lambda b: b.run("x", RunOptions(), RunRequest(background=True)),
            "ll-loop run: error: --engine temporal: use --detach (no --background)",
        ),
        (
            lambda b: b.run("x", RunOptions(), RunRequest(dry_run=True)),
            "ll-loop run: error: --engine temporal: use --detach (no --background)",
        ),
        (
            lambda b: b.history("x", HistoryRequest(list_runs=True)),
            "ll-loop history: error: --engine temporal: --runs and --run are local only",
        ),
        (
            lambda b: b.history("x", HistoryRequest(run=2)),
            "ll-loop history: error: --engine temporal: --runs and --run are local only",
        ),
    ],
)
def test_the_temporal_backend_refuses_what_only_a_local_run_does(
    call: Any, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert call(TemporalBackend()) == 2
    assert capsys.readouterr().err == line + "\n"


IMPORTS_AFTER = """
import sys
from little_loops.cli import main_loop
code = main_loop(sys.argv[1:])
print(code, 'temporalio' in sys.modules, 'little_loops.cli.temporal_engine' in sys.modules)
"""


def test_a_refusal_of_the_temporal_backend_reaches_no_server_and_imports_no_temporalio(
    tmp_path: Path,
) -> None:
    pytest.importorskip("temporalio")  # the engine choice needs the extra installed
    finished = subprocess.run(
        [sys.executable, "-c", IMPORTS_AFTER, "history", "x", "--engine", "temporal", "--runs"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path), "LL_TEMPORAL_ADDRESS": "127.0.0.1:1"},
    )
    assert finished.stdout.splitlines()[-1] == "2 False True"
    assert finished.stderr == (
        "ll-loop history: error: --engine temporal: --runs and --run are local only\n"
    )


def test_the_dispatch_has_one_function_for_each_subcommand_the_parser_knows() -> None:
    from little_loops.cli import app

    assert sorted(dispatch.COMMANDS) == sorted(app.SUBCOMMANDS)
    assert app.COMMANDS is dispatch.COMMANDS  # where the table was before the split
