"""One run per loop name, and no two loops with overlapping `scope` at the same time.

Files under `<loops_dir>/.running/`:

- `<name>.lock` is held with `flock(LOCK_EX)` by the process that runs (or resumes) the
  loop, for the whole run. The operating system drops the lock when that process ends,
  however it ends, so a killed run never leaves a stale lock behind. While it is held,
  the file holds one JSON object: `{"pid", "host", "loop", "scope", "since"}`; `scope`
  lists the normalised paths of a run that has started, and stays empty while a run waits
  in the queue. Lock files are never deleted: deleting one races with a process that has
  just opened it, and a file nobody holds means nothing.
- `.registry.lock` is a mutex held for microseconds. Taking a loop lock, checking scopes
  and publishing a scope all happen under it, so two loops whose scopes overlap can never
  both miss each other, a half-written record is never read, and probing another loop's
  lock never makes a starting run of that loop fail.

Lock descriptors are opened with `O_CLOEXEC`: an action started by the run must not keep
the lock alive after the run died.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopError, RunFilesError
from little_loops.fsm.store.state_files import now_iso

LOCK_SUFFIX = ".lock"
REGISTRY_NAME = ".registry.lock"
POLL_SECONDS = 0.1
"""How often a run waiting for a lock or a scope looks again."""
REGISTRY_TIMEOUT_SECONDS = 10.0
"""The registry is held for microseconds; this long means something is badly stuck."""
_REGISTRY_POLL_SECONDS = 0.005


class LoopBusyError(LoopError):
    """The loop cannot start now: it already runs, or a running loop shares its scope."""


class AlreadyRunningError(LoopBusyError):
    """Another process holds the lock of this loop name."""

    def __init__(self, loop_name: str, pid: int | None, *, where: str = "") -> None:
        super().__init__(f"Loop {loop_name} is already running{where} ({_pid_text(pid)})")
        self.loop_name = loop_name
        self.pid = pid


class ScopeBusyError(LoopBusyError):
    """A running loop works on a path this loop's `scope` overlaps."""

    def __init__(self, loop_name: str, conflict: ScopeConflict) -> None:
        super().__init__(
            f"Loop {loop_name} shares scope '{conflict.shown_path}' with running loop "
            f"{conflict.holder.loop} ({_pid_text(conflict.holder.pid)})"
        )
        self.loop_name = loop_name
        self.conflict = conflict

    def user_lines(self) -> list[str]:
        return [str(self), "  to wait until it ends instead: add --queue"]


@dataclass(frozen=True)
class LockHolder:
    """What a held lock file says about the process holding it."""

    loop: str
    pid: int | None
    host: str | None
    scope: tuple[str, ...]


@dataclass(frozen=True)
class ScopeConflict:
    """A running loop whose scope overlaps ours, and the path they share."""

    holder: LockHolder
    path: str

    @property
    def shown_path(self) -> str:
        return shown_path(self.path)


def shown_path(path: str) -> str:
    """`path` relative to the current directory when it lies inside it."""
    try:
        relative = Path(path).relative_to(Path.cwd())
    except ValueError:
        return path
    return str(relative)


class LoopLock:
    """A held loop lock. `release()` (idempotent) lets the next run of the loop start."""

    def __init__(self, fd: int, path: Path, loop_name: str) -> None:
        self._fd: int | None = fd
        self.path = path
        self.loop_name = loop_name

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Close the descriptor, which drops the lock (safe to call more than once)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def publish(self, scope: Sequence[str]) -> None:
        """Rewrite the record with `scope` (call with the registry held)."""
        assert self._fd is not None
        _write_record(self._fd, self.path, self.loop_name, scope)

    def __enter__(self) -> LoopLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


# --- scope paths -------------------------------------------------------------------------


def normalise_scope(scope: Sequence[str], base: Path | None = None) -> list[str]:
    """Absolute paths without `..`, `.`, symlinks or trailing slashes; `~` expanded."""
    root = base or Path.cwd()
    return [os.path.realpath(root / os.path.expanduser(entry)) for entry in scope]


