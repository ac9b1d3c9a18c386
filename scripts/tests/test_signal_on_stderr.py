"""A signal marker printed on stderr is said, not silently ignored (issue 23 item 25,
earlier finding 31). Signals are read from stdout, as the reference read them: the run
still goes on as if nothing was printed."""

from __future__ import annotations

from pathlib import Path

from fixtures.cli_support import normalize, run_cli, write_loop

LOOP = """\
name: se
initial: a
states:
  a:
    action: 'echo "CONTEXT_HANDOFF: go on" >&2'
    next: done
  done: {terminal: true}
"""


def test_a_marker_on_stderr_is_said_and_not_acted_on(tmp_path: Path) -> None:
    write_loop(tmp_path, "se", LOOP)
    done = run_cli(tmp_path, "run", "se")
    assert done.returncode == 0  # not a handoff: the run completed
    assert normalize(done.stdout).splitlines()[3:6] == [
        '[1/50] a -> echo "CONTEXT_HANDOFF: go on" >&2',
        "       ! CONTEXT_HANDOFF: printed on stderr is not acted on (signals are read from "
        "stdout: echo it there)",
        "       -> done (Ns)",
    ]
    events = run_cli(tmp_path, "history", "se", "--event", "signal_ignored").stdout
    assert events.split(" ", 1)[1] == "a  signal_ignored stream=stderr marker=CONTEXT_HANDOFF:\n"
