"""Reading what `codex exec --json` prints, as it prints it (spec agent-hosts.md §1).

Codex CLI (0.169, recorded in `scripts/tests/fixtures/codex_stream/`) prints one JSON event
per line: `thread.started` (the session id, `thread_id`), `turn.started`, `item.started` /
`item.completed` (an `agent_message` is what the agent says; `command_execution`,
`reasoning` and `error` items are not), `error` (a retry notice, or the final error), and
last `turn.completed` (with `usage`) or `turn.failed` (with the error). `CodexStream`
hands on only the agent's messages (a tool's output that contains `CONTEXT_HANDOFF:` is
not the agent handing off) and fills a `ClaudeRun`. Anything else passes through as plain
text. The `usage` of `turn.completed` is the thread's total after a resume; the host's
`ending` makes it the turn's own from the session's rollout file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.process.hosts.json_lines import JsonLinesStream, as_lines

__all__ = ["CodexStream", "read_usage_into"]

_EVENTS = ("thread.started", "turn.started", "turn.completed", "turn.failed", "error")
_STATUS = re.compile(r"\bstatus:? (?P<code>[1-5]\d\d)\b")


class CodexStream(JsonLinesStream):
    """Reads codex's stdout; hands on what the agent says; builds `run`.

    `run.result_text` is the agent's last message (what `codex exec` prints without
    `--json`), or the error a failed turn ended with (`run.is_error` then set).
    """

    def _read_object(self, line: str) -> bool:
        try:
            event = json.loads(line)
        except ValueError:
            return False
        kind = event.get("type") if isinstance(event, dict) else None
        if not isinstance(kind, str) or not (kind in _EVENTS or kind.startswith("item.")):
            return False
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            self.run.session_id = event["thread_id"]
        elif kind == "item.completed":
            self._item_done(event.get("item"))
        elif kind == "turn.completed":
            self._read_usage(event.get("usage"))
        elif kind == "turn.failed":
            self._turn_failed(event.get("error"))
        elif kind == "error" and isinstance(event.get("message"), str):
            self.run.retries += 1  # codex says so while it retries, and once at the end
            self.run.last_retry_error = event["message"]
        return True

    def _item_done(self, item: Any) -> None:
        if not isinstance(item, dict) or item.get("type") != "agent_message":
            return
        text = item.get("text")
        if isinstance(text, str) and text:
            self.run.result_text = text.replace("\r\n", "\n").replace("\r", "\n")
            self._hand_on(as_lines(text), whole=True)

    def _read_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        read_usage_into(self.run, usage)

    def _turn_failed(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        self.run.is_error = True
        self.run.result_text = message if isinstance(message, str) else "codex turn failed"
        status = _STATUS.search(self.run.result_text)
        self.run.api_error_status = int(status["code"]) if status else None
        if self.run.retries and self.run.last_retry_error == self.run.result_text:
            self.run.retries -= 1  # the final error is said twice: it was no retry


def read_usage_into(run: ClaudeRun, usage: dict[str, Any]) -> None:
    """Codex's token counts into `run`. Codex counts cached input inside `input_tokens`
    (OpenAI's way); the record counts them apart (Anthropic's way), so they are split."""
    total_input = _count(usage.get("input_tokens"))
    cached = min(_count(usage.get("cached_input_tokens")), total_input)
    run.input_tokens = total_input - cached
    run.cache_read_tokens = cached
    run.cache_creation_tokens = _count(usage.get("cache_write_input_tokens"))
    run.output_tokens = _count(usage.get("output_tokens"))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
