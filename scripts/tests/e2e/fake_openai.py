"""A fake OpenAI Responses API on 127.0.0.1, for tests that drive the real Codex CLI.

Codex reaches it through a custom provider in `$CODEX_HOME/config.toml` (`codex_home.py`
writes one): only `POST /v1/responses` with `"stream": true` is asked, answered as
server-sent events the way the real API streams them (spec agent-hosts.md §1).

    with FakeResponsesServer() as server:
        server.responder = ResponsesScript([Step("Say hi", text="hi")])
        ...                                   # codex runs against server.base_url
        assert server.requests[0].body["model"] == "gpt-fake"

Each request is recorded in `server.requests` (and, when `log` is given, written there as
one JSON line) and answered by `responder`: a `ResponsesScript` of rules matched against
the last user text, answering with text, a shell call (`exec_command`), or an error (a
usage limit with its reset, a 5xx, a bad key). Every other path is answered 404.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from local_server import LocalServer

RESPONSES_PATH = "/v1/responses"
FAKE_MODEL = "gpt-fake"
USAGE = {
    "input_tokens": 123,
    "input_tokens_details": {"cached_tokens": 100},
    "output_tokens": 7,
    "output_tokens_details": {"reasoning_tokens": 2},
    "total_tokens": 130,
}
"""The usage every answer reports (codex sums it over a turn's requests)."""


@dataclass
class RecordedRequest:
    """One request as the server saw it (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    """An SSE stream of `events` (status 200), or an error `body` with `status`; plus headers."""

    events: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def quota_headers(
    used_percent: float, resets_at: float, window_minutes: int = 300
) -> dict[str, str]:
    """The headers codex reads its quota use from (`rate_limits.primary` in its rollout)."""
    return {
        "x-codex-primary-used-percent": str(used_percent),
        "x-codex-primary-window-minutes": str(window_minutes),
        "x-codex-primary-reset-at": str(int(resets_at)),
    }


def _completed(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "resp_1"}}]
    for index, item in enumerate(output):
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": {"id": "resp_1", "usage": USAGE}})
    return events


def text_reply(text: str, headers: dict[str, str] | None = None) -> Reply:
    """The model says `text` and ends its turn."""
    item = {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return Reply(_completed([item]), headers=dict(headers or {}))


def shell_reply(command: str, call_id: str) -> Reply:
    """The model calls codex's shell tool (`exec_command`) with `command`."""
    item = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": "exec_command",
        "arguments": json.dumps({"cmd": command}),
    }
    return Reply(_completed([item]))


def usage_limit_reply(resets_at: float, used_percent: float = 100.0) -> Reply:
    """The 429 of a spent plan: codex does not retry it and ends with a usage limit."""
    error = {
        "type": "usage_limit_reached",
        "message": "The usage limit has been reached",
        "resets_at": int(resets_at),
    }
    headers = {"retry-after": "3600", **quota_headers(used_percent, resets_at)}
    return Reply(status=429, body={"error": error}, headers=headers)


def server_error_reply(status: int = 500) -> Reply:
    """A server error codex retries (as often as its provider settings allow)."""
    error = {"type": "server_error", "message": "fake internal error"}
    return Reply(status=status, body={"error": error})


def auth_error_reply() -> Reply:
    """A 401: the key is not accepted."""
    error = {"type": "invalid_request_error", "code": "invalid_api_key", "message": "bad key"}
    return Reply(status=401, body={"error": error})


@dataclass(frozen=True)
class Step:
    """When `match` is in the last user text: answer `reply` (or say `text`, or run `shell`).

    `closing` is what the model says once the result of its shell call comes back.
    """

    match: str
    text: str | None = None
    shell: str | None = None
    reply: Reply | None = None
    closing: str = "Done."


@dataclass
class ResponsesScript:
    """A responder: the first step whose `match` is in the last user text answers."""

    steps: list[Step]
    fallback: str = "Nothing in the script matched this request."
    _calls: dict[str, Step] = field(default_factory=dict)

    def __call__(self, request: RecordedRequest) -> Reply:
        last = _input_items(request.body)[-1:] or [{}]
        if last[0].get("type") == "function_call_output":
            step = self._calls.get(str(last[0].get("call_id")))
            return text_reply(step.closing if step else "Done.")
        said = user_text(request)
        for step in self.steps:
            if step.match in said:
                return self._answer(step)
        return text_reply(self.fallback)

    def _answer(self, step: Step) -> Reply:
        if step.reply is not None:
            return step.reply
        if step.shell is not None:
            call_id = f"call_{len(self._calls) + 1}"
            self._calls[call_id] = step
            return shell_reply(step.shell, call_id)
        return text_reply(step.text or "")


def _input_items(body: Any) -> list[dict[str, Any]]:
    items = body.get("input", []) if isinstance(body, dict) else []
    return [item for item in items if isinstance(item, dict)]


def user_text(request: RecordedRequest) -> str:
    """The text of the last user message of a request (what `codex exec` was asked)."""
    for item in reversed(_input_items(request.body)):
        if item.get("role") == "user":
            content = item.get("content", [])
            if isinstance(content, str):
                return content
            return "\n".join(str(part.get("text", "")) for part in content)
    return ""


class FakeResponsesServer(LocalServer):
    """A threaded HTTP server on a free 127.0.0.1 port; use it as a context manager."""

    def __init__(self, log: Path | None = None) -> None:
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[RecordedRequest], Reply] = ResponsesScript([])
        self.log = log
        self._lock = threading.Lock()
        super().__init__(_handler_for(self))

    @property
    def base_url(self) -> str:
        """What a provider's `base_url` is (the `/v1` prefix included)."""
        return f"{self.origin}/v1"

    def answer(self, request: RecordedRequest) -> Reply:
        """Record `request` and choose its reply (under the lock: requests are concurrent)."""
        with self._lock:
            self.requests.append(request)
            if self.log is not None:
                line = {"path": request.path, "body": request.body}
                with self.log.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(line) + "\n")
            return self.responder(request)


NOT_FOUND = Reply(status=404, body={"error": {"type": "not_found", "message": "no such path"}})


def _sse(events: list[dict[str, Any]]) -> Iterator[bytes]:
    for event in events:
        yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def _handler_for(server: FakeResponsesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._send(NOT_FOUND)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            path = self.path.split("?")[0]
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = RecordedRequest(path, headers, json.loads(raw) if raw else None)
            self._send(server.answer(request) if path == RESPONSES_PATH else NOT_FOUND)

        def _send(self, reply: Reply) -> None:
            streaming = reply.status == 200 and reply.body is None
            payload = b"".join(_sse(reply.events)) if streaming else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            kind = "text/event-stream" if streaming else "application/json"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output clean (the default logs every request to stderr)."""

    return Handler
