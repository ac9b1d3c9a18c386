"""A threaded HTTP server on a free 127.0.0.1 port, for the fake provider APIs of the tests.

    class FakeSomethingServer(LocalServer):
        def __init__(self) -> None:
            super().__init__(_handler_for(self))

    with FakeSomethingServer() as server:
        ...                                   # clients call server.origin

`fake_anthropic.FakeAnthropicServer` and `e2e/fake_openai.FakeResponsesServer` are ones.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

__all__ = ["LocalServer"]


class LocalServer:
    """Serves `handler` on 127.0.0.1 from a thread while used as a context manager."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        # A short poll interval keeps shutdown (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:<port>`."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
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
