"""`ll-loop resume <loop> --from-history`: bring back an unfinished run a new `run` archived.

A new `run` moves the previous run's files to `.loops/.history/<loop>/<start>/`, even
when that run was paused or interrupted (it says so on stderr). This puts the newest such
run back in `.loops/.running/` so the usual resume continues it. It refuses when the
current run is unfinished itself (resume that one instead) or when the history holds no
unfinished run; a current run that has ended is archived first, as a new `run` would.
"""

from __future__ import annotations

from little_loops.cli.output import Logger
from little_loops.fsm.errors import LoopError, RunFilesError
from little_loops.fsm.persistence import NotResumableError, PersistentExecutor
from little_loops.fsm.store.run_history import (
    UNFINISHED_STATUSES,
    history_dir,
    latest_unfinished_run,
    restore_archived_run,
)


def bring_back_from_history(executor: PersistentExecutor, loop_arg: str, logger: Logger) -> None:
    """Make the newest archived unfinished run the current one (the caller holds the
    loop lock), or raise `NotResumableError` saying why not."""
    persistence = executor.persistence
    name = persistence.loop_name
    current = persistence.load_state_checked()
    if current is not None and current.status in UNFINISHED_STATUSES:
        raise NotResumableError(
            f"the current run of '{name}' is itself unfinished ({current.status} at state "
            f"'{current.current_state}'): continue it with ll-loop resume {name}; "
            "--from-history brings back an archived run once the current one has ended"
        )
    folder = latest_unfinished_run(persistence.loops_dir, name)
    if folder is None:
        where = history_dir(persistence.loops_dir, name)
        raise NotResumableError(
            f"nothing to bring back: {where}/ holds no unfinished run of '{name}' "
            f"(the runs kept: ll-loop history {name} --runs)"
        )
    executor.archive_previous()
    try:
        restore_archived_run(persistence, folder)
    except OSError as exc:
        raise _restore_failed(folder, exc) from exc
    logger.success(f"Brought back the run of {name} archived in {folder}")


def _restore_failed(folder: object, exc: OSError) -> LoopError:
    return RunFilesError(
        str(folder),
        f"cannot move the archived run back: {exc.strerror or exc}",
        hint="its files stay where they are (partly moved files are in .loops/.running/)",
    )
