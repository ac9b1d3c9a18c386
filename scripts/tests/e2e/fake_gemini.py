"""A fake Gemini API (`generativelanguage`) on 127.0.0.1, for the real Gemini CLI.

Point `gemini` at it with `GOOGLE_GEMINI_BASE_URL=server.base_url` and any `GEMINI_API_KEY`
(`gemini_cli.gemini_env` does both); nothing leaves the machine.

    with FakeGeminiServer(log_path=tmp_path / "api.jsonl") as server:
        server.rules = [GeminiRule("Say hi", text="hi")]
        ...                                   # run `gemini -p "Say hi" ...`
        assert server.turn_texts() == ["Say hi"]

The CLI asks `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` once per model
turn (answered as server-sent events, one `data:` line per chunk) and, for its router or
JSON-mode helpers, `POST .../<model>:generateContent` (answered with schema-shaped JSON).
Each turn is answered by the first `GeminiRule` whose `match` is in the last user text:
with text (cut into chunks, so the CLI must join them), a `run_shell_command` call (the
turn carrying its result gets the rule's `closing` text), or an API error (`quota_error`,
`server_error`). Every request is kept in `requests` and, with `log_path`, written there
as one JSON line.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from local_server import LocalServer

FAKE_MODEL = "gemini-2.5-flash"
CHUNK_CHARS = 16  # text is streamed in pieces this long
USAGE = {
    "promptTokenCount": 123,
    "candidatesTokenCount": 7,
    "totalTokenCount": 130,
    "cachedContentTokenCount": 100,
}
DEFAULT_CLOSING_TEXT = "Done."
FALLBACK_TEXT = "Nothing in the script matched this request."
_RPC = "type.googleapis.com/google.rpc."


@dataclass(frozen=True)
class ApiError:
    """An HTTP error status and the API's error envelope."""

    status: int
    body: dict[str, Any]


