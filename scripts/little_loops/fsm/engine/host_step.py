"""The agent host of a prompt action (issue 24), as the run core puts it on a request.

`first_host` reads the choice (`model.host_choice`: state > loop > `LL_HOST_CLI` >
claude) and `on_host` puts a host on a `RunAction`; claude stays `host=None`, so a loop
that names no other host sends exactly the requests it sent before hosts existed.
"""

from __future__ import annotations

import dataclasses

from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.requests import RunAction
from little_loops.fsm.model.agent_hosts import DEFAULT_HOST
from little_loops.fsm.model.host_choice import chosen_hosts
from little_loops.fsm.schema import StateConfig

__all__ = ["first_host", "on_host", "state_hosts"]


def state_hosts(sc: StepContext, state: StateConfig) -> tuple[str, ...]:
    """The hosts `state`'s prompt action may run on, in order (a failover list)."""
    return chosen_hosts(getattr(state, "host", None), sc.fsm.host, sc.env)


def first_host(sc: StepContext, state: StateConfig) -> str:
    return state_hosts(sc, state)[0]


def on_host(request: RunAction, host: str, model: str | None = None) -> RunAction:
    """`request` run on `host` (claude: as before, `host=None`; others get `model`)."""
    if host == DEFAULT_HOST:
        return dataclasses.replace(request, host=None, model=None)
    return dataclasses.replace(request, host=host, model=model)
