"""A fake Anthropic Messages API on 127.0.0.1, for tests that drive the real SDK or CLI.

Point a client at it with `ANTHROPIC_BASE_URL=server.base_url` (and any non-empty
`ANTHROPIC_API_KEY`); nothing leaves the machine.

    with FakeAnthropicServer() as server:
        server.replies.append(Reply(body=tool_use_message({"verdict": "success"})))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        ...                                   # code under test calls the API
        assert server.requests[0].body["model"] == "..."

Each `POST /v1/messages` is recorded in `server.requests` and answered by `responder`
(default: the next queued `Reply` in `server.replies`, else `default_reply`). Replace
`server.responder` for anything smarter (the e2e harness answers from a script of rules).
A request with `"stream": true` gets the same message as server-sent events, the way the
real API streams it. A reply's `headers` go out with it: `rate_limited`, `overloaded` and
`usage_limit_reached` build the replies that make claude retry, give up, or tell a
subscriber that a usage limit was hit. Besides that, the server answers what the Claude
Code CLI asks at start-up: `HEAD /` (a connectivity probe) with 200 and
`POST /v1/messages/count_tokens` with a token count. Every other request is recorded and
answered 404.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from local_server import LocalServer

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
FAKE_MODEL = "claude-fake"
# Streams are cut into pieces this long, so clients really have to join deltas.
DELTA_CHARS = 16


@dataclass
class RecordedRequest:
    """One request as the server saw it (header names lower-cased; body None when empty)."""

    path: str
    headers: dict[str, str]
    body: Any
    method: str = "POST"


@dataclass
class Reply:
    """What to answer: an HTTP status, a JSON body and extra response headers."""

    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    """A complete Messages API response body with the given content blocks."""
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": FAKE_MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def tool_use_message(
    tool_input: dict[str, Any], name: str = "evaluate", tool_id: str = "toolu_fake"
) -> dict[str, Any]:
    """A response whose only block is a call of tool `name` with `tool_input`."""
    block = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
    return message([block], stop_reason="tool_use")


def text_message(text: str) -> dict[str, Any]:
    """A response with plain text only (no tool call)."""
    return message([{"type": "text", "text": text}])


def error_body(error_type: str, text: str) -> dict[str, Any]:
    """The API's error envelope, e.g. `error_body("authentication_error", "invalid key")`."""
    return {"type": "error", "error": {"type": error_type, "message": text}}


def rate_limited(text: str = "Rate limited", *, retry_after: int | None = 1) -> Reply:
    """A 429 an API-key user gets: claude retries it, waiting `retry-after` seconds.

    Claude Code honours an integer `retry-after` up to 60 s and gives up at once beyond it.
    """
    headers = {} if retry_after is None else {"retry-after": str(retry_after)}
    return Reply(error_body("rate_limit_error", text), status=429, headers=headers)


def overloaded(text: str = "Overloaded") -> Reply:
    """A 529: the API is overloaded (claude retries it like a 429)."""
    return Reply(error_body("overloaded_error", text), status=529)


def usage_limit_reached(resets_at: float | None, claim: str = "five_hour") -> Reply:
    """The 429 a subscriber (OAuth) gets at a usage limit: claude never retries it.

    `claim` is the limit hit (`five_hour`, `seven_day`, `seven_day_opus`, ...);
    `resets_at` the epoch second it resets (None: the reset is not known).
    """
    headers = {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-representative-claim": claim,
    }
    if resets_at is not None:
        headers["anthropic-ratelimit-unified-reset"] = str(int(resets_at))
    body = error_body("rate_limit_error", "This request would exceed your account's rate limit.")
    return Reply(body, status=429, headers=headers)


