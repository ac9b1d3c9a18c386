"""A legacy-dialect state that names its own agent host(s) (`host:`, issue 24).

The legacy `StateConfig` keeps exactly the fields of little-loops at aada157e1 (code
written for it lists them), so a legacy state that writes our `host:` is read as a
`HostedStateConfig`, as a `parallel:` state is read as a `ParallelStateConfig`. A HEAD
state has the field itself (`HeadStateConfig.host`). Either way the run core reads it
with `getattr(state, "host", None)` (`engine.host_step.state_hosts`): the state's host
wins over the loop's, `LL_HOST_CLI` and claude.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from little_loops.fsm.model.host_choice import HostSetting
from little_loops.fsm.model.parallel_config import ParallelStateConfig
from little_loops.fsm.schema import FSMLoop, StateConfig

__all__ = ["HostedStateConfig", "with_hosted_states"]


@dataclass
class HostedStateConfig(StateConfig):
    """A legacy state with the agent host(s) its slash-command action runs on."""

    host: HostSetting = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.host is not None:
            out["host"] = self.host
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostedStateConfig:
        return cls(**vars(StateConfig.from_dict(data)), host=data.get("host"))


def with_hosted_states(fsm: FSMLoop, data: dict[str, Any]) -> FSMLoop:
    """A legacy loop with its states that write `host:` read as `HostedStateConfig` (a
    `parallel:` state runs no action of its own: its items' child loops choose theirs)."""
    states = data.get("states")
    for name, raw in (states if isinstance(states, dict) else {}).items():
        built = fsm.states.get(name)
        names_host = isinstance(raw, dict) and raw.get("host") is not None
        if names_host and built is not None and not isinstance(built, ParallelStateConfig):
            fsm.states[name] = HostedStateConfig.from_dict(raw)
    return fsm
