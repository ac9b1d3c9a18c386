"""Reading what `gemini -p ... --output-format stream-json` prints, as it prints it.

Gemini CLI (0.61.x, recorded in `scripts/tests/fixtures/gemini_stream/`) prints one JSON
object per line, each with a `type`: `init` (the `session_id` and `model`), `message`
(`role` `user`: the prompt; `role` `assistant`: the model's text, in `delta` pieces that
must be joined), `tool_use` / `tool_result` (a tool call and what it gave back) and, last,
`result` (`status` `success` or `error` with `error.message`, and `stats`: tokens of this
invocation). `GeminiStream` hands on only what the agent says, in whole lines (the deltas
are joined first, so a signal cut across two deltas is read whole), and fills a
`ClaudeRun`. Tool output is never handed on.

The line handling (pieces of lines, overlong lines, plain text passing through, the
output cap) is `JsonLinesStream`'s; only the objects differ.
"""

from __future__ import annotations

import json
from typing import Any

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.process.hosts.gemini_prices import cost_of_stats
from little_loops.fsm.process.hosts.json_lines import JsonLinesStream, TextSink

__all__ = ["STREAM_JSON_FLAGS", "GeminiStream", "read_stats"]

STREAM_JSON_FLAGS = ("--output-format", "stream-json")

_TYPES = frozenset({"init", "message", "tool_use", "tool_result", "result", "error"})


class GeminiStream(JsonLinesStream):
    """Reads gemini's stdout as it comes; hands on what the agent says; builds `run`.

    `run.result_text` is the text of the agent's last turn (after its last tool call) on
    success, or the CLI's error message when the run failed (`run.is_error`), as `claude`
    gives its final text or error.

    `resuming`: the run continues an earlier session. A *new* session whose first request
    failed before the model answered anything is dropped by gemini (it rolls the failed
    prompt back, and `--resume` then says "No previous sessions found for this
    project."), so such a run reports no session id: it is run again afresh, not resumed.
    """

    def __init__(self, sink: TextSink | None = None, *, cap: int, resuming: bool = False) -> None:
        super().__init__(sink, cap=cap)
        self._resuming = resuming
        self._answered = False  # the model said something or called a tool in this run
        self._model: str | None = None
        self._line = ""  # agent text not yet ending with a line break
        self._turn: list[str] = []  # what the agent said since its last tool call

    def close(self) -> None:
        super().close()
        self._end_message()

    def _read_object(self, line: str) -> bool:
        """Take `line` when it is one of gemini's objects; False for anything else."""
        try:
            event = json.loads(line)
        except ValueError:
            return False
        if not isinstance(event, dict) or event.get("type") not in _TYPES:
            return False
        kind = event["type"]
        if kind == "message" and event.get("role") == "assistant":
            self._answered = True
            self._agent_said(event.get("content"), delta=event.get("delta") is True)
            return True
        self._end_message()
        if kind == "init":
            self._read_init(event)
        elif kind in ("tool_use", "tool_result"):
            self._answered = True
            self._turn = []
        elif kind == "result":
            self._read_result(event)
        return True

    def _read_init(self, event: dict[str, Any]) -> None:
        if isinstance(event.get("session_id"), str):
            self.run.session_id = event["session_id"]
        if isinstance(event.get("model"), str):
            self._model = event["model"]

    def _agent_said(self, content: Any, *, delta: bool) -> None:
        if not isinstance(content, str) or not content:
            return
        self._turn.append(content)
        whole, line_break, rest = (self._line + content).rpartition("\n")
        if line_break:
            self._hand_on(whole + line_break, whole=True)
        self._line = rest
        if not delta:
            self._end_message()

    def _end_message(self) -> None:
        """The agent's message is over: hand on its last line (given a line break)."""
        if self._line:
            line, self._line = self._line, ""
            self._hand_on(line + "\n", whole=True)

    def _read_result(self, event: dict[str, Any]) -> None:
        read_stats(self.run, event.get("stats"), self._model)
        if event.get("status") == "success":
            said = "".join(self._turn)
            self.run.result_text = said if said else None
            return
        self.run.is_error = True
        if not self._resuming and not self._answered:
            self.run.session_id = None  # gemini kept nothing of it to resume
        error = event.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        self.run.result_text = message if isinstance(message, str) else "gemini failed"


def read_stats(run: ClaudeRun, stats: Any, model: str | None) -> None:
    """Tokens (and the price-table cost) of one invocation from `result.stats`.

    `input` is the prompt tokens not read from the cache (`input_tokens - cached`), as
    claude's `input_tokens` leave out cache reads.
    """
    if not isinstance(stats, dict):
        return
    cached = _count(stats.get("cached"))
    run.cache_read_tokens = cached
    run.input_tokens = (
        _count(stats["input"])
        if "input" in stats
        else max(_count(stats.get("input_tokens")) - cached, 0)
    )
    run.output_tokens = _count(stats.get("output_tokens"))
    run.cost_usd = cost_of_stats(stats, model)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
