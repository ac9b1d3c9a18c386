"""Where a run lives on the Temporal server: its task queue, its workflow id, the server.

One task queue per host and checkout (`ll-loop@<host>:<realpath>`): the worker started in
a checkout polls it, so a loop's actions run where its files are. The workflow id is the
loop lock (`ll-loop:<loop>@<host>:<realpath>`): the server refuses a second running
workflow with the same id, as the local lock refuses a second run of the loop. The scope
registry of a checkout (`scope_registry`) is `ll-loop-scopes@<host>:<realpath>`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "ServerSettings",
    "host_name",
    "scope_registry_id_for",
    "task_queue_for",
    "workflow_id_for",
]

DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_NAMESPACE = "default"
ADDRESS_ENV = "LL_TEMPORAL_ADDRESS"
NAMESPACE_ENV = "LL_TEMPORAL_NAMESPACE"


def host_name() -> str:
    return socket.gethostname()


def task_queue_for(checkout: Path, host: str | None = None) -> str:
    return f"ll-loop@{host or host_name()}:{os.path.realpath(checkout)}"


def workflow_id_for(loop_name: str, checkout: Path, host: str | None = None) -> str:
    return f"ll-loop:{loop_name}@{host or host_name()}:{os.path.realpath(checkout)}"


def scope_registry_id_for(checkout: Path, host: str | None = None) -> str:
    return f"ll-loop-scopes@{host or host_name()}:{os.path.realpath(checkout)}"


@dataclass(frozen=True)
class ServerSettings:
    """The server to talk to: flags first, then `LL_TEMPORAL_*`, then the defaults."""

    address: str = DEFAULT_ADDRESS
    namespace: str = DEFAULT_NAMESPACE

    @classmethod
    def resolve(
        cls,
        address: str | None = None,
        namespace: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ServerSettings:
        environ = os.environ if env is None else env
        return cls(
            address=address or environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS,
            namespace=namespace or environ.get(NAMESPACE_ENV) or DEFAULT_NAMESPACE,
        )
