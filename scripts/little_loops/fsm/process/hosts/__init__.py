"""Agent hosts: one adapter per agent CLI behind one interface (`base.AgentHost`).

`host_named("codex")` gives the adapter of a host (imported when first asked for, so a
run that only uses claude never loads the others). Adapters register in `_ADAPTERS`.
"""

from __future__ import annotations

from importlib import import_module

from little_loops.fsm.model.agent_hosts import canonical_host
from little_loops.fsm.process.hosts.base import AgentHost, HostCommand, HostStream, program_of

__all__ = ["AgentHost", "HostCommand", "HostStream", "UnknownHost", "host_named", "program_of"]

_ADAPTERS = {
    "claude": ("little_loops.fsm.process.hosts.claude", "ClaudeHost"),
    "codex": ("little_loops.fsm.process.hosts.codex", "CodexHost"),
    "gemini": ("little_loops.fsm.process.hosts.gemini", "GeminiHost"),
    "opencode": ("little_loops.fsm.process.hosts.opencode", "OpenCodeHost"),
    "qwen": ("little_loops.fsm.process.hosts.qwen", "QwenHost"),
}
"""Host name -> (module, class) of its adapter."""


class UnknownHost(ValueError):
    """A host name no adapter answers to."""


def host_named(name: str) -> AgentHost:
    """The adapter for host `name` (any accepted spelling); UnknownHost when there is none."""
    canonical = canonical_host(name)
    if canonical is None or canonical not in _ADAPTERS:
        raise UnknownHost(f"unknown host {name!r}")
    module, class_name = _ADAPTERS[canonical]
    adapter: AgentHost = getattr(import_module(module), class_name)()
    return adapter
