"""Reading what `opencode run --format json` prints, as it prints it.

OpenCode (1.18.x, recorded in `scripts/tests/fixtures/opencode_stream/`) prints one JSON
object per line, each with a `type` and a `sessionID`: `step_start`, `text` (a whole text
part the agent wrote: `part.text`, `part.messageID`), `tool_use` (a tool call with its
output: never handed on, so a file read that holds `CONTEXT_HANDOFF:` is not a handoff),
`step_finish` (`part.tokens {input, output, reasoning, cache {read, write}}` and
`part.cost` in dollars, per step: summed here), `reasoning` (with `--thinking` only: not
what the agent says) and, when the API call failed after opencode's own retries, `error`
(`error.name`, `error.data {message, statusCode, responseHeaders, responseBody}`).

`OpenCodeStream` reads opencode's objects on `JsonLinesStream` (chunking, bounded tail,
plain-text pass-through); `run.result_text` is the text of the agent's last
message (what `claude -p` prints as its result), or the error's message.
"""

from __future__ import annotations

import json
from typing import Any

from little_loops.fsm.model.claude_run import ClaudeRun, RateLimitInfo
from little_loops.fsm.process.hosts.json_lines import JsonLinesStream, TextSink, as_lines
from little_loops.fsm.process.hosts.opencode_errors import error_reset_at, limit_name

__all__ = ["OpenCodeStream"]

_TYPES = frozenset({"step_start", "text", "tool_use", "step_finish", "reasoning", "error"})


class OpenCodeStream(JsonLinesStream):
    """Reads opencode's stdout as it comes; hands on what the agent says; builds `run`."""

    def __init__(self, sink: TextSink | None = None, *, cap: int) -> None:
        super().__init__(sink, cap=cap)
        self._message_id: str | None = None  # the message the last text part belongs to
        self._last_message: list[str] = []  # its text parts
        self._costs: list[float] = []

    def _read_object(self, line: str) -> bool:
        """Take `line` when it is one of opencode's objects; False for anything else."""
        try:
            event = json.loads(line)
        except ValueError:
            return False
        if not _is_opencode_event(event):
            return False
        if isinstance(event.get("sessionID"), str):
            self.run.session_id = event["sessionID"]
        part = _object(event.get("part"))
        kind = event["type"]
        if kind == "text":
            self._text_part(part)
        elif kind == "step_finish":
            self._add_usage(part)
        elif kind == "error":
            _read_error(self.run, event)
        return True

    def _text_part(self, part: dict[str, Any]) -> None:
        text = part.get("text")
        if not isinstance(text, str) or not text:
            return
        self._hand_on(as_lines(text), whole=True)
        message_id = part.get("messageID")
        if message_id != self._message_id:
            self._message_id, self._last_message = message_id, []
        self._last_message.append(text)
        if not self.run.is_error:
            self.run.result_text = "\n".join(self._last_message)

    def _add_usage(self, part: dict[str, Any]) -> None:
        tokens = _object(part.get("tokens"))
        cache = _object(tokens.get("cache"))
        run = self.run
        run.input_tokens += _count(tokens.get("input"))
        run.output_tokens += _count(tokens.get("output")) + _count(tokens.get("reasoning"))
        run.cache_read_tokens += _count(cache.get("read"))
        run.cache_creation_tokens += _count(cache.get("write"))
        run.num_turns = (run.num_turns or 0) + 1
        cost = part.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self._costs.append(float(cost))
            run.cost_usd = sum(self._costs)


def _is_opencode_event(event: Any) -> bool:
    """Every object opencode prints has one of its `type`s and a `sessionID`."""
    return isinstance(event, dict) and event.get("type") in _TYPES and "sessionID" in event


def _read_error(run: ClaudeRun, event: dict[str, Any]) -> None:
    """The `error` event: its message as the result, the HTTP status, and for a 429 the
    limit (its name and reset, from the body or headers) as a rejected `rate_limit`."""
    error = _object(event.get("error"))
    data = _object(error.get("data"))
    name = error.get("name") if isinstance(error.get("name"), str) else "error"
    message = data.get("message")
    run.is_error = True
    run.result_text = message if isinstance(message, str) and message else name
    run.last_retry_error = name
    status = data.get("statusCode")
    run.api_error_status = status if isinstance(status, int) else None
    if status == 429:
        stamp = event.get("timestamp")
        at = stamp / 1000 if isinstance(stamp, int | float) else None
        run.rate_limit = RateLimitInfo(
            status="rejected",
            resets_at=error_reset_at(data, at),
            limit_type=limit_name(data),
            utilization=None,
        )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
