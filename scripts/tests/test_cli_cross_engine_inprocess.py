"""A local run and the `.on-temporal` markers a Temporal client leaves (issue 23 item 1;
`cli.cross_engine`), in this process: a marker whose server cannot be asked does not stop
the local run (one warning line, and the stale marker goes), and a marker of a loop
whose scope does not overlap is not asked about at all.

The markers name 127.0.0.1:9 (nothing listens there): the refusal is real, no server is
faked. (test_cli_concurrency.py and the Temporal tests cover the open-workflow case.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import SIMPLE_LOOP, write_loop

from little_loops.cli import main_loop
from little_loops.fsm.store.locking import normalise_scope
from little_loops.fsm.store.temporal_markers import TemporalMarker, read_markers, write_marker

RUNNING = Path(".loops/.running")
NOBODY = "127.0.0.1:9"


def _scoped(name: str, scope: str) -> str:
    return (
        f"name: {name}\ninitial: work\nscope: [{scope}]\nstates:\n  work:\n"
        '    action: "true"\n    next: done\n  done:\n    terminal: true\n'
    )


def _unasked(loop: str, workflow: str) -> str:
    return (
        f"Warning: loop {loop} may run on Temporal (workflow {workflow} on {NOBODY}), which "
        "cannot be asked (connection refused (is it running? set LL_TEMPORAL_ADDRESS)); "
        "running locally\n"
    )


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LL_TEMPORAL_ADDRESS", raising=False)


def test_a_marker_of_the_loop_whose_server_is_down_warns_runs_and_is_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    write_marker(RUNNING, TemporalMarker("simple", "wf-1", NOBODY, "default"))

    code = main_loop(["simple", "-q"])

    assert (code, capsys.readouterr().err) == (0, _unasked("simple", "wf-1"))
    assert read_markers(RUNNING) == []


def test_a_marker_of_another_loop_sharing_the_scope_is_asked_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "beta", _scoped("beta", "./src/lib/"))
    # the client writes the scope normalised (`temporal_engine`: absolute, resolved)
    scope = tuple(normalise_scope(["src"]))
    write_marker(RUNNING, TemporalMarker("alpha", "wf-a", NOBODY, "default", scope=scope))

    code = main_loop(["beta", "-q"])

    assert (code, capsys.readouterr().err) == (0, _unasked("alpha", "wf-a"))
    assert read_markers(RUNNING) == []


def test_a_marker_of_a_loop_with_a_disjoint_scope_is_not_asked_about_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "gamma", _scoped("gamma", "docs"))
    scope = tuple(normalise_scope(["src"]))
    marker = TemporalMarker("alpha", "wf-a", NOBODY, "default", scope=scope)
    write_marker(RUNNING, marker)

    code = main_loop(["gamma", "-q"])

    assert (code, capsys.readouterr().err) == (0, "")
    assert read_markers(RUNNING) == [marker]


def test_a_loop_without_scope_asks_only_about_its_own_marker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    other = TemporalMarker("alpha", "wf-a", NOBODY, "default", scope=(str(tmp_path),))
    write_marker(RUNNING, other)

    assert main_loop(["simple", "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert read_markers(RUNNING) == [other]
