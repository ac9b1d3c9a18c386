"""The directory of one HEAD-dialect run (`${context.run_dir}`, spec/ll-head-dialect.md §2.5).

`.loops/runs/<loop>-<id>/` is created before the first state and remembered in the run's
`HeadMemory`, so a resumed run uses the same one (made again if it was removed). A loop
whose own context (or `--context`) sets `run_dir` gets none. Legacy loops never have one.
"""

from __future__ import annotations

import time
from pathlib import Path

from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop

__all__ = ["RUNS_DIR", "prepare_run_dir", "run_dir_context"]

RUNS_DIR = "runs"


def prepare_run_dir(loop: FSMLoop, memory: HeadMemory, loops_dir: Path) -> None:
    """Create the run's directory (a new one, or the one it already had) for a HEAD loop."""
    if not isinstance(loop, HeadLoop) or "run_dir" in loop.context:
        return
    if memory.run_dir is None:
        memory.run_dir = f"{loops_dir / RUNS_DIR / _run_id(loop.name)}/"
    Path(memory.run_dir).mkdir(parents=True, exist_ok=True)


def _run_id(loop_name: str) -> str:
    import secrets  # here: only a HEAD run names a run directory (secrets loads OpenSSL)

    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{loop_name.replace('/', '-')}-{stamp}-{secrets.token_hex(3)}"


def run_dir_context(loop: FSMLoop, loops_dir: Path) -> dict[str, str]:
    """For a driver that keeps no `HeadMemory` of its own (a Temporal run started from the
    command line): a new run directory, created, as a context value the run keeps
    (`{}` for a legacy loop, or one whose context already sets `run_dir`)."""
    memory = HeadMemory()
    prepare_run_dir(loop, memory, loops_dir)
    return {"run_dir": memory.run_dir} if memory.run_dir is not None else {}
