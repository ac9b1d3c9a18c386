"""A local `ll-loop run` of a plain loop loads only what it uses (issue 22 item 9, the
per-action cost): no asyncio (the Temporal side), no OpenSSL hashes, uuid, tempfile or
secrets. (zoneinfo stays: the run core reads claude's reset times with it inside Temporal's
workflow sandbox, where a late import of it hands back a proxy `datetime` refuses.)
Each was imported at start-up by a module that needs it only for
HEAD loops, failing steps, sub-loop worktrees, claude's limits or `--notify`; loading
them cost a 200-action run about 0.1 ms per action."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LOADED_AFTER_RUN = """
import sys
from little_loops.cli import main_loop
code = main_loop(sys.argv[1:])
unused = ["asyncio", "ssl", "hashlib", "uuid", "tempfile", "secrets"]
print(code, [name for name in unused if name in sys.modules])
"""

SPIN = """name: spin
initial: run
max_iterations: 3
states:
  run:
    action: 'true'
    next: run
  done:
    terminal: true
"""


def loaded_after(tmp_path: Path, *argv: str) -> str:
    finished = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER_RUN, *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path), "LL_ENGINE": "local"},
    )
    return finished.stdout.splitlines()[-1]


def test_a_local_run_of_a_plain_loop_loads_no_module_it_does_not_use(tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "spin.yaml").write_text(SPIN, encoding="utf-8")
    # Exit code 4: max_iterations reached, after three `true` actions.
    assert loaded_after(tmp_path, "run", "-q", "spin") == "4 []"
