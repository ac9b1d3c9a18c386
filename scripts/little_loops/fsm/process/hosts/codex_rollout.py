"""What codex keeps about a turn in its session rollout file (spec agent-hosts.md §1).

Codex writes every session to `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<thread>.jsonl`
(`CODEX_HOME` is the user's: the variable, else `~/.codex`; it is only read here). A
resumed session is appended to the same file. For the last turn (from its `task_started`)
it holds what `codex exec --json` does not print: the turn's own tokens
(`token_usage_record.turn_token_usage`; the stream gives the thread's total after a
resume), the model (`turn_context`), the quota use the API reported
(`token_count.rate_limits.primary/secondary`: `used_percent`, `window_minutes`,
`resets_at`) and how a failed turn failed (`task_complete.error.codex_error_info`:
`usage_limit_exceeded`, `rate_limit_exceeded`, `internal_server_error`,
`{"http_connection_failed": {"http_status_code": 401}}`, ...).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from little_loops.fsm.model.claude_run import RateLimitInfo

__all__ = ["RolloutTurn", "codex_home", "find_rollout", "read_last_turn"]

_WANTED = ('"task_started"', '"token_usage_record"', '"turn_context"', '"token_count"')
_WANTED_END = '"task_complete"'
_HEAD_CHARS = 160  # an entry's kind is named this early in its line
_WINDOW_NAMES = {300: "five_hour", 10080: "seven_day"}
TAIL_BYTES = 4 * 1024 * 1024


@dataclass
class RolloutTurn:
    """The last turn of a session, as its rollout file tells it."""

    usage: dict[str, Any] | None = None  # the turn's own token counts
    model: str | None = None
    quota: RateLimitInfo | None = None  # the fullest window the API reported
    error_info: Any = None  # `codex_error_info` of a failed turn
    error_message: str | None = None


def codex_home() -> Path:
    """The user's Codex home: `CODEX_HOME`, else `~/.codex`."""
    configured = os.environ.get("CODEX_HOME")
    return Path(configured) if configured else Path.home() / ".codex"


def find_rollout(home: Path, thread_id: str) -> Path | None:
    """The rollout file of session `thread_id` under `home` (None: there is none)."""
    if not thread_id or "/" in thread_id or "*" in thread_id:
        return None
    found = sorted((home / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return found[-1] if found else None


def read_last_turn(path: Path, tail_bytes: int = TAIL_BYTES) -> RolloutTurn:
    """The last turn recorded in the rollout file at `path` (empty when unreadable).

    A session resumed many times makes a long file: its last `tail_bytes` are read first,
    and the whole file only when the last turn started before them."""
    try:
        with path.open("rb") as data:
            start = max(0, data.seek(0, os.SEEK_END) - tail_bytes)
            data.seek(start)
            if start:
                data.readline()  # the rest of a line cut by the window
            turn, started = _read_turns(data)
            if started or not start:
                return turn
            data.seek(0)
            return _read_turns(data)[0]
    except OSError:
        return RolloutTurn()


def _read_turns(data: BinaryIO) -> tuple[RolloutTurn, bool]:
    """The last turn in the lines of `data`, and whether its start was among them."""
    turn, started = RolloutTurn(), False
    for raw in data:
        entry = _wanted_entry(raw.decode("utf-8", "replace"))
        if entry is not None:
            turn = _take(turn, entry)
            started = started or _kind(entry) == "task_started"
    return turn, started


def _wanted_entry(line: str) -> dict[str, Any] | None:
    head = line[:_HEAD_CHARS]
    if not any(kind in head for kind in _WANTED) and _WANTED_END not in head:
        return None
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    payload = entry.get("payload") if isinstance(entry, dict) else None
    return {"type": entry.get("type"), "payload": payload} if isinstance(payload, dict) else None


def _take(turn: RolloutTurn, entry: dict[str, Any]) -> RolloutTurn:
    payload = entry["payload"]
    kind = _kind(entry)
    if kind == "task_started":
        return RolloutTurn(model=turn.model)  # a new turn: what came before is not its
    if kind == "turn_context" and isinstance(payload.get("model"), str):
        turn.model = payload["model"]
    elif kind == "token_usage_record" and isinstance(payload.get("turn_token_usage"), dict):
        turn.usage = payload["turn_token_usage"]
    elif kind == "token_count":
        _take_quota(turn, payload.get("rate_limits"))
    elif kind == "task_complete" and isinstance(payload.get("error"), dict):
        turn.error_info = payload["error"].get("codex_error_info")
        message = payload["error"].get("message")
        turn.error_message = message if isinstance(message, str) else None
    return turn


def _kind(entry: dict[str, Any]) -> Any:
    """An entry's kind: an event's own type, else the entry's (`turn_context`, ...)."""
    return entry["payload"].get("type") if entry["type"] == "event_msg" else entry["type"]


def _take_quota(turn: RolloutTurn, limits: Any) -> None:
    if not isinstance(limits, dict):
        return
    windows = [_window(name, limits.get(name)) for name in ("primary", "secondary")]
    seen = [window for window in windows if window is not None]
    if seen:
        turn.quota = max(seen, key=lambda window: window.utilization or 0.0)


def _window(name: str, window: Any) -> RateLimitInfo | None:
    if not isinstance(window, dict):
        return None
    percent = _number(window.get("used_percent"))
    if percent is None:
        return None
    used = percent / 100
    minutes = window.get("window_minutes")
    return RateLimitInfo(
        status="rejected" if used >= 1 else "allowed",
        resets_at=_number(window.get("resets_at")),
        limit_type=_WINDOW_NAMES.get(minutes, name) if isinstance(minutes, int) else name,
        utilization=used,
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
