"""The `LoopState` record (one `<name>.state.json`) and the checks that read it back.

What a state file may hold, key by key (`state_problem`), how loosely older or hand-made
files are taken (`loosened`), and the record itself with its `to_dict`/`from_dict`. No I/O:
`state_files.StatePersistence` reads and writes the files; everything here is re-exported
there and by `little_loops.fsm.persistence`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.engine.guards import is_error_list, is_streak_map, is_visit_map

STATE_VERSION = 1
PHASE_ENTERED = "entered"
PHASE_ROUTED = "routed"
WAITING = "waiting_for_limit"
"""The status of a run waiting for a usage limit to reset (its process is alive)."""

REQUIRED_KEYS = ("loop_name", "current_state", "iteration", "started_at", "status")


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
    "max_tokens": (_optional(_is_int), "an integer or null"),
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
    # Addition: the budget given with `run --max-tokens`, kept so `resume` keeps it.
    max_tokens: int | None = None

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
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
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
            max_tokens=data.get("max_tokens"),
        )