def shared_path(first: str, second: str) -> str | None:
    """The narrower of two paths when they are equal or one contains the other."""
    one, two = Path(first), Path(second)
    if one.is_relative_to(two):
        return first
    if two.is_relative_to(one):
        return second
    return None


def overlap(ours: Sequence[str], theirs: Sequence[str]) -> str | None:
    """The first path two normalised scopes share (see `shared_path`), or None."""
    for their_path in theirs:
        for our_path in ours:
            path = shared_path(our_path, their_path)
            if path is not None:
                return path
    return None


def find_conflict(scope: Sequence[str], holders: Sequence[LockHolder]) -> ScopeConflict | None:
    """The first running loop whose scope overlaps `scope` (both already normalised)."""
    for holder in holders:
        path = overlap(scope, holder.scope)
        if path is not None:
            return ScopeConflict(holder, path)
    return None


# --- taking a lock -----------------------------------------------------------------------


def acquire_loop_lock(
    running_dir: Path,
    loop_name: str,
    scope: Sequence[str] = (),
    *,
    wait_for_lock: float = 0.0,
    queue: bool = False,
    on_wait: Callable[[str], None] | None = None,
) -> LoopLock:
    """Take the lock of `loop_name`, then clear its `scope` with the running loops.

    `wait_for_lock` seconds are spent waiting for another holder of the same loop to end
    (a spawned handoff resumes while its parent exits); after that `AlreadyRunningError`.
    A scope conflict raises `ScopeBusyError`, or with `queue` waits (Ctrl-C gives up).
    `on_wait` is told once, in one line, what the run waits for.
    """
    _ensure_directory(running_dir)
    paths = normalise_scope(scope)
    lock = _take_loop_lock(running_dir, loop_name, wait_for_lock, on_wait)
    try:
        _clear_scope(lock, running_dir, paths, queue, on_wait)
    except BaseException:
        lock.release()
        raise
    return lock


def lock_file_exists(running_dir: Path, loop_name: str) -> bool:
    """True once a run of `loop_name` has taken its lock here (the file stays afterwards).

    Then the lock, not the pid in the state file, says whether the loop runs: a pid can
    be reused by an unrelated process (after a reboot, soon), a held lock cannot lie.
    """
    return (running_dir / f"{loop_name}{LOCK_SUFFIX}").is_file()


def read_holder(running_dir: Path, loop_name: str) -> LockHolder | None:
    """Who holds the lock of `loop_name` now, or None when nobody does."""
    path = running_dir / f"{loop_name}{LOCK_SUFFIX}"
    if not path.is_file():
        return None
    with _registry(running_dir):
        return _probe(path)


def running_holders(running_dir: Path) -> list[LockHolder]:
    """The records of every loop lock held right now (the Temporal client checks them:
    a loop that runs here must not start on Temporal too)."""
    if not running_dir.is_dir():
        return []
    with _registry(running_dir):
        return _running_holders(running_dir, running_dir / REGISTRY_NAME)


def _ensure_directory(running_dir: Path) -> None:
    try:
        running_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise run_files_error(running_dir, exc) from None


def run_files_error(path: Path, exc: OSError) -> RunFilesError:
    problem = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError):
        problem = "a file is in the way (it must be a directory)"
    return RunFilesError(
        str(path),
        f"cannot write run files: {problem}",
        hint="ll-loop keeps each run's state, events and lock there; it must be a "
        "writable directory",
    )


def _take_loop_lock(
    running_dir: Path,
    loop_name: str,
    wait_seconds: float,
    on_wait: Callable[[str], None] | None,
) -> LoopLock:
    path = running_dir / f"{loop_name}{LOCK_SUFFIX}"
    deadline = time.monotonic() + wait_seconds
    announced = False
    while True:
        with _registry(running_dir):
            fd = _open(path)
            if _try_flock(fd, fcntl.LOCK_EX):
                try:
                    _write_record(fd, path, loop_name, ())
                except BaseException:
                    os.close(fd)
                    raise
                return LoopLock(fd, path, loop_name)
            os.close(fd)
            holder = _read_record(path)
        pid = holder.pid if holder else None
        if time.monotonic() >= deadline:
            raise AlreadyRunningError(loop_name, pid)
        if not announced and on_wait is not None:
            held_by = _pid_text(pid)
            on_wait(f"Loop {loop_name} is still held ({held_by}); waiting up to {wait_seconds:g}s")
            announced = True
        time.sleep(POLL_SECONDS)


