"""Before a local run starts: every agent CLI its prompt states name is installed (issue 24).

A loop whose prompt states run on codex, gemini, opencode or qwen (`host:` on the state or
on the loop, or `LL_HOST_CLI`) is refused in one line when a CLI it names is not found,
before its first state runs: otherwise an overnight run finds out at the state that uses
that CLI, hours in, or at the failover it was counting on. claude is not checked here: a
loop that names no host runs as the reference's did and says so at its first slash
command. A Temporal run's actions run on its workers' machines, so only `run` and `resume`
on the local engine check. An action that becomes a slash command only after
interpolation cannot be known before the run, nor can a sub-loop's states.
"""

from __future__ import annotations

import os
import shutil

from little_loops.fsm.engine.action_step import is_slash
from little_loops.fsm.model.agent_hosts import DEFAULT_HOST
from little_loops.fsm.model.host_choice import chosen_hosts
from little_loops.fsm.schema import FSMLoop

__all__ = ["missing_host_refusal"]


def missing_host_refusal(fsm: FSMLoop) -> str | None:
    """One line when a prompt state of `fsm` runs on an agent CLI that is not installed."""
    for name, state in fsm.states.items():
        if not state.action or not is_slash(state, state.action):
            continue
        for host in chosen_hosts(getattr(state, "host", None), fsm.host, None):
            if host != DEFAULT_HOST:
                missing = _missing_cli(host)
                if missing is not None:
                    return f"Cannot run {fsm.name}: state '{name}' runs on {host}, but {missing}"
    return None


def _missing_cli(host: str) -> str | None:
    """What `run` says when `host`'s CLI is not installed (None: it is). The adapters load
    here, for a loop that names another host than claude (a plain run never does)."""
    from little_loops.fsm.process.hosts import host_named, program_of
    from little_loops.fsm.process.hosts.missing import host_not_found

    agent = host_named(host)
    program = program_of(agent)
    return None if _installed(program) else host_not_found(agent, program)


def _installed(program: str) -> bool:
    """Whether `program` (a path, or a name looked up on PATH as Popen does) can be run."""
    if os.sep in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program) is not None
