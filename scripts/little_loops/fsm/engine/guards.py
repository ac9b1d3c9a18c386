"""Loop guards: notice a loop going round in circles, count visits, keep the errors seen.

Three small records, each serialisable so that a resumed run keeps its counters:

- `StallGuard`: for each state, how many times in a row it ended the same way (the same
  verdict and the same output `fingerprint`) while nothing else observable changed: the
  endings of the states run in between are the same as in the previous round, and so is
  the workspace fingerprint the caller passes (see `workspace`). When a streak reaches
  the threshold the loop is stalled. Verdicts that mean "things are fine or improving"
  (`success`, `target`, `progress`) never build a streak: a maintain loop re-checking a
  healthy system is not stuck. The streaks are per state, so a `check -> fix -> check`
  cycle whose check fails the same way each time is caught even though `fix` runs in
  between, but a silent check whose fix changes files is making progress.
- `VisitCounter`: how many times each state was entered (for `max_visits`).
- `ErrorLog`: the last `ERROR_LOG_LIMIT` errors (error verdicts, `FATAL_ERROR` payloads,
  failed actions with the tail of their stderr), to report on the way out.

What counts as "the same output" (`normalize_output`): surrounding whitespace is dropped
and runs of whitespace become one space; timestamps (ISO dates and times, clock times,
10- and 13-digit epoch numbers) and durations (`1.5s`, `250 ms`, `3 seconds`) are masked,
because they change on every run without meaning any progress. Other numbers are kept:
"3 tests failed" after "4 tests failed" is progress. A huge output is judged by its first
and last `FINGERPRINT_EDGE_CHARS` characters so the work stays bounded.

Nothing here runs anything or knows about files; the executor feeds it and persistence
stores `to_dict()` results.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from little_loops.fsm.schema import DEFAULT_STALL_THRESHOLD

__all__ = [
    "DEFAULT_STALL_THRESHOLD",
    "ERROR_LOG_LIMIT",
    "FINGERPRINT_EDGE_CHARS",
    "HEAD_STALL_EXEMPT_VERDICTS",
    "STALL_EXEMPT_VERDICTS",
    "ErrorEntry",
    "ErrorLog",
    "StallGuard",
    "StallStreak",
    "VisitCounter",
    "fingerprint",
    "first_lines",
    "is_error_list",
    "is_streak_map",
    "is_visit_map",
    "normalize_output",
    "stall_message",
    "stderr_tail",
]

ERROR_LOG_LIMIT = 50
FINGERPRINT_EDGE_CHARS = 4 * 1024
STALL_EXEMPT_VERDICTS = frozenset({"success", "target", "progress"})
# A HEAD file names success `yes` (spec/ll-head-dialect.md §3.1): it builds no streak either.
HEAD_STALL_EXEMPT_VERDICTS = STALL_EXEMPT_VERDICTS | {"yes"}

PREVIEW_LINES = 5
PREVIEW_WIDTH = 200
# The preview's lines are looked for in this much of the start of an output.
PREVIEW_SCAN_CHARS = 16 * 1024
STDERR_TAIL_LINES = 20
STDERR_TAIL_CHARS = 2000
MESSAGE_CHARS = 2000

# One pass over the text: every alternative starts with a digit, and the lookahead lets
# the engine skip other characters at once (several separate passes cost several times
# as much on a long output). A full timestamp is tried before its date alone.
_VOLATILE = re.compile(
    r"(?=\d)(?:"
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
    r"|\b\d{10}(?:\d{3})?\b"
    r"|\b\d+(?:\.\d+)?\s?(?:ms|s|secs?|seconds?)\b"
    r")"
)


# --- fingerprints --------------------------------------------------------------------


def normalize_output(text: str) -> str:
    """`text` with volatile parts masked and whitespace collapsed (see the module doc)."""
    edge = FINGERPRINT_EDGE_CHARS
    if len(text) > 2 * edge:
        text = f"{text[:edge]}\n[...]\n{text[-edge:]}"
    return " ".join(_VOLATILE.sub("#", text).split())


def fingerprint(output: str, verdict: str | None = None, payload: str | None = None) -> str:
    """A short hash of how a state ended.

    `payload` (an error message or a continuation prompt) is what matters when there is
    one: a timeout's partial output may differ while the failure is the same.
    """
    if payload:
        basis = "payload:" + normalize_output(payload)
    else:
        basis = "output:" + normalize_output(output)
    import hashlib  # here: only a failing step is hashed, so a healthy run never loads it

    digest = hashlib.sha256(f"{verdict or ''}\0{basis}".encode("utf-8", "backslashreplace"))
    return digest.hexdigest()[:16]


def first_lines(text: str, count: int = PREVIEW_LINES, width: int = PREVIEW_WIDTH) -> str:
    """The first `count` non-blank lines of `text`, each cut to `width` characters."""
    lines: list[str] = []
    for line in text[:PREVIEW_SCAN_CHARS].splitlines():
        if line.strip():
            lines.append(line.rstrip() if len(line) <= width else line[: width - 3] + "...")
        if len(lines) == count:
            break
    return "\n".join(lines)


# --- stall detection -----------------------------------------------------------------


@dataclass
class StallStreak:
    """How one state has been ending lately: the same way `count` times in a row.

    Also what the next round is compared with: `since`, a running hash of the endings of
    the other states since this state last ended (None: this round took an unusual path,
    through `on_stall` or a resume, so it is neither compared nor kept); `cycle`, that
    hash for the previous round (None: no round to compare with yet); `workspace`, the
    workspace fingerprint when this state last ended (None: not watched). `recovered` is
    set once `on_stall` was followed for this streak. State files written before these
    fields load with their defaults.
    """

    verdict: str
    fingerprint: str
    count: int
    preview: str
    since: str | None = ""
    cycle: str | None = None
    workspace: str | None = None
    recovered: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StallStreak:
        cycle, workspace = data.get("cycle"), data.get("workspace")
        since = data.get("since", "")
        return cls(
            verdict=str(data["verdict"]),
            fingerprint=str(data["fingerprint"]),
            count=int(data["count"]),
            preview=str(data.get("preview") or ""),
            since=None if since is None else str(since),
            cycle=None if cycle is None else str(cycle),
            workspace=None if workspace is None else str(workspace),
            recovered=data.get("recovered") is True,
        )

    def to_dict(self) -> dict[str, Any]:
        """The four keys state files always had, and the others only when set."""
        out = asdict(self)
        for key, unset in (("since", ""), ("cycle", None), ("workspace", None)):
            if out[key] == unset:
                del out[key]
        if not self.recovered:
            del out["recovered"]
        return out

    def unchanged(self, workspace: str | None) -> bool:
        """Whether the round that just ended changed nothing that can be observed."""
        same_round = self.cycle is None or self.since is None or self.cycle == self.since
        same_files = self.workspace is None or workspace is None or self.workspace == workspace
        return same_round and same_files

    def rebase(self) -> None:
        """Neither compare nor keep the next round: the route back to this state will be an
        unusual one (a recovery state runs, or a resume re-runs this state at once)."""
        self.cycle = None
        self.since = None


class StallGuard:
    """Per-state streaks of identical endings with nothing changed in between; a streak at
    `threshold` is a stall.

    A threshold of 0 turns the guard off.
    """

    def __init__(
        self,
        threshold: int = DEFAULT_STALL_THRESHOLD,
        exempt: frozenset[str] = STALL_EXEMPT_VERDICTS,
    ) -> None:
        self.threshold = threshold
        self.exempt = exempt  # verdicts that build no streak (the loop's names of success)
        self.streaks: dict[str, StallStreak] = {}

    def observe(
        self,
        state: str,
        verdict: str,
        digest: str,
        preview: str = "",
        *,
        workspace: str | None = None,
    ) -> StallStreak | None:
        """Record that `state` ended with `verdict` and output fingerprint `digest`, with
        the workspace fingerprint `workspace`.

        Returns the streak when it has reached the threshold (the loop is stalled).
        """
        if not self.counts(verdict):
            self.forget(state)
            self.pass_by(state, verdict, digest)
            return None
        self.pass_by(state, verdict, digest)
        streak = self.streaks.get(state)
        if streak is None or (streak.verdict, streak.fingerprint) != (verdict, digest):
            streak = StallStreak(verdict, digest, 1, preview, workspace=workspace)
            self.streaks[state] = streak
        else:
            if streak.unchanged(workspace):
                streak.count += 1
            else:  # the same ending, but something moved: a new streak starts here
                streak.count, streak.recovered = 1, False
            streak.cycle, streak.since, streak.workspace = streak.since, "", workspace
            # The latest words (the output is the same up to what the fingerprint leaves
            # out, such as times): a streak restored by a resume showed the first run's.
            streak.preview = preview or streak.preview
        return streak if streak.count >= self.threshold else None

    def counts(self, verdict: str) -> bool:
        """Whether an ending with `verdict` can build a streak (else it clears one)."""
        return self.threshold > 0 and verdict not in self.exempt

    def forget(self, state: str) -> None:
        self.streaks.pop(state, None)

    def watches_others(self, state: str) -> bool:
        """Whether the ending of `state` matters to another state's streak."""
        return any(name != state for name in self.streaks)

    def pass_by(self, state: str, verdict: str | None, digest: str) -> None:
        """Note how `state` ended in the rounds of the other states' streaks."""
        step = f"{state}\0{verdict or ''}\0{digest}"
        for name, streak in self.streaks.items():
            if name != state and streak.since is not None:
                streak.since = _chain(streak.since, step)

    def observe_ending(
        self,
        state: str,
        verdict: str,
        output: str,
        payload: str | None = None,
        *,
        workspace: str | None = None,
    ) -> StallStreak | None:
        """`observe` for an ending given as text (see `fingerprint`).

        The fingerprint is only computed when it can matter, so a healthy run (or a guard
        turned off) costs no hashing.
        """
        if not self.counts(verdict) and not self.watches_others(state):
            self.forget(state)
            return None
        digest = fingerprint(output, verdict, payload)
        preview = first_lines(payload or output)
        return self.observe(state, verdict, digest, preview, workspace=workspace)

    def to_dict(self) -> dict[str, Any]:
        return {state: streak.to_dict() for state, streak in self.streaks.items()}

    def restore(self, data: dict[str, Any]) -> None:
        """Take back the streaks `to_dict` saved (the threshold comes from the loop)."""
        self.streaks = {state: StallStreak.from_dict(item) for state, item in data.items()}


