"""A NUL byte in an action names where it came from (issue 23 item 25, earlier finding
28): the runner could only say `embedded null byte`."""

from __future__ import annotations

from pathlib import Path

from fixtures.cli_support import run_cli, write_loop

NUL = r"""name: nul
initial: a
states:
  a:
    action: printf 'a\000b'
    capture: out
    next: b
  b:
    action: echo ${captured.out.output}
    next: done
  done: {terminal: true}
"""


def test_the_template_that_brought_the_nul_is_named(tmp_path: Path) -> None:
    write_loop(tmp_path, "nul", NUL)
    done = run_cli(tmp_path, "run", "nul")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0].endswith(
        "Cannot run action: it contains a NUL byte, from ${captured.out.output} (a command "
        "line cannot hold one: strip it where it is made, e.g. with tr -d '\\000')"
    )
