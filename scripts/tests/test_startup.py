"""`ll-loop --help` imports only what parsing needs: the loop engine loads with a command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LOADED_MODULES = """
import sys
from little_loops.cli import main_loop
code = main_loop(sys.argv[1:])
print(code, sorted(name for name in sys.modules if name.startswith("little_loops")))
"""


def loaded_after(tmp_path: Path, *argv: str) -> str:
    finished = subprocess.run(
        [sys.executable, "-c", LOADED_MODULES, *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    return finished.stdout.splitlines()[-1]


def test_help_loads_no_loop_engine(tmp_path: Path) -> None:
    modules = "['little_loops', 'little_loops.cli', 'little_loops.cli.app', "
    modules += "'little_loops.cli.exit_codes', 'little_loops.cli.output']"
    assert loaded_after(tmp_path, "--help") == f"0 {modules}"
    assert loaded_after(tmp_path, "run", "--help") == f"0 {modules}"


def test_a_command_loads_its_module_when_it_runs(tmp_path: Path) -> None:
    loaded = loaded_after(tmp_path, "list")
    assert loaded.startswith("0 [")
    assert "'little_loops.cli.cmd_inspect'" in loaded
    assert "'little_loops.cli.cmd_run'" not in loaded