def _chain(previous: str, step: str) -> str:
    import hashlib  # see fingerprint

    return hashlib.sha256(f"{previous}\0{step}".encode("utf-8", "backslashreplace")).hexdigest()[
        :16
    ]


def stall_message(state: str, streak: StallStreak) -> str:
    """What the user reads when a loop stalls: the state, how, and what it kept saying."""
    times = f"{streak.count} times in a row"
    message = f"state '{state}' ended with verdict '{streak.verdict}' and the same output {times}"
    if not streak.preview:
        return message + " (no output)"
    shown = "\n".join(f"  | {line}" for line in streak.preview.splitlines())
    return f"{message}; it said:\n{shown}"


# --- visits --------------------------------------------------------------------------


class VisitCounter:
    """How many times each state was entered during the run (resumes included)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def count(self, state: str) -> int:
        return self.counts.get(state, 0)

    def enter(self, state: str) -> int:
        """Count one more visit of `state`; return the new count."""
        self.counts[state] = self.count(state) + 1
        return self.counts[state]

    def forget_one(self, state: str) -> None:
        """Take back one visit (a resumed run re-enters a state that was cut off)."""
        remaining = self.count(state) - 1
        if remaining > 0:
            self.counts[state] = remaining
        else:
            self.counts.pop(state, None)

    def to_dict(self) -> dict[str, int]:
        return dict(self.counts)

    def restore(self, data: dict[str, Any]) -> None:
        self.counts = {state: int(count) for state, count in data.items()}


# --- errors --------------------------------------------------------------------------


@dataclass
class ErrorEntry:
    """One error seen during a run. `source`: `verdict`, `fatal_error` or `action`."""

    state: str
    iteration: int
    source: str
    message: str
    stderr_tail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.stderr_tail is None:
            del out["stderr_tail"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ErrorEntry:
        tail = data.get("stderr_tail")
        return cls(
            state=str(data["state"]),
            iteration=int(data["iteration"]),
            source=str(data["source"]),
            message=str(data["message"]),
            stderr_tail=None if tail is None else str(tail),
        )


def stderr_tail(stderr: str) -> str | None:
    """The last lines of `stderr` worth showing, or None when it says nothing."""
    lines = stderr.rstrip().splitlines()[-STDERR_TAIL_LINES:]
    tail = "\n".join(lines)
    if not tail.strip():
        return None
    return tail if len(tail) <= STDERR_TAIL_CHARS else "..." + tail[-STDERR_TAIL_CHARS:]


class ErrorLog:
    """The last `limit` errors of a run, oldest first."""

    def __init__(self, limit: int = ERROR_LOG_LIMIT) -> None:
        self.limit = limit
        self._entries: deque[ErrorEntry] = deque(maxlen=limit)

    @property
    def entries(self) -> list[ErrorEntry]:
        return list(self._entries)

    def record(
        self, state: str, iteration: int, source: str, message: str, stderr: str = ""
    ) -> ErrorEntry:
        """Keep one error (the oldest goes when the log is full)."""
        if len(message) > MESSAGE_CHARS:
            message = message[: MESSAGE_CHARS - 3] + "..."
        entry = ErrorEntry(state, iteration, source, message, stderr_tail(stderr))
        self._entries.append(entry)
        return entry

    def to_list(self) -> list[dict[str, Any]]:
        return [entry.to_dict() for entry in self._entries]

    def restore(self, data: list[dict[str, Any]]) -> None:
        self._entries = deque((ErrorEntry.from_dict(item) for item in data), maxlen=self.limit)


# --- what a state file may hold (checked before `restore`) ------------------------------


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_FieldTypes = dict[str, type | tuple[type, ...]]


def _has(item: object, types: _FieldTypes) -> bool:
    if not isinstance(item, dict):
        return False
    return all(isinstance(item.get(key), kind) for key, kind in types.items())


def is_visit_map(value: object) -> bool:
    """A saved `VisitCounter`: state name -> count."""
    return isinstance(value, dict) and all(_is_count(count) for count in value.values())


def is_streak_map(value: object) -> bool:
    """Saved `StallGuard` streaks: state name -> {verdict, fingerprint, count[, preview,
    since, cycle, workspace, recovered]} (the bracketed keys may be missing)."""
    if not isinstance(value, dict):
        return False
    optional_text = (str, type(None))
    fields: _FieldTypes = {
        "verdict": str,
        "fingerprint": str,
        "preview": optional_text,
        "since": optional_text,
        "cycle": optional_text,
        "workspace": optional_text,
        "recovered": (bool, type(None)),
    }
    items = value.values()
    return all(_has(item, fields) and _is_count(item.get("count")) for item in items)


def is_error_list(value: object) -> bool:
    """A saved `ErrorLog`: a list of {state, iteration, source, message[, stderr_tail]}."""
    if not isinstance(value, list):
        return False
    fields: _FieldTypes = {
        "state": str,
        "source": str,
        "message": str,
        "stderr_tail": (str, type(None)),
    }
    return all(_has(item, fields) and _is_count(item.get("iteration")) for item in value)
