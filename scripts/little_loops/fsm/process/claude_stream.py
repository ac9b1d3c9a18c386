"""Reading what `claude -p --output-format stream-json --verbose` prints, as it prints it.

Claude Code (2.1.x, recorded in `scripts/tests/fixtures/claude_stream/`) prints one JSON
object per line, each with a `type` and a `session_id`: `system` (`init`, `api_retry`
while it retries an API error), `assistant` (the model's text and tool calls), `user` (tool
results), `rate_limit_event` and, last, `result` (the final text, `is_error`,
`api_error_status`, `total_cost_usd`, `usage`, `num_turns`). `ClaudeStream` takes that
output in chunks of any size, hands on only what the agent *says* (the text of its own
assistant messages, line by line) and builds a `ClaudeRun` from the rest. Tool results are
never handed on: a file the agent reads that contains `CONTEXT_HANDOFF:` is not the agent
handing off.

Anything that is not one of claude's objects (a fake `claude` in tests printing plain
text, or claude's own plain-text messages) passes through unchanged, so the readers see
exactly what they saw before the runner asked for stream-json.
"""

from __future__ import annotations

import json
from typing import Any

from little_loops.fsm.model.claude_run import ClaudeRun as ClaudeRun
from little_loops.fsm.model.claude_run import RateLimitInfo as RateLimitInfo
from little_loops.fsm.process.hosts.json_lines import MAX_JSON_LINE_CHARS as MAX_JSON_LINE_CHARS
from little_loops.fsm.process.hosts.json_lines import JsonLinesStream, as_lines
from little_loops.fsm.process.hosts.json_lines import TextSink as TextSink

STREAM_JSON_FLAGS = ("--output-format", "stream-json", "--verbose")
"""What makes `claude -p` print stream-json (`--verbose` is required with `-p`)."""


class ClaudeStream(JsonLinesStream):
    """Reads claude's stdout as it comes; hands on what the agent says; builds `run`.

    `feed` takes text in chunks of any size (whole lines, or pieces of one); `close`
    ends it (a last line without its line break is taken then). `output` is what the
    action's output is: the final result text when claude sent one (as the plain-text
    `claude -p` prints it), otherwise all the text handed on.
    """

    # claude's objects

    def _read_object(self, line: str) -> bool:
        """Take `line` when it is one of claude's objects; False for anything else."""
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not _is_claude_message(message):
            return False
        kind = message["type"]
        if isinstance(message.get("session_id"), str):
            self.run.session_id = message["session_id"]
        if kind == "assistant":
            self._said_by_agent(message)
        elif kind == "system" and message.get("subtype") == "api_retry":
            self.run.retries += 1
            self.run.last_retry_error = _str_or_none(message.get("error"))
        elif kind == "rate_limit_event":
            self._note_rate_limit(message.get("rate_limit_info"))
        elif kind == "result":
            _read_result(self.run, message)
        return True

    def _said_by_agent(self, message: dict[str, Any]) -> None:
        # A sub-agent's messages (`parent_tool_use_id` set) reach the agent as a tool
        # result: they are not what the agent says.
        if message.get("parent_tool_use_id") is not None:
            return
        content = message.get("message", {})
        blocks = content.get("content") if isinstance(content, dict) else None
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and text:
                    self._hand_on(as_lines(text), whole=True)

    def _note_rate_limit(self, info: Any) -> None:
        if not isinstance(info, dict) or not isinstance(info.get("status"), str):
            return
        seen = RateLimitInfo(
            status=info["status"],
            resets_at=_number_or_none(info.get("resetsAt")),
            limit_type=_str_or_none(info.get("rateLimitType")),
            utilization=_number_or_none(info.get("utilization")),
        )
        kept = self.run.rate_limit
        if kept is None or kept.status != "rejected" or seen.status == "rejected":
            self.run.rate_limit = seen


def _is_claude_message(message: Any) -> bool:
    """Every object claude prints has a string `type` and a `session_id`."""
    return (
        isinstance(message, dict)
        and isinstance(message.get("type"), str)
        and "session_id" in message
    )


def _read_result(run: ClaudeRun, message: dict[str, Any]) -> None:
    result = message.get("result")
    if isinstance(result, str):
        run.result_text = result.replace("\r\n", "\n").replace("\r", "\n")
    run.is_error = message.get("is_error") is True
    status = message.get("api_error_status")
    run.api_error_status = status if isinstance(status, int) else None
    run.cost_usd = _number_or_none(message.get("total_cost_usd"))
    turns = message.get("num_turns")
    run.num_turns = turns if isinstance(turns, int) else None
    usage = message.get("usage")
    if isinstance(usage, dict):
        run.input_tokens = _count(usage.get("input_tokens"))
        run.output_tokens = _count(usage.get("output_tokens"))
        run.cache_read_tokens = _count(usage.get("cache_read_input_tokens"))
        run.cache_creation_tokens = _count(usage.get("cache_creation_input_tokens"))


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
