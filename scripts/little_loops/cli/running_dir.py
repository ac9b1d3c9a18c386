"""Whether `.loops/.running/` can be used, checked before a command reads run files.

`run` reports a file in the way of the directory, or one it may not use, in one line
(`fsm.locking`). `history`, `stop`, `status` and `list --running` give the same line
instead of a crash, "No state found" or "No running loops".
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from little_loops.fsm.errors import RunFilesError
from little_loops.fsm.state_files import RUNNING_DIR

# The wording `run` uses (`fsm.locking._files_error`).
_IN_THE_WAY = "a file is in the way (it must be a directory)"
_HINT = "ll-loop keeps each run's state, events and lock there; it must be a writable directory"


def check_running_dir(loops_dir: Path) -> None:
    """Raise `RunFilesError` when the run directory exists but cannot be read.

    A missing directory is fine: there are no runs yet.
    """
    running_dir = loops_dir / RUNNING_DIR
    try:
        mode = os.stat(running_dir).st_mode
        if stat.S_ISDIR(mode):
            os.listdir(running_dir)  # read permission
            os.stat(os.path.join(running_dir, "."))  # search permission
            return
        problem = _IN_THE_WAY
    except FileNotFoundError:
        if not os.path.lexists(running_dir):
            return
        problem = _IN_THE_WAY  # a dangling symbolic link
    except NotADirectoryError:
        problem = _IN_THE_WAY  # `.loops` itself is a file
    except OSError as exc:
        problem = exc.strerror or str(exc)
    raise RunFilesError(str(running_dir), f"cannot write run files: {problem}", hint=_HINT)
