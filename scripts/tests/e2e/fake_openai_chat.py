"""A fake OpenAI Chat Completions API on 127.0.0.1, for the OpenCode (and other
OpenAI-compatible) end-to-end tests.

Only `POST /v1/chat/completions` is answered (what opencode's `@ai-sdk/openai-compatible`
provider sends, always with `"stream": true`); every other path is recorded and answered 404.
Each request is kept in `server.requests` and, when `log` is given, written to it as one
JSON line (`{"path", "model", "said", "status"}`). What to answer comes from a `ChatScript`
of rules, like the Anthropic fake's `ApiScript`: the first rule whose `match` is in the
last user message answers with text, a `bash` tool call, or an HTTP error (`times` limits
how often a rule answers, so "fail twice, then succeed" is two rules). A request whose
last message is a tool result gets the closing text of the rule that made the call.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from fake_anthropic import RecordedRequest
from local_server import LocalServer

CHAT_PATH = "/v1/chat/completions"
FAKE_MODEL = "gpt-fake"
USAGE = {"prompt_tokens": 123, "completion_tokens": 7, "cached_tokens": 100}
"""Tokens every answer reports (opencode reads input as prompt - cached = 23)."""


@dataclass(frozen=True)
class ChatError:
    """An HTTP error answer: status, JSON body, response headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def server_error(status: int = 500, *, retry_after_ms: int = 10) -> ChatError:
    """A 5xx that opencode retries; `retry-after-ms` keeps its waits short."""
    body = {"error": {"message": f"fake server error {status}", "type": "server_error"}}
    return ChatError(status, body, {"retry-after-ms": str(retry_after_ms)})


def usage_limit(resets_at: int, *, retry_after_ms: int = 10) -> ChatError:
    """A 429 at a usage limit, reset time in the body (`error.resets_at`, epoch seconds)
    and in `x-ratelimit-reset-requests`; `retry-after-ms` keeps opencode's own retries quick."""
    body = {
        "error": {
            "message": "You've hit your usage limit. Try again later.",
            "type": "usage_limit_reached",
            "code": "usage_limit_reached",
            "resets_at": resets_at,
        }
    }
    headers = {"retry-after-ms": str(retry_after_ms), "x-ratelimit-reset-requests": "3600s"}
    return ChatError(429, body, headers)


def auth_error() -> ChatError:
    body = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
    return ChatError(401, body)


@dataclass
class ChatRule:
    """When `match` is in the last user message: answer `text`, run `bash`, or fail `error`.

    `closing` is the text sent once the bash tool's result comes back. `times`: how many
    requests the rule answers (None: all).
    """

    match: str
    text: str | None = None
    bash: str | None = None
    error: ChatError | None = None
    closing: str = "Done."
    times: int | None = None

    def __post_init__(self) -> None:
        if sum(answer is not None for answer in (self.text, self.bash, self.error)) != 1:
            raise ValueError(f"rule for {self.match!r} needs exactly one of text, bash, error")


Answer = ChatError | list[dict[str, Any]]
"""An error, or the `delta`s of a streamed answer."""


@dataclass
class ChatScript:
    """Answers each chat request from `rules` (the first matching one that has turns left)."""

    rules: list[ChatRule]
    fallback: str = "Nothing in the script matched this request."
    _calls: dict[str, ChatRule] = field(default_factory=dict)

    def answer(self, body: Any) -> Answer:
        last = _messages(body)[-1:] or [{}]
        if last[0].get("role") == "tool":
            rule = self._calls.get(str(last[0].get("tool_call_id")))
            return [{"content": rule.closing if rule else "Done."}]
        said = user_text(body)
        for rule in self.rules:
            if rule.match in said and (rule.times is None or rule.times > 0):
                if rule.times is not None:
                    rule.times -= 1
                return self._answer(rule)
        return [{"content": self.fallback}]

    def _answer(self, rule: ChatRule) -> Answer:
        if rule.error is not None:
            return rule.error
        if rule.text is not None:
            return [{"content": rule.text}]
        call_id = f"call_{len(self._calls) + 1}"
        self._calls[call_id] = rule
        arguments = json.dumps({"command": rule.bash, "description": "Run the command"})
        call = {"index": 0, "id": call_id, "type": "function"}
        call["function"] = {"name": "bash", "arguments": arguments}
        return [{"tool_calls": [call]}]


def _messages(body: Any) -> list[dict[str, Any]]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def user_text(body: Any) -> str:
    """The text of the last user message (string content, or its text parts joined)."""
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            parts = content if isinstance(content, list) else []
            return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))
    return ""


def sse_chunks(deltas: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The chunks streaming `deltas`: a role chunk, the deltas, the finish, the usage."""
    finish = "tool_calls" if any("tool_calls" in d for d in deltas) else "stop"
    steps = [{"role": "assistant", "content": ""}, *deltas]
    for delta in steps:
        yield _chunk([{"index": 0, "delta": delta, "finish_reason": None}])
    yield _chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
    usage = {
        "prompt_tokens": USAGE["prompt_tokens"],
        "completion_tokens": USAGE["completion_tokens"],
        "total_tokens": USAGE["prompt_tokens"] + USAGE["completion_tokens"],
        "prompt_tokens_details": {"cached_tokens": USAGE["cached_tokens"]},
    }
    yield {**_chunk([]), "usage": usage}


def _chunk(choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": FAKE_MODEL,
        "choices": choices,
    }


class FakeChatServer(LocalServer):
    """The fake on a free 127.0.0.1 port; use it as a context manager."""

    def __init__(self, script: ChatScript, log: Path | None = None) -> None:
        super().__init__(_handler_for(self))
        self.script = script
        self.log = log
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """What a client's `baseURL` is (with `/v1`)."""
        return f"{self.origin}/v1"

    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == CHAT_PATH]

    def take(self, request: RecordedRequest) -> Answer | None:
        """Record `request`; the answer for a chat request (None: answer 404)."""
        with self._lock:
            self.requests.append(request)
            answer = self.script.answer(request.body) if request.path == CHAT_PATH else None
            self._log(request, answer)
            return answer

    def _log(self, request: RecordedRequest, answer: Answer | None) -> None:
        if self.log is None:
            return
        status = 404 if answer is None else answer.status if isinstance(answer, ChatError) else 200
        model = request.body.get("model") if isinstance(request.body, dict) else None
        line = {"path": request.path, "model": model, "said": user_text(request.body)}
        with self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps({**line, "status": status}) + "\n")


def _handler_for(server: FakeChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            server.take(self._recorded(None, "GET"))
            self._send_json(ChatError(404, {"error": {"message": "no such path"}}))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            answer = server.take(self._recorded(json.loads(raw) if raw else None, "POST"))
            if answer is None:
                self._send_json(ChatError(404, {"error": {"message": "no such path"}}))
            elif isinstance(answer, ChatError):
                self._send_json(answer)
            else:
                self._send_stream(answer)

        def _recorded(self, body: Any, method: str) -> RecordedRequest:
            headers = {name.lower(): value for name, value in self.headers.items()}
            return RecordedRequest(self.path.split("?")[0], headers, body, method)

        def _send_json(self, error: ChatError) -> None:
            payload = json.dumps(error.body).encode()
            self.send_response(error.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in error.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _send_stream(self, deltas: list[dict[str, Any]]) -> None:
            events = [f"data: {json.dumps(chunk)}\n\n" for chunk in sse_chunks(deltas)]
            payload = ("".join(events) + "data: [DONE]\n\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output clean."""

    return Handler
