"""Which agent host(s) a prompt state runs on: `host:` read and chosen (issue 24).

`host:` is a host name or an ordered list of them (a failover list), on a state or on
the loop. The state's wins, else the loop's, else `LL_HOST_CLI` (little-loops' variable),
else claude. Pure functions of the values given, in the bottom layer so that the
loaders check `host:` and the run core chooses without any I/O.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from little_loops.fsm.model.agent_hosts import DEFAULT_HOST, HOST_ENV, HOST_NAMES, canonical_host

__all__ = ["HostSetting", "chosen_hosts", "hosts_of", "unknown_host_message"]

HostSetting = str | list[str] | None
"""`host:` as written: a name, a list of names, or not set."""


def hosts_of(value: HostSetting) -> tuple[str, ...]:
    """The hosts `value` names, canonical and in order (unknown names left out: the
    loaders refuse them before a run)."""
    names = [value] if isinstance(value, str) else list(value or [])
    found = [canonical_host(name) for name in names if isinstance(name, str)]
    return tuple(name for name in found if name is not None)


def chosen_hosts(
    state_host: HostSetting, loop_host: HostSetting, env: Mapping[str, str] | None
) -> tuple[str, ...]:
    """The hosts a prompt state runs on, the first first: state > loop > `LL_HOST_CLI`
    > claude (an unknown `LL_HOST_CLI` is ignored: claude, as when it is unset). `env`:
    the run's injected environment, None for the process's (as `${env.X}` reads it)."""
    variable = (os.environ if env is None else env).get(HOST_ENV)
    for setting in (state_host, loop_host, variable):
        hosts = hosts_of(setting)
        if hosts:
            return hosts
    return (DEFAULT_HOST,)


def unknown_host_message(value: Any) -> str | None:
    """Why `value` is not a valid `host:` (None: it is)."""
    allowed = ", ".join(HOST_NAMES)
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names:
        return f"must be a host name or a list of host names (allowed: {allowed})"
    for name in names:
        if not isinstance(name, str) or canonical_host(name) is None:
            return f"unknown host {name!r} (allowed: {allowed})"
    return None
