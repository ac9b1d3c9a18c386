"""Keeping what a loop says off the Temporal server: every payload encrypted.

Everything a run gives Temporal (the loop with its action text, the referenced
`${env.X}` values, action inputs, output tails, verdicts, the state the status query
returns) is a payload in the workflow's history on the server. With `LL_TEMPORAL_KEY`
set (32 random bytes, base64: `python3 -c "import os,base64;
print(base64.b64encode(os.urandom(32)).decode())"`), the client and the worker encrypt
every payload with AES-256-GCM before it leaves the process, so the server (and its web
UI) keep ciphertext only: names of workflows, activities and task queues, timings and
the event structure stay readable, nothing the loop says does. Every client and worker
of the namespace needs the same key; without it a worker cannot read the runs.

This is Temporal's own mechanism for the job (a `PayloadCodec` in the client's data
converter); the cipher is the `cryptography` package's AES-GCM.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

__all__ = ["ENCODING", "KEY_ENV", "BadKeyError", "EncryptionCodec", "codec_from_env"]

KEY_ENV = "LL_TEMPORAL_KEY"
ENCODING = b"binary/ll-loop-aes256gcm"
"""The `encoding` metadata of an encrypted payload (the original payload, serialized,
is the plaintext)."""
_NONCE_BYTES = 12


class BadKeyError(ValueError):
    """`LL_TEMPORAL_KEY` is not a base64 key of 32 bytes (the message says so)."""


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM over whole payloads; payloads that are not ours pass through."""

    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._cipher = AESGCM(key)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._decrypt(payload) for payload in payloads]

    def _encrypt(self, payload: Payload) -> Payload:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._cipher.encrypt(nonce, payload.SerializeToString(), None)
        return Payload(metadata={"encoding": ENCODING}, data=nonce + sealed)

    def _decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written without the key (or by something else)
        nonce, sealed = payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:]
        plain = Payload()
        plain.ParseFromString(self._cipher.decrypt(nonce, sealed, None))
        return plain


def codec_from_env(environ: Mapping[str, str]) -> EncryptionCodec | None:
    """The codec `LL_TEMPORAL_KEY` asks for; None when it is not set."""
    text = environ.get(KEY_ENV, "").strip()
    if not text:
        return None
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != 32:
        raise BadKeyError(f"{KEY_ENV} must be 32 random bytes in base64 (44 characters)")
    return EncryptionCodec(key)