def quota_error(*, per_day: bool = False, retry_delay: str | None = None) -> ApiError:
    """The 429 RESOURCE_EXHAUSTED of a spent quota: a daily one (`per_day`; the CLI never
    retries it) or a per-minute one, with a RetryInfo `retry_delay` ("2s", "3600s") when
    given. The CLI retries a per-minute one whose delay is at most 300 s."""
    quota_id = (
        "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
        if per_day
        else "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    )
    details: list[dict[str, Any]] = [
        {"@type": _RPC + "QuotaFailure", "violations": [{"quotaId": quota_id}]}
    ]
    if retry_delay is not None:
        details.append({"@type": _RPC + "RetryInfo", "retryDelay": retry_delay})
    message = "You exceeded your current quota, please check your plan and billing details."
    return _error(429, "RESOURCE_EXHAUSTED", message, details)


def server_error(status: int = 500) -> ApiError:
    """A 5xx: 500 INTERNAL, or 503 UNAVAILABLE (the model is overloaded)."""
    if status == 503:
        return _error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
    return _error(status, "INTERNAL", "An internal error has occurred.")


def auth_error() -> ApiError:
    """The 400 INVALID_ARGUMENT the API answers a wrong key with."""
    message = "API key not valid. Please pass a valid API key."
    return _error(400, "INVALID_ARGUMENT", message)


def _error(
    status: int, name: str, message: str, details: list[dict[str, Any]] | None = None
) -> ApiError:
    body = {"code": status, "message": message, "status": name, "details": details or []}
    return ApiError(status, {"error": body})


@dataclass(frozen=True)
class GeminiRule:
    """When `match` is in the last user text: answer `text`, run `shell`, or fail with `error`.

    Exactly one of them is given; `closing` answers the turn carrying the shell's result
    (`closing_error` fails it instead: a limit hit in the middle of the agent's work).
    `times` limits how often the rule answers (None: always), so a test can fail the first
    request and answer the next.
    """

    match: str
    text: str | None = None
    shell: str | None = None
    error: ApiError | None = None
    closing: str = DEFAULT_CLOSING_TEXT
    closing_error: ApiError | None = None
    times: int | None = None

    def __post_init__(self) -> None:
        if sum(answer is not None for answer in (self.text, self.shell, self.error)) != 1:
            raise ValueError(f"rule for {self.match!r} needs exactly one of text, shell, error")


@dataclass
class Request:
    """One request as the server saw it."""

    path: str  # without the query
    headers: dict[str, str]
    body: Any

    @property
    def streaming(self) -> bool:
        return self.path.endswith(":streamGenerateContent")

    def last_user_parts(self) -> list[dict[str, Any]]:
        contents = self.body.get("contents", []) if isinstance(self.body, dict) else []
        for entry in reversed(contents):
            if entry.get("role") == "user":
                return list(entry.get("parts", []))
        return []

    def user_text(self) -> str:
        return "\n".join(p["text"] for p in self.last_user_parts() if "text" in p)

    def to_log(self) -> dict[str, Any]:
        return {"path": self.path, "user_text": self.user_text(), "body": self.body}


@dataclass
class _Script:
    """Chooses each answer from the rules (and remembers which rule made a tool call)."""

    rules: list[GeminiRule]
    used: dict[int, int] = field(default_factory=dict)  # rule index -> answers given
    calls: list[GeminiRule] = field(default_factory=list)  # rules whose shell call is open

    def answer(self, request: Request) -> ApiError | list[dict[str, Any]]:
        """The error to send, or the parts of the model's answer."""
        if any("functionResponse" in part for part in request.last_user_parts()):
            rule = self.calls.pop(0) if self.calls else None
            if rule is not None and rule.closing_error is not None:
                return rule.closing_error
            return [{"text": rule.closing if rule else DEFAULT_CLOSING_TEXT}]
        said = request.user_text()
        for index, rule in enumerate(self.rules):
            if rule.match in said and self._may_answer(index, rule):
                return self._parts_of(rule)
        return [{"text": FALLBACK_TEXT}]

    def _may_answer(self, index: int, rule: GeminiRule) -> bool:
        if rule.times is not None and self.used.get(index, 0) >= rule.times:
            return False
        self.used[index] = self.used.get(index, 0) + 1
        return True

    def _parts_of(self, rule: GeminiRule) -> ApiError | list[dict[str, Any]]:
        if rule.error is not None:
            return rule.error
        if rule.shell is not None:
            self.calls.append(rule)
            args = {"command": rule.shell, "description": "Run the command"}
            return [{"functionCall": {"name": "run_shell_command", "args": args}}]
        assert rule.text is not None
        return [{"text": rule.text}]


def sse_chunks(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The streamed chunks of one model answer: text cut into pieces, usage on the last."""
    pieces: list[dict[str, Any]] = []
    for part in parts:
        text = part.get("text")
        if isinstance(text, str):
            cut = range(0, max(len(text), 1), CHUNK_CHARS)
            pieces.extend({"text": text[start : start + CHUNK_CHARS]} for start in cut)
        else:
            pieces.append(part)
    chunks = [_candidate([piece]) for piece in pieces]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = USAGE
    return chunks


def whole_answer(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A `generateContent` answer: the parts in one candidate, with usage."""
    answer = _candidate(parts)
    answer["candidates"][0]["finishReason"] = "STOP"
    answer["usageMetadata"] = USAGE
    return answer


def _candidate(parts: list[dict[str, Any]]) -> dict[str, Any]:
    content = {"role": "model", "parts": parts}
    return {"candidates": [{"content": content, "index": 0}], "modelVersion": FAKE_MODEL}


def schema_shaped(schema: Any) -> Any:
    """A value matching a JSON schema (the CLI's router and helpers ask for JSON)."""
    if not isinstance(schema, dict):
        return None
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties", {})
        return {name: schema_shaped(sub) for name, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return (schema.get("enum") or ["simple"])[0]


class FakeGeminiServer(LocalServer):
    """The fake API on a free 127.0.0.1 port; use it as a context manager."""

    def __init__(self, log_path: Path | None = None) -> None:
        self.requests: list[Request] = []
        self.log_path = log_path
        self._script = _Script([])
        self._lock = threading.Lock()
        super().__init__(_handler_for(self))

    @property
    def base_url(self) -> str:
        """What `GOOGLE_GEMINI_BASE_URL` is set to."""
        return self.origin

    @property
    def rules(self) -> list[GeminiRule]:
        return self._script.rules

    @rules.setter
    def rules(self, rules: list[GeminiRule]) -> None:
        with self._lock:
            self._script = _Script(list(rules))

    def turns(self) -> list[Request]:
        """The model turns asked for (`streamGenerateContent`), in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.streaming]

    def turn_texts(self) -> list[str]:
        return [request.user_text() for request in self.turns()]

    def take(self, request: Request) -> ApiError | list[dict[str, Any]] | Any:
        """Record `request` and choose its answer (thread-safe)."""
        with self._lock:
            self.requests.append(request)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(request.to_log()) + "\n")
            if request.streaming:
                return self._script.answer(request)
            config = request.body.get("generationConfig", {}) if request.body else {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            return [{"text": json.dumps(schema_shaped(schema))}]


def _handler_for(server: FakeGeminiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            path = self.path.split("?")[0]
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = Request(path, headers, json.loads(raw) if raw else None)
            if not path.startswith("/v1beta/models/"):
                self._send_json(404, {"error": {"code": 404, "message": "no such path"}})
                return
            answer = server.take(request)
            if isinstance(answer, ApiError):
                self._send_json(answer.status, answer.body)
            elif request.streaming:
                self._send_stream(sse_chunks(answer))
            else:
                self._send_json(200, whole_answer(answer))

        def do_GET(self) -> None:
            self._send_json(404, {"error": {"code": 404, "message": "no such path"}})

        def _send_json(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _send_stream(self, chunks: list[dict[str, Any]]) -> None:
            payload = b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output clean."""

    return Handler
