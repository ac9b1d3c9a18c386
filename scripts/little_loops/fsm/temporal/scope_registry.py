"""`scope` on Temporal: one small registry workflow per checkout holds the runs' claims.

The local engine keeps two loops whose `scope` overlaps from running at once in one
`.loops/.running/` (`store.locking`). On Temporal the same holds per checkout through
`ScopeRegistry`, a workflow with id `ll-loop-scopes@<host>:<realpath>` on the checkout's
task queue:

- `claim` is a workflow update, so claims are decided one at a time by the registry:
  two starts whose scopes overlap can never both be granted. (Search attributes or memos
  on the loop workflows were the other way: the server's visibility store is eventually
  consistent, so two starts checking it at once could both see nothing and both run.)
  A client reaches it with update-with-start, so the first claim starts the registry.
- A claim is held by the loop's workflow id (its lock): a second claim by the same run
  (a resume, a start refused as already running) replaces its paths and is granted.
- The loop workflow signals `release` when its run ends or pauses for a handoff, as a
  local run's process drops its lock then. A run that ended without it (terminated, say)
  is found by the client when its claim is in the way: the client looks the holder up
  and releases it if it no longer runs (`client.LoopRuns.claim_scope`).
- Every `OPERATIONS_PER_RUN` claims and releases, or when the server suggests it, the
  registry continues as new with its claims, so its history stays bounded however long
  it lives (a run queued with `--queue` claims again every few seconds).

Paths are normalised by the client (`locking.normalise_scope`): the workflow does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from little_loops.fsm.store.locking import overlap

__all__ = [
    "OPERATIONS_PER_RUN",
    "REGISTRY_NAME",
    "RegistryInput",
    "ScopeClaim",
    "ScopeConflict",
    "ScopeRegistry",
]

REGISTRY_NAME = "ll-loop-scopes"
OPERATIONS_PER_RUN = 1000
"""Claims and releases per registry workflow run before it continues as new."""


@dataclass
class ScopeClaim:
    """The normalised `paths` a run of `loop` works on; `holder` is its workflow id."""

    holder: str
    loop: str
    paths: list[str]


@dataclass
class ScopeConflict:
    """Why a claim is refused: the run holding an overlapping claim, and the shared path."""

    holder: str
    loop: str
    path: str


@dataclass
class RegistryInput:
    """The claims carried into a new registry run (continue-as-new)."""

    claims: list[ScopeClaim] = field(default_factory=list)


@workflow.defn(name=REGISTRY_NAME)
class ScopeRegistry:
    """See the module docstring."""

    def __init__(self) -> None:
        self._claims: dict[str, ScopeClaim] = {}
        self._operations = 0

    @workflow.run
    async def run(self, start: RegistryInput) -> None:
        for claim in start.claims:
            self._claims[claim.holder] = claim
        await workflow.wait_condition(self._rollover_due)
        # Updates under way finish here first: their callers get their answers.
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(RegistryInput(list(self._claims.values())))

    def _rollover_due(self) -> bool:
        return self._operations >= OPERATIONS_PER_RUN or (
            self._operations > 0 and workflow.info().is_continue_as_new_suggested()
        )

    @workflow.update
    def claim(self, claim: ScopeClaim) -> ScopeConflict | None:
        """Grant `claim` (None) unless another holder's paths overlap it."""
        self._operations += 1
        conflict = self._first_overlap(claim)
        if conflict is None:
            self._claims[claim.holder] = claim
        return conflict

    @workflow.signal
    def release(self, holder: str) -> None:
        """The run `holder` ended or paused: its paths are free."""
        self._operations += 1
        self._claims.pop(holder, None)

    @workflow.query
    def claims(self) -> list[ScopeClaim]:
        return list(self._claims.values())

    def _first_overlap(self, claim: ScopeClaim) -> ScopeConflict | None:
        for held in self._claims.values():
            if held.holder == claim.holder:
                continue  # the same run claiming again
            path = overlap(claim.paths, held.paths)
            if path is not None:
                return ScopeConflict(held.holder, held.loop, path)
        return None
