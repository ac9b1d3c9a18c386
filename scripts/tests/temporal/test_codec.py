"""`LL_TEMPORAL_KEY`: every payload a run gives the Temporal server is encrypted, so the
server keeps no action text, output or env value (issue 15, "a setting to redact")."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import write_loop
from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio.api.common.v1 import Payload
    from temporalio.client import Client

    from little_loops.fsm.temporal.client import LoopRuns, TemporalEngineError, connect
    from little_loops.fsm.temporal.codec import ENCODING, EncryptionCodec, codec_from_env
    from little_loops.fsm.temporal.names import ServerSettings
    from little_loops.fsm.temporal.worker import build_worker
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

from little_loops.fsm.validation import load_loop

KEY = base64.b64encode(bytes(range(32))).decode()
SECRET_LOOP = """\
name: secret
initial: say
states:
  say:
    action: "echo the-action-text ${env.LL_SECRET_VALUE}; echo 'CONTEXT_HANDOFF: the-prompt'"
    next: done
  done:
    terminal: true
"""


def test_the_key_setting() -> None:
    assert codec_from_env({}) is None
    assert isinstance(codec_from_env({"LL_TEMPORAL_KEY": KEY}), EncryptionCodec)
    for bad in ("short", base64.b64encode(b"x" * 16).decode(), "not base64 !"):
        with pytest.raises(ValueError, match="32 random bytes in base64"):
            codec_from_env({"LL_TEMPORAL_KEY": bad})


def test_a_bad_key_is_one_line_from_connect() -> None:
    settings = ServerSettings("127.0.0.1:9", "default")
    with pytest.raises(TemporalEngineError, match=r"^LL_TEMPORAL_KEY must be"):
        asyncio.run(connect(settings, {"LL_TEMPORAL_KEY": "short"}))


def test_payloads_round_trip_and_foreign_ones_pass_through() -> None:
    codec = EncryptionCodec(bytes(range(32)))
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"the-action-text"')
    [sealed] = asyncio.run(codec.encode([plain]))
    assert sealed.metadata["encoding"] == ENCODING
    assert b"the-action-text" not in sealed.data
    assert asyncio.run(codec.decode([sealed])) == [plain]
    assert asyncio.run(codec.decode([plain])) == [plain]
    other = EncryptionCodec(bytes(32))
    with pytest.raises(Exception):  # noqa: B017 - the wrong key cannot read it
        asyncio.run(other.decode([sealed]))


def test_the_server_keeps_only_ciphertext(time_skipping: TimeSkipping, tmp_path: Path) -> None:
    write_loop(tmp_path, "secret", SECRET_LOOP)
    plain_client: Client = time_skipping.client
    config = plain_client.config()
    converter = dataclasses.replace(
        config["data_converter"], payload_codec=EncryptionCodec(bytes(range(32)))
    )
    config["data_converter"] = converter
    sealed_client = Client(**config)
    queue = f"queue-{uuid.uuid4().hex[:8]}"
    runs = LoopRuns(sealed_client, tmp_path, tmp_path / ".loops", queue)
    environ = {**os.environ, "LL_SECRET_VALUE": "the-env-value"}

    async def scenario() -> tuple[dict[str, Any] | None, bytes]:
        async with build_worker(sealed_client, queue):
            fsm = load_loop(tmp_path / ".loops" / "secret.yaml")
            await runs.start(runs.run_input(fsm, environ))
            await runs.follow("secret", lambda event: None)
            status = await runs.status("secret")
            handle = plain_client.get_workflow_handle(runs.workflow_id("secret"))
            history = await handle.fetch_history()
            return status, history.to_json().encode()

    status, stored = time_skipping.run(scenario())
    assert status is not None and status["status"] == "awaiting_continuation"
    assert status["continuation_prompt"] == "the-prompt"  # read back with the key
    payloads = stored_payloads(stored)
    assert len(payloads) >= 3  # the input, the action, its result
    for said in (b"the-action-text", b"the-env-value", b"the-prompt", b"echo"):
        assert not any(said in data for data in payloads), said
    assert base64.b64encode(ENCODING) in stored  # the payloads are there, sealed


def stored_payloads(history_json: bytes) -> list[bytes]:
    """Every payload's data in a history as the server returns it (base64 in JSON)."""
    found = re.findall(rb'"data": ?"([A-Za-z0-9+/=]+)"', history_json)
    return [base64.b64decode(data) for data in found]


def test_without_the_key_the_server_keeps_plain_text(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """The control: the check above does see a loop's words when they are stored."""
    write_loop(tmp_path, "secret", SECRET_LOOP)
    client: Client = time_skipping.client
    queue = f"queue-{uuid.uuid4().hex[:8]}"
    runs = LoopRuns(client, tmp_path, tmp_path / ".loops", queue)

    async def scenario() -> bytes:
        async with build_worker(client, queue):
            fsm = load_loop(tmp_path / ".loops" / "secret.yaml")
            await runs.start(runs.run_input(fsm, {"LL_SECRET_VALUE": "the-env-value"}))
            await runs.follow("secret", lambda event: None)
            history = await runs.handle("secret").fetch_history()
            return history.to_json().encode()

    payloads = stored_payloads(time_skipping.run(scenario()))
    assert any(b"the-env-value" in data for data in payloads)
