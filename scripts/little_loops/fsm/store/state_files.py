"""The run-state and event files of one loop, and the checks that read them back.

This module owns the on-disk format under `<loops_dir>/.running/`: the `LoopState` record
(`<name>.state.json`, written atomically, carrying a version number) and the events log
(`<name>.events.jsonl`, one whole JSON line per write). It knows nothing about executors;
`persistence` builds on it. Everything here is re-exported by `little_loops.fsm.persistence`,
which is the public import path.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import random
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from little_loops.fsm.engine.guards import is_error_list, is_streak_map, is_visit_map
from little_loops.fsm.errors import StateFileError

RUNNING_DIR = ".running"
STATE_VERSION = 1
PHASE_ENTERED = "entered"
PHASE_ROUTED = "routed"

_STATE_SUFFIX = ".state.json"
_EVENTS_SUFFIX = ".events.jsonl"
_LOGS_SUFFIX = ".logs"
_TAIL_BLOCK_BYTES = 64 * 1024
# Deeper than this, an event value is written with str(): it can only be a cycle or junk.
_MAX_EVENT_DEPTH = 64

REQUIRED_KEYS = ("loop_name", "current_state", "iteration", "started_at", "status")


def now_iso() -> str:
    """Now in UTC, ISO 8601 with microseconds and `+00:00` (the reference format)."""
    return datetime.now(UTC).isoformat()


def is_process_alive(pid: int | None) -> bool:
    """True if a process with this id exists (it may belong to another user)."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # it exists, we just may not signal it
    except (ProcessLookupError, OverflowError):
        return False
    return True


# --- what a state file may contain -------------------------------------------------------


def _kind(value: object) -> str:
    """How a JSON value is named in error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or check(value)


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_group_list(value: object) -> bool:
    """`action_groups`: `[{"pgid": int, "started": int or null}, ...]`."""
    return isinstance(value, list) and all(
        isinstance(item, dict) and _is_int(item.get("pgid")) for item in value
    )


def _is_string_map(value: object) -> bool:
    """`context_overrides`: `{"KEY": "VALUE", ...}` (`run --context`)."""
    return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())


# key -> (check, what is expected). Keys not listed are ignored (newer writers may add some).
def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_limit_wait(value: object) -> bool:
    return isinstance(value, dict) and _is_number(value.get("until"))


_FIELD_RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "loop_name": (_is_str, "a string"),
    "current_state": (_is_str, "a string"),
    "iteration": (_is_int, "an integer"),
    "captured": (_is_object, "an object"),
    "prev_result": (_optional(_is_object), "an object or null"),
    "last_result": (_optional(_is_object), "an object or null"),
    "started_at": (_is_str, "a string"),
    "updated_at": (_is_str, "a string"),
    "status": (_is_str, "a string"),
    "continuation_prompt": (_optional(_is_str), "a string or null"),
    "pid": (_optional(_is_int), "an integer or null"),
    "host": (_optional(_is_str), "a string or null"),
    "terminated_by": (_optional(_is_str), "a string or null"),
    "error": (_optional(_is_str), "a string or null"),
    "elapsed_ms": (_optional(_is_int), "an integer or null"),
    "handoff_count": (_is_int, "an integer"),
    "resumed_at": (_optional(_is_str), "a string or null"),
    "phase": (
        lambda value: value in (None, PHASE_ENTERED, PHASE_ROUTED),
        f"'{PHASE_ENTERED}', '{PHASE_ROUTED}' or null",
    ),
    "visits": (is_visit_map, "an object of state names to counts"),
    "stall_streaks": (is_streak_map, "an object of state names to streaks"),
    "errors": (is_error_list, "an array of error records"),
    "action_groups": (_is_group_list, "an array of {pgid, started} objects"),
    "context_overrides": (_is_string_map, "an object of strings"),
    "spending": (_is_object, "an object"),
    "max_cost_usd": (_optional(_is_number), "a number or null"),
    "notify": (_optional(_is_str), "a string or null"),
    "limit_wait": (_optional(_is_limit_wait), "an object with a numeric 'until', or null"),
    "head": (_optional(_is_object), "an object or null"),
}


# --- loose values a state file may hold, read as what they mean -------------------------
#
# The reference's `LoopState.from_dict` checked no types, so a file written by hand, by its
# tests or by another tool loaded as long as the keys were there. What we can use is read
# the way it was meant; only what cannot be used is refused (with the messages above).

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,18}")


def _loose_int(value: object) -> object:
    """3, 3.0 and "3" all mean 3; anything else is returned unchanged (and then refused)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        return int(value)
    return value