def _clear_scope(
    lock: LoopLock,
    running_dir: Path,
    paths: list[str],
    queue: bool,
    on_wait: Callable[[str], None] | None,
) -> None:
    """Publish our scope once no running loop overlaps it (waiting with `queue`)."""
    if not paths:
        return
    announced = False
    while True:
        with _registry(running_dir):
            conflict = find_conflict(paths, _running_holders(running_dir, lock.path))
            if conflict is None:
                lock.publish(paths)
                return
        if not queue:
            raise ScopeBusyError(lock.loop_name, conflict)
        if not announced and on_wait is not None:
            on_wait(_queue_message(lock.loop_name, conflict))
            announced = True
        time.sleep(POLL_SECONDS)


def _queue_message(loop_name: str, conflict: ScopeConflict) -> str:
    holder = conflict.holder
    return (
        f"Loop {loop_name} waits for running loop {holder.loop} ({_pid_text(holder.pid)}), "
        f"which shares scope '{conflict.shown_path}' (Ctrl-C to give up)"
    )


def _running_holders(running_dir: Path, own: Path) -> list[LockHolder]:
    """The records of every loop lock held right now, except `own`."""
    holders = []
    for path in sorted(running_dir.glob(f"*{LOCK_SUFFIX}")):
        if path.name.startswith(".") or path == own:
            continue
        holder = _probe(path)
        if holder is not None:
            holders.append(holder)
    return holders


def _probe(path: Path) -> LockHolder | None:
    """The record of a held lock file; None when nobody holds it (call in the registry)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if _try_flock(fd, fcntl.LOCK_SH):
            return None  # free: its last holder has ended
    finally:
        os.close(fd)  # also drops our shared lock
    return _read_record(path) or LockHolder(path.name.removesuffix(LOCK_SUFFIX), None, None, ())


# --- low level ---------------------------------------------------------------------------


@contextlib.contextmanager
def _registry(running_dir: Path) -> Iterator[None]:
    """Hold the registry mutex for the duration of the block."""
    path = running_dir / REGISTRY_NAME
    fd = _open(path)
    try:
        deadline = time.monotonic() + REGISTRY_TIMEOUT_SECONDS
        while not _try_flock(fd, fcntl.LOCK_EX):
            if time.monotonic() >= deadline:
                raise LoopBusyError(
                    f"{path} stays locked by another ll-loop process "
                    f"(more than {REGISTRY_TIMEOUT_SECONDS:g}s)"
                )
            time.sleep(_REGISTRY_POLL_SECONDS)
        yield
    finally:
        os.close(fd)


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise run_files_error(path, exc) from None


def _try_flock(fd: int, operation: int) -> bool:
    """True when the lock was taken; False when another open file holds it."""
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _write_record(fd: int, path: Path, loop_name: str, scope: Sequence[str]) -> None:
    record = {
        "pid": os.getpid(),
        "host": os.uname().nodename,
        "loop": loop_name,
        "scope": list(scope),
        "since": now_iso(),
    }
    data = json.dumps(record).encode("utf-8") + b"\n"
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError as exc:
        raise run_files_error(path, exc) from None


def _read_record(path: Path) -> LockHolder | None:
    """The record in a lock file; None when it is missing or unreadable."""
    try:
        data: Any = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid, host, loop, scope = (data.get(key) for key in ("pid", "host", "loop", "scope"))
    return LockHolder(
        loop=loop if isinstance(loop, str) else path.name.removesuffix(LOCK_SUFFIX),
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        host=host if isinstance(host, str) else None,
        scope=tuple(item for item in scope if isinstance(item, str))
        if isinstance(scope, list)
        else (),
    )


def _pid_text(pid: int | None) -> str:
    return f"pid {pid}" if pid is not None else "pid unknown"
