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
`server.responder` for anything smarter, such as streaming. Other paths answer 404.
Only non-streaming JSON replies are built in.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

MESSAGES_PATH = "/v1/messages"
FAKE_MODEL = "claude-fake"


@dataclass
class RecordedRequest:
    """One request as the server saw it (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    """What to answer: an HTTP status and a JSON body."""

    body: dict[str, Any]
    status: int = 200


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


def tool_use_message(tool_input: dict[str, Any], name: str = "evaluate") -> dict[str, Any]:
    """A response whose only block is a call of tool `name` with `tool_input`."""
    block = {"type": "tool_use", "id": "toolu_fake", "name": name, "input": tool_input}
    return message([block], stop_reason="tool_use")


def text_message(text: str) -> dict[str, Any]:
    """A response with plain text only (no tool call)."""
    return message([{"type": "text", "text": text}])


def error_body(error_type: str, text: str) -> dict[str, Any]:
    """The API's error envelope, e.g. `error_body("authentication_error", "invalid key")`."""
    return {"type": "error", "error": {"type": error_type, "message": text}}


class FakeAnthropicServer:
    """A threaded HTTP server on a free 127.0.0.1 port; use it as a context manager."""

    def __init__(self, default_reply: Reply | None = None) -> None:
        self.default_reply = default_reply or Reply(text_message("fake default reply"))
        self.replies: list[Reply] = []
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[RecordedRequest], Reply] = self._next_reply
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        # A short poll interval keeps shutdown (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def _next_reply(self, request: RecordedRequest) -> Reply:
        return self.replies.pop(0) if self.replies else self.default_reply

    def __enter__(self) -> FakeAnthropicServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


def _handler_for(server: FakeAnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = RecordedRequest(self.path, headers, json.loads(raw) if raw else None)
            server.requests.append(request)
            if self.path.split("?")[0] != MESSAGES_PATH:
                self._send(Reply(error_body("not_found_error", "no such path"), status=404))
                return
            self._send(server.responder(request))

        def _send(self, reply: Reply) -> None:
            payload = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output clean (the default logs every request to stderr)."""

    return Handler