def _loose_optional_int(value: object) -> object:
    return None if value is None else _loose_int(value)


def _null_as(
    default: Callable[[], object], read: Callable[[object], object] = lambda v: v
) -> Callable[[object], object]:
    """Null reads as a fresh `default()` (the value the reference used when the key was
    missing); anything else goes through `read`."""
    return lambda value: default() if value is None else read(value)


# key -> how a loose value is read before the type rules apply.
_LOOSE_READERS: dict[str, Callable[[object], object]] = {
    "iteration": _loose_int,
    "pid": _loose_optional_int,
    "elapsed_ms": _loose_optional_int,
    "handoff_count": _null_as(int, _loose_int),
    "captured": _null_as(dict),
    "updated_at": _null_as(str),
}


def loosened(data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a state mapping with loose values read as what they mean."""
    out = dict(data)
    for key, read in _LOOSE_READERS.items():
        if key in out:
            out[key] = read(out[key])
    return out


def state_problem(data: object) -> str | None:
    """Why `data` is not a readable state record, or None if it is one."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {_kind(data)}"
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        names = ", ".join(f"'{key}'" for key in missing)
        return f"missing required key{'s' if len(missing) > 1 else ''} {names}"
    data = loosened(data)
    version = data.get("version", STATE_VERSION)
    if not _is_int(version) or version != STATE_VERSION:
        return f"unsupported version {version!r} (this ll-loop reads version {STATE_VERSION})"
    for key, (check, expected) in _FIELD_RULES.items():
        if key in data and not check(data[key]):
            shown = f"{data[key]!r}" if key == "phase" else _kind(data[key])
            return f"'{key}' must be {expected}, got {shown}"
    # A captured value that is not an object (the reference's tests wrote strings) is kept
    # as it is: `${captured.<name>}` gives it, and `status --json` shows it unchanged.
    return None


# --- the state record --------------------------------------------------------------------


@dataclass
class LoopState:
    """One snapshot of a run: where it is, what it captured, and how it ended."""

    loop_name: str
    current_state: str
    iteration: int
    captured: dict[str, dict[str, Any]]
    prev_result: dict[str, Any] | None
    last_result: dict[str, Any] | None
    started_at: str
    updated_at: str
    status: str
    continuation_prompt: str | None = None
    # Additions (written only when set, except `version`).
    version: int = STATE_VERSION
    pid: int | None = None
    host: str | None = None
    terminated_by: str | None = None
    error: str | None = None
    elapsed_ms: int | None = None
    handoff_count: int = 0
    resumed_at: str | None = None
    phase: str | None = None
    # Loop guards (`guards`), kept so a resumed run goes on counting: visits per state,
    # streaks of identical endings, and the last errors seen. Written when not empty.
    visits: dict[str, int] = field(default_factory=dict)
    stall_streaks: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    # The process groups of the running action and of what actions left in the background
    # (`{"pgid", "started"}`, see `process_groups`), so that a later process can stop
    # what a runner that died left running. Written when not empty.
    action_groups: list[dict[str, Any]] = field(default_factory=list)
    # `run --context KEY=VALUE` values, kept so `resume` runs with them. Written when set.
    context_overrides: dict[str, str] = field(default_factory=dict)
    # What the run spent ({"cost_usd", "tokens": {...}}, `engine.spending`), and the
    # usage-limit wait under way or cut short (`RunCursor.limit_wait`; its `until` is
    # epoch seconds). Written when set.
    spending: dict[str, Any] = field(default_factory=dict)
    limit_wait: dict[str, Any] | None = None
    # The budget given with `run --max-cost` and the command given with `--notify` ("":
    # none), kept so `resume` keeps them. Written when set.
    max_cost_usd: float | None = None
    notify: str | None = None
    # What a HEAD-dialect loop's run keeps besides (`engine.head_memory.HeadMemory` as a
    # dict: retry counts, caps, sub-loops under way, ...). Written when not empty.
    head: dict[str, Any] = field(default_factory=dict)

    def current_iteration(self) -> int:
        """The iteration number `current_state` runs as.

        A running loop's snapshot is taken when its next state is chosen (phase `routed`),
        so `iteration` counts the states finished; for a run still going, or one stopped
        or killed on its way, `current_state` is under way (or next) as the next number.
        """
        if self.phase == PHASE_ROUTED and self.terminated_by in (None, "signal"):
            return self.iteration + 1
        return self.iteration

    def to_dict(self) -> dict[str, Any]:
        """The reference keys in reference order, then the additions that are set."""
        out: dict[str, Any] = {
            "loop_name": self.loop_name,
            "current_state": self.current_state,
            "iteration": self.iteration,
            "captured": self.captured,
            "prev_result": self.prev_result,
            "last_result": self.last_result,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
            "status": self.status,
        }
        if self.continuation_prompt is not None:
            out["continuation_prompt"] = self.continuation_prompt
        out["version"] = self.version
        for key in ("pid", "host", "terminated_by", "error", "elapsed_ms"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.handoff_count > 0:
            out["handoff_count"] = self.handoff_count
        for key in ("resumed_at", "phase"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in (
            "visits",
            "stall_streaks",
            "errors",
            "action_groups",
            "context_overrides",
            "spending",
            "limit_wait",
            "max_cost_usd",
        ):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.notify is not None:
            out["notify"] = self.notify
        if self.head:
            out["head"] = self.head
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoopState:
        """Build from a parsed state file.

        A missing required key raises `KeyError` (as the reference did); a loose value that
        can be used is read as what it means (`"3"` or `3.0` for 3, null for a default; a
        captured value that is not an object is kept); any other wrong type, or an
        unsupported version, raises `ValueError` naming the key. Unknown keys are ignored.
        """
        for key in REQUIRED_KEYS:
            if key not in data:
                raise KeyError(key)
        problem = state_problem(dict(data))
        if problem is not None:
            raise ValueError(problem)
        data = loosened(data)
        return cls(
            loop_name=data["loop_name"],
            current_state=data["current_state"],
            iteration=data["iteration"],
            captured=data.get("captured", {}),
            prev_result=data.get("prev_result"),
            last_result=data.get("last_result"),
            started_at=data["started_at"],
            updated_at=data.get("updated_at", ""),
            status=data["status"],
            continuation_prompt=data.get("continuation_prompt"),
            pid=data.get("pid"),
            host=data.get("host"),
            terminated_by=data.get("terminated_by"),
            error=data.get("error"),
            elapsed_ms=data.get("elapsed_ms"),
            handoff_count=data.get("handoff_count", 0),
            resumed_at=data.get("resumed_at"),
            phase=data.get("phase"),
            visits=data.get("visits", {}),
            stall_streaks=data.get("stall_streaks", {}),
            errors=data.get("errors", []),
            action_groups=data.get("action_groups", []),
            context_overrides=data.get("context_overrides", {}),
            spending=data.get("spending", {}),
            limit_wait=data.get("limit_wait"),
            max_cost_usd=data.get("max_cost_usd"),
            notify=data.get("notify"),
            head=data.get("head") or {},
        )


# --- low-level file operations -----------------------------------------------------------


def _create_temp_beside(path: Path) -> tuple[int, str]:
    """Create `.<file name>.<8 hex digits>.tmp` next to `path` (the umask applies as for
    open()). The digits only have to differ from a leftover's: `O_EXCL` refuses a clash,
    so they come from the process's PRNG, not from a system call per snapshot."""
    prefix = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.")
    while True:
        temp = f"{prefix}{_temp_names.getrandbits(32):08x}.tmp"
        try:
            return os.open(temp, _TEMP_FLAGS, 0o666), temp
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_temp_names = random.Random()  # seeded from the OS once; reseeded in a forked child
os.register_at_fork(after_in_child=_temp_names.seed)


def write_file_atomically(path: Path, text: str, *, durable: bool = True) -> None:
    """Replace `path` with `text` so a reader sees the old or the new file, never a mix.

    The text goes to a new file beside it, is flushed to disk (`fsync`), then renamed
    over `path`: after a crash, even a power cut, the file is the old one or the new one.
    Without `durable` the flush is skipped: a crash of the process still leaves the old
    or the new file, a power cut may leave the old one (for what a power cut ends anyway).
    """
    data = text.encode("utf-8")
    fd, temp = _create_temp_beside(path)
    try:
        try:
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    while written < len(data):  # only on a full disk or similar; write the rest
        written += os.write(fd, data[written:])


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A copy of `value` that json can always write (str() for anything unusual)."""
    if depth > _MAX_EVENT_DEPTH:
        return str(value)
    if isinstance(value, dict):
        return {str(key): _jsonable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item, depth + 1) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def event_line(event: Mapping[str, Any]) -> bytes:
    """One compact JSON line for an event; never fails on odd values."""
    try:
        text = json.dumps(event, default=str)
    except (TypeError, ValueError, RecursionError):  # non-str keys, cycles
        text = json.dumps(_jsonable(event))
    return (text + "\n").encode("utf-8")


def append_whole_line(path: Path, line: bytes) -> None:
    """Append `line` with one write on an O_APPEND descriptor so lines never interleave."""
    fd = os.open(path, _APPEND_FLAGS, 0o666)
    try:
        _write_all(fd, line)
    finally:
        os.close(fd)


_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


def end_events_with_a_whole_line(path: Path) -> None:
    """Drop an unterminated last line (a write cut short by a kill or a full disk), so the
    next event starts a line of its own; a last line that is a whole event keeps it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        start = _start_of_last_line(fd, size)
        if parse_event_line(os.pread(fd, size - start, start)) is not None:
            os.pwrite(fd, b"\n", size)
        else:
            os.ftruncate(fd, start)
    finally:
        os.close(fd)


def _start_of_last_line(fd: int, size: int) -> int:
    """Offset just after the last line break before `size` (0 when there is none)."""
    position = size
    while position > 0:
        block_start = max(position - _TAIL_BLOCK_BYTES, 0)
        found = os.pread(fd, position - block_start, block_start).rfind(b"\n")
        if found >= 0:
            return block_start + found + 1
        position = block_start
    return 0


def parse_event_line(line: bytes) -> dict[str, Any] | None:
    """The event on one line, or None for a blank, damaged or non-object line."""
    if not line.strip():
        return None
    try:
        event = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def read_last_events(path: Path, count: int) -> list[dict[str, Any]]:
    """The last `count` readable events, reading the file backwards block by block."""
    if count <= 0:
        return []
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return []
    newest_first: list[dict[str, Any]] = []
    with handle:
        position = handle.seek(0, os.SEEK_END)
        head = b""  # start of the earliest line read so far; may still be incomplete
        while position > 0 and len(newest_first) < count:
            size = min(_TAIL_BLOCK_BYTES, position)
            position -= size
            handle.seek(position)
            lines = (handle.read(size) + head).split(b"\n")
            head = lines[0]
            _collect_newest_first(lines[1:], newest_first, count)
        if position == 0:
            _collect_newest_first([head], newest_first, count)
    newest_first.reverse()
    return newest_first


def _collect_newest_first(lines: list[bytes], into: list[dict[str, Any]], count: int) -> None:
    for line in reversed(lines):
        if len(into) >= count:
            return
        event = parse_event_line(line)
        if event is not None:
            into.append(event)


# --- one loop's files --------------------------------------------------------------------


class StatePersistence:
    """The state and event files of one loop under `<loops_dir>/.running/`."""

    def __init__(self, loop_name: str, loops_dir: Path | None = None) -> None:
        self.loop_name = loop_name
        self.loops_dir = loops_dir or Path(".loops")
        self.running_dir = self.loops_dir / RUNNING_DIR
        self.state_file = self.running_dir / f"{loop_name}{_STATE_SUFFIX}"
        self.events_file = self.running_dir / f"{loop_name}{_EVENTS_SUFFIX}"
        # Addition: the folder of the run's per-action output logs.
        self.logs_dir = self.running_dir / f"{loop_name}{_LOGS_SUFFIX}"
        self._keep_events = False  # see `keep_events_open`
        self._events_fd: int | None = None

    def initialize(self) -> None:
        """Create the running directory (and parents) if needed."""
        self.running_dir.mkdir(parents=True, exist_ok=True)

    def save_state(self, state: LoopState, *, durable: bool = True) -> None:
        """Stamp `state.updated_at` and write it atomically (2-space indent, no newline);
        `durable=False` skips the flush to disk (see `write_file_atomically`)."""
        state.updated_at = now_iso()
        text = json.dumps(state.to_dict(), indent=2)
        write_file_atomically(self.state_file, text, durable=durable)

    def load_state(self) -> LoopState | None:
        """The saved state, or None when it is missing or damaged (reference behaviour)."""
        try:
            return self.load_state_checked()
        except StateFileError:
            return None

    def load_state_checked(self) -> LoopState | None:
        """The saved state; None only when there is no file; `StateFileError` if damaged."""
        try:
            raw = self.state_file.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # no file (or no directory) there
            return None
        except OSError as exc:
            raise StateFileError(str(self.state_file), f"cannot be read: {exc.strerror}") from exc
        data = self._parse_json(raw)
        problem = state_problem(data)
        if problem is not None:
            raise StateFileError(str(self.state_file), problem)
        return LoopState.from_dict(data)

    def _parse_json(self, raw: bytes) -> Any:
        path = str(self.state_file)
        if not raw.strip():
            raise StateFileError(path, "the file is empty")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StateFileError(path, f"not UTF-8 text (bad byte at offset {exc.start})") from exc
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno}, column {exc.colno}"
            raise StateFileError(path, f"invalid JSON at {where}: {_json_problem(exc)}") from exc
        except (ValueError, RecursionError) as exc:  # e.g. huge integers, deep nesting
            raise StateFileError(path, f"invalid JSON: {exc}") from exc

    def clear_state(self) -> None:
        """Delete the state file, and temp files a crashed writer may have left behind."""
        self.state_file.unlink(missing_ok=True)
        self._remove_stray_temp_files()

    def _remove_stray_temp_files(self) -> None:
        pattern = f".{glob.escape(self.state_file.name)}.*.tmp"
        if self.running_dir.is_dir():
            for stray in self.running_dir.glob(pattern):
                stray.unlink(missing_ok=True)

    def remove_crash_leftovers(self) -> None:
        """Tidy what a killed writer left: temp files, and a last event line cut short.

        Only for the process that owns the loop now (it holds the loop lock): a live
        writer's temp file would otherwise disappear under it.
        """
        self._remove_stray_temp_files()
        end_events_with_a_whole_line(self.events_file)

    def append_event(self, event: dict[str, Any]) -> None:
        """Append one event as one JSON line (values json cannot write become str)."""
        line = event_line(event)
        if not self._keep_events:
            append_whole_line(self.events_file, line)
            return
        if self._events_fd is None:
            self._events_fd = os.open(self.events_file, _APPEND_FLAGS, 0o666)
        _write_all(self._events_fd, line)

    @contextlib.contextmanager
    def keep_events_open(self) -> Iterator[None]:
        """Append events through one descriptor while inside, instead of opening the file
        for each event (the open and the close are most of an append's cost).

        Each event is still one `write()` on an `O_APPEND` descriptor, so lines stay
        whole and never interleave with another writer's (`ll-loop stop`). The file is
        opened by the first event, so a failure to open it is that event's failure.
        """
        self._keep_events = True
        try:
            yield
        finally:
            self._keep_events = False
            self._close_events()

    def _close_events(self) -> None:
        fd, self._events_fd = self._events_fd, None
        if fd is not None:
            os.close(fd)

    def read_events(self) -> list[dict[str, Any]]:
        """Every readable event in file order; blank and damaged lines are skipped."""
        try:
            raw = self.events_file.read_bytes()
        except FileNotFoundError:
            return []
        events = (parse_event_line(line) for line in raw.split(b"\n"))
        return [event for event in events if event is not None]

    def read_events_tail(self, n: int) -> list[dict[str, Any]]:
        """The last `n` readable events in file order, at a cost that grows with `n` only."""
        return read_last_events(self.events_file, n)

    def clear_events(self) -> None:
        """Delete the events file if present."""
        self._close_events()  # the next event makes a new file
        self.events_file.unlink(missing_ok=True)

    def clear_all(self) -> None:
        """Delete the state file, then the events file."""
        self.clear_state()
        self.clear_events()


def _json_problem(exc: json.JSONDecodeError) -> str:
    # json's messages such as "Unterminated string starting at" expect a position after
    # them; the position is already given, so the dangling "at" goes.
    return exc.msg.removesuffix(" at")
