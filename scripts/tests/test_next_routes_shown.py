"""A `next:` state says what happened to it (issue 23, items 7 and 24).

`next:` routes whatever the action did. The progress display and `ll-loop history` used to
show such a move with no reason (`history`: `a  ✗ ? -> b`; the progress display: nothing
about an action that failed), so a typo in a command went unseen. Now the progress shows
the failure the route ignores and `history` names the move `(next)`.
"""

from __future__ import annotations

from pathlib import Path

from fixtures.cli_support import normalize, run_cli, write_loop

TYPO = """\
name: typo
initial: a
states:
  a:
    action: pytset
    next: b
  b:
    action: echo hi
    next: done
  done:
    terminal: true
"""


def test_progress_shows_the_failure_a_next_route_ignores(tmp_path: Path) -> None:
    write_loop(tmp_path, "typo", TYPO)
    done = run_cli(tmp_path, "run", "typo")

    lines = normalize(done.stdout).splitlines()
    start = lines.index("[1/50] a -> pytset")
    assert lines[start : start + 5] == [
        "[1/50] a -> pytset",
        "       ! exit code 127: bash: line 1: pytset: command not found (next: ignores it)",
        "       -> b (Ns)",
        "[2/50] b -> echo hi",
        "       -> done (Ns)",
    ]


def test_history_names_a_next_move_and_the_failure_it_ignored(tmp_path: Path) -> None:
    write_loop(tmp_path, "typo", TYPO)
    run_cli(tmp_path, "run", "typo")
    done = run_cli(tmp_path, "history", "typo")

    moves = [line.split(" ", 1)[1] for line in done.stdout.splitlines()[1:3]]
    assert [normalize(line) for line in moves] == [
        "a  ! exit code 127: bash: line 1: pytset: command not found -> b (next)  (Ns)",
        "b  -> done (next)  (Ns)",
    ]
