"""The agent host of a prompt action (issue 24), as the run core puts it on a request.

`first_host` reads the choice (`model.host_choice`: state > loop > `LL_HOST_CLI` >
claude) and `on_host` puts a host on a `RunAction`; claude stays `host=None`, so a loop
that names no other host sends exactly the requests it sent before hosts existed.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from little_loops.fsm.engine.context import StepContext, iso_time
from little_loops.fsm.engine.events import HOST_RETURN, HOST_SWITCH
from little_loops.fsm.engine.head_actions import is_prompt_mode
from little_loops.fsm.engine.run_requests import RunAction
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.model.agent_hosts import DEFAULT_HOST
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.host_choice import chosen_hosts
from little_loops.fsm.model.limit_hit import LimitHit
from little_loops.fsm.model.slash_commands import is_slash_command
from little_loops.fsm.schema import StateConfig

if TYPE_CHECKING:
    from little_loops.fsm.engine.host_failover import Blocked

__all__ = [
    "choose_host",
    "fail_over",
    "first_host",
    "moved_prompt",
    "note_ran",
    "on_host",
    "on_host_keys",
    "rehosted",
    "state_hosts",
]


def state_hosts(sc: StepContext, state: StateConfig) -> tuple[str, ...]:
    """The hosts `state`'s prompt action may run on, in order (a failover list)."""
    return chosen_hosts(getattr(state, "host", None), sc.fsm.host, sc.env)


def first_host(sc: StepContext, state: StateConfig) -> str:
    """The host the core picked for this action (`sc.host`), else the first of the list."""
    return sc.host or state_hosts(sc, state)[0]


def on_host_keys(host: str | None) -> dict[str, str]:
    """`action_start`'s `host` key: only for another host than claude (events of a run
    that names no host stay as they were)."""
    return {} if host is None or host == DEFAULT_HOST else {"host": host}


def on_host(request: RunAction, host: str, model: str | None = None) -> RunAction:
    """`request` run on `host` (claude: as before, `host=None`; others get `model`)."""
    if host == DEFAULT_HOST:
        return dataclasses.replace(request, host=None, model=None)
    return dataclasses.replace(request, host=host, model=model)


def _may_prompt(state: StateConfig) -> bool:
    """Whether `state`'s action may be a prompt (its text before interpolation): only
    then is a host chosen, and waited for."""
    if not state.action:
        return False
    if isinstance(state, HeadStateConfig):
        return is_prompt_mode(state, state.action)
    if state.action_type is not None:
        return state.action_type == "slash_command"
    return is_slash_command(state.action)


def _in_use(sc: StepContext, hosts: tuple[str, ...]) -> bool:
    """Failover or pacing applies: a list of hosts, or `rate_limit.max_utilization`."""
    return len(hosts) > 1 or sc.fsm.rate_limit.max_utilization is not None


def choose_host(sc: StepContext, state: StateConfig, now: float) -> str | Blocked | None:
    """The host a fresh prompt action of `state` runs on: the first free one of its list
    (`host_return` when that is an earlier host free again); a `Blocked` when none is
    free (wait for it); None when there is nothing to choose (one host, no pacing)."""
    hosts = state_hosts(sc, state)
    if not _may_prompt(state) or not _in_use(sc, hosts):
        return None
    # `host_failover` only when a state has hosts to choose from: a plain run skips it.
    from little_loops.fsm.engine.host_failover import earliest, free_hosts, take_return

    memory = sc.cursor.head.hosts
    free, blocked = free_hosts(memory, hosts, now, sc.fsm.rate_limit.max_utilization)
    if not free:
        return earliest(blocked)
    host, name = free[0], sc.cursor.current_state
    came_from = take_return(memory, host, now)
    if came_from is not None:
        sc.emit(HOST_RETURN, state=name, host=host, **{"from": came_from})
    left = next((why for why in blocked if why.host == memory.get("last")), None)
    if left is not None:  # the host the run was on is limited or paced out: say so
        keys = {"state": name, "from": left.host, "to": host, "reason": left.reason}
        sc.emit(HOST_SWITCH, **keys, message=left.hit.message, until=iso_time(left.until))
    return host


def fail_over(
    sc: StepContext,
    state: StateConfig,
    request: RunAction,
    result: ActionResult,
    hit: LimitHit,
    now: float,
) -> str | Blocked | None:
    """After `request` met the usage limit `hit`: the next free host of the state's list
    (`host_switch` emitted), a `Blocked` when none is free (wait for the earliest), or
    None when the state has no list (the limit is met as before)."""
    hosts = state_hosts(sc, state)
    if len(hosts) < 2:
        return None
    from little_loops.fsm.engine.host_failover import (
        Blocked,
        earliest,
        free_hosts,
        note_limited,
        note_session,
    )

    memory, name = sc.cursor.head.hosts, sc.cursor.current_state
    current = request.host or DEFAULT_HOST
    until = note_limited(memory, current, hit, sc.fsm.rate_limit, now)
    note_session(memory, current, name, result.claude.session_id if result.claude else None)
    free, blocked = free_hosts(memory, hosts, now, sc.fsm.rate_limit.max_utilization)
    if current in free:  # a reset already past: never "move" to the host that just failed
        free.remove(current)
        blocked.append(Blocked(current, until, hit))
    if not free:
        return earliest(blocked)
    to = free[0]
    keys = {"state": name, "from": current, "to": to, "reason": "usage_limit"}
    sc.emit(HOST_SWITCH, **keys, message=hit.message, until=iso_time(until))
    return to


def note_ran(sc: StepContext, state: StateConfig, request: RunAction, result: ActionResult) -> None:
    """After a prompt action: the host it ran on and the quota use it reported (kept only
    when failover or pacing applies, so other runs save nothing new)."""
    if not request.slash or not _in_use(sc, state_hosts(sc, state)):
        return
    from little_loops.fsm.engine.host_failover import note_quota

    memory = sc.cursor.head.hosts
    host = request.host or DEFAULT_HOST
    memory["last"] = host
    note_quota(memory, host, result.claude)


def rehosted(first: RunAction, state: StateConfig, host: str) -> RunAction:
    """The state's request on `host` (its `model:` for hosts that take one)."""
    return on_host(first, host, getattr(state, "model", None))


def moved_prompt(first: RunAction, request: RunAction, result: ActionResult) -> str:
    """The prompt the next host gets: the same prompt and what the previous one said."""
    from little_loops.fsm.engine.host_failover import handoff_note

    return first.action + handoff_note(request.host or DEFAULT_HOST, result.output)