def stream_events(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events (name, data) that stream the complete message `body`.

    The order is the API's: `message_start` (content empty), then per block a
    `content_block_start`, its deltas (`text_delta` or `input_json_delta`) and a
    `content_block_stop`, then `message_delta` with the stop reason and `message_stop`.
    """
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(body.get("content", [])):
        yield from _block_events(index, block)
    delta = {"stop_reason": body.get("stop_reason"), "stop_sequence": None}
    usage = {"output_tokens": body.get("usage", {}).get("output_tokens", 0)}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": usage}
    yield "message_stop", {"type": "message_stop"}


def _block_events(index: int, block: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if block["type"] == "tool_use":
        empty = {**block, "input": {}}
        text, delta_type, key = json.dumps(block["input"]), "input_json_delta", "partial_json"
    else:
        empty = {**block, "text": ""}
        text, delta_type, key = block["text"], "text_delta", "text"
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": empty},
    )
    for piece in _pieces(text):
        delta = {"type": delta_type, key: piece}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), DELTA_CHARS):
        yield text[start : start + DELTA_CHARS]


class FakeAnthropicServer(LocalServer):
    """A threaded HTTP server on a free 127.0.0.1 port; use it as a context manager."""

    def __init__(self, default_reply: Reply | None = None) -> None:
        self.default_reply = default_reply or Reply(text_message("fake default reply"))
        self.replies: list[Reply] = []
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[RecordedRequest], Reply] = self._next_reply
        self._lock = threading.Lock()
        super().__init__(_handler_for(self))

    @property
    def base_url(self) -> str:
        return self.origin

    def messages_requests(self) -> list[RecordedRequest]:
        """The recorded `POST /v1/messages` requests, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path == MESSAGES_PATH]

    def record(self, request: RecordedRequest) -> None:
        """Keep `request` (thread-safe: the server answers requests concurrently)."""
        with self._lock:
            self.requests.append(request)

    def answer(self, request: RecordedRequest) -> Reply:
        """The reply to a messages request, chosen by `responder` under the lock."""
        with self._lock:
            return self.responder(request)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        return self.replies.pop(0) if self.replies else self.default_reply


NOT_FOUND = Reply(error_body("not_found_error", "no such path"), status=404)


def _handler_for(server: FakeAnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1 keeps connections open between requests, as the real API does.
        protocol_version = "HTTP/1.1"

        def do_HEAD(self) -> None:
            server.record(self._recorded(None))
            self.send_response(200 if self._path() == "/" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            server.record(self._recorded(None))
            self._send(NOT_FOUND)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            request = self._recorded(json.loads(raw) if raw else None)
            server.record(request)
            path = self._path()
            if path == COUNT_TOKENS_PATH:
                self._send(Reply({"input_tokens": _rough_token_count(raw)}))
            elif path != MESSAGES_PATH:
                self._send(NOT_FOUND)
            else:
                self._answer_messages(request)

        def _answer_messages(self, request: RecordedRequest) -> None:
            reply = server.answer(request)
            streaming = isinstance(request.body, dict) and request.body.get("stream") is True
            if streaming and reply.status == 200:
                self._send_stream(reply)
            else:
                self._send(reply)

        def _path(self) -> str:
            return self.path.split("?")[0]

        def _recorded(self, body: Any) -> RecordedRequest:
            headers = {name.lower(): value for name, value in self.headers.items()}
            return RecordedRequest(self._path(), headers, body, self.command)

        def _send(self, reply: Reply) -> None:
            payload = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self._send_extra_headers(reply)
            self.end_headers()
            self.wfile.write(payload)

        def _send_extra_headers(self, reply: Reply) -> None:
            for name, value in reply.headers.items():
                self.send_header(name, value)

        def _send_stream(self, reply: Reply) -> None:
            chunks = [
                f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                for name, data in stream_events(reply.body)
            ]
            payload = b"".join(chunks)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(payload)))
            self._send_extra_headers(reply)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output clean (the default logs every request to stderr)."""

    return Handler


def _rough_token_count(raw: bytes) -> int:
    # About four bytes a token: only the shape of the answer matters to callers.
    return max(len(raw) // 4, 1)
