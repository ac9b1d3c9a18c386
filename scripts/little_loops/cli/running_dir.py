"""Whether `.loops/.running/` can be used, checked before a command reads run files.

`run` reports a file in the way of the directory, or one it may not use, in one line
(`fsm.locking`). `history`, `stop`, `status`, `resume` and `list --running` give the same
line instead of a crash, "No state found" or "No running loops".
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from little_loops.fsm.store.locking import run_files_error
from little_loops.fsm.store.state_files import RUNNING_DIR


def check_running_dir(loops_dir: Path) -> None:
    """Raise `RunFilesError` (as `run` words it) when the run directory exists but cannot
    be read. A missing directory is fine: there are no runs yet."""
    running_dir = loops_dir / RUNNING_DIR
    try:
        if not stat.S_ISDIR(os.stat(running_dir).st_mode):
            raise _in_the_way(running_dir)
        os.listdir(running_dir)  # read permission
        os.stat(os.path.join(running_dir, "."))  # search permission
    except FileNotFoundError:
        if os.path.lexists(running_dir):  # a dangling symbolic link
            raise run_files_error(running_dir, _in_the_way(running_dir)) from None
    except NotADirectoryError:  # `.loops` itself is a file
        raise run_files_error(running_dir, _in_the_way(running_dir)) from None
    except OSError as exc:
        raise run_files_error(running_dir, exc) from None


def _in_the_way(path: Path) -> FileExistsError:
    """What `mkdir` raises for the same path, which `run` reports."""
    return FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
