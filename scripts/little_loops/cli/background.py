"""`ll-loop run --background` (and `resume --background`): start the same command
detached and return at once.

The detached process is `python -m little_loops.cli run <loop> ...` (or `resume`) in its
own session (so closing the terminal or Ctrl-C in it does not reach the loop), with stdin from
/dev/null and stdout/stderr in `.loops/.running/<name>.log`. The run records its own pid
in the state file, which is how `status` and `stop` find it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from little_loops.fsm.persistence import RUNNING_DIR, NotResumableError, StatePersistence
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.persistent_executor import resume_refusal

# The directory that holds the `little_loops` package, so the child can import it even
# from a source checkout that is not installed.
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def log_path_for(loops_dir: Path, loop_name: str) -> Path:
    """Where a background run of `loop_name` writes its output."""
    return loops_dir / RUNNING_DIR / f"{loop_name}.log"


def start_detached(run_args: list[str], log_path: Path, *, command: str = "run") -> int:
    """Start `ll-loop <command> <run_args>` detached, output to `log_path`; return its pid."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if part
    )
    env["PYTHONUNBUFFERED"] = "1"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "little_loops.cli", command, *run_args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    # Never waited on: it outlives us. Marking it reaped keeps Popen from warning about it.
    process.returncode = 0
    return process.pid


def refuse_unresumable(persistence: StatePersistence, fsm: FSMLoop) -> None:
    """Raise `NotResumableError` now when the detached `resume` would only refuse in its log."""
    state = persistence.load_state_checked()
    if state is None:
        raise NotResumableError(f"no saved state for '{fsm.name}'")
    reason = resume_refusal(state, fsm, persistence.running_dir)
    if reason is not None:
        raise NotResumableError(reason)
