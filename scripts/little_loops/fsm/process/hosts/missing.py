"""What `run` says when an agent host's CLI is not installed (issue 24): one line."""

from __future__ import annotations

from little_loops.fsm.process.hosts.base import AgentHost

__all__ = ["host_not_found"]


def host_not_found(host: AgentHost, program: str) -> str:
    """Which CLI is missing and how to install it (`host.install_hint`)."""
    where = "" if program == host.default_program else f" at {program}"
    return f"{host.name} CLI not found{where}: {host.install_hint}"
