"""A `loop:` state (spec §4): its child loop runs to its end as one step of the parent.

The parent loads the child (`LoadChild`), binds it and builds its run (`child_run`: a
nested `RunCore`), then hands that run to the driver (`RunChild`): the local driver
serves the child's requests (run an action, sleep, hand off, a grandchild...) in turn,
the Temporal workflow runs it as a child workflow. Its events reach the run's callback
with `depth`; its place is kept in the top-level cursor's `head.sub_loops`
(`sub_loop_record`), refreshed at each of its routes, so a saved parent resumes inside
it. Its spending rolls up into the parent's when it ends or pauses, and the run's budget
caps it. A `worktree:` state runs it in a worktree of another branch (`child_worktree`).

A stop, an interruption, a handoff, a usage limit or the run's budget reached inside the
child ends the whole run with the child's place kept; `FATAL_ERROR` and `LOOP_STOP`
printed in the child end the run as if the top-level loop's action printed them (§9f).
Any other ending is the child's outcome: the parent routes on it and writes it back
(`child_outcome`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.budget_routes import budget_reached, budgeted_state, token_budget
from little_loops.fsm.engine.child_binding import (
    ChildBindingError,
    bind_child_context,
    clamped_child_budget,
    clamped_child_timeout,
)
from little_loops.fsm.engine.child_outcome import (
    ChildOutcome,
    load_failure,
    outcome_of,
    route_target,
    write_back,
)
from little_loops.fsm.engine.child_run import ChildRun, ParentCore, SubLoopFrame
from little_loops.fsm.engine.child_worktree import ChildWorktree
from little_loops.fsm.engine.context import RunCursor, StepContext
from little_loops.fsm.engine.events import ROUTE
from little_loops.fsm.engine.requests import RunChild
from little_loops.fsm.engine.revisions import BUDGETS_OVER_PAUSES
from little_loops.fsm.engine.routing import RoutingError, no_route_message, resolve_target
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.engine.sub_loop_record import (
    keep_paused_place,
    matching_record,
    restore_guards,
    restored_cursor,
)
from little_loops.fsm.engine.sub_loop_requests import ChildEnded, LoadChild, LoadedChild
from little_loops.fsm.interpolation import InterpolationError, interpolate
from little_loops.fsm.model.budgets import with_budgets
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.log_names import action_log_name
from little_loops.fsm.schema import FSMLoop

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = ["MAX_SUB_LOOP_DEPTH", "SubLoopFrame", "run_sub_loop"]

MAX_SUB_LOOP_DEPTH = 8
"""Deepest nesting allowed at run time (§9c); deeper is a load failure naming the chain."""

# Child endings that end the whole run, the child's place kept for resume.
_PAUSING = frozenset({"signal", "handoff", "usage_limited"})
_BUDGET = "budget_exhausted"  # `core.BUDGET` (core imports this module)

if TYPE_CHECKING:  # `Request` is the union of every request, features' too
    _Sub = Generator[Request, Any, Ending | None]


def top_frame(core: ParentCore) -> SubLoopFrame:
    """The frame of a core that is not a child (the top-level run)."""
    return SubLoopFrame(0, (core.fsm.name,), core.cursor.head.sub_loops, core.event_callback)


def run_sub_loop(core: ParentCore, sc: StepContext, state: HeadStateConfig) -> _Sub:
    """Run `state`'s child to its end; route the parent (or end the run)."""
    frame = core.sub_loop_frame or top_frame(core)
    parent_state = sc.cursor.current_state
    saved = matching_record(frame.records, frame.depth, parent_state)
    if saved is None:
        del frame.records[frame.depth :]  # a place left by an earlier visit is stale
    name = saved["loop_name"] if saved is not None else _child_name(sc, state)
    if isinstance(name, ChildOutcome):
        return _come_back(sc, state, name, {}, [])
    chain = (*frame.chain, name)
    if len(chain) - 1 > MAX_SUB_LOOP_DEPTH:
        message = f"sub-loop depth limit ({MAX_SUB_LOOP_DEPTH}) exceeded: {' -> '.join(chain)}"
        return _come_back(sc, state, load_failure(message), {}, [])
    where = saved["loop_path"] if saved is not None else name
    loaded = yield LoadChild(where, _given_keys(sc, state, saved))
    if not isinstance(loaded, LoadedChild):
        return _come_back(sc, state, load_failure(loaded.message), {}, [])
    child = _ChildRun(core, sc, state, frame, chain, loaded)
    return (yield from child.run(saved))


def _given_keys(
    sc: StepContext, state: HeadStateConfig, saved: dict[str, Any] | None
) -> tuple[str, ...]:
    """The context keys the parent gives the child (so its load checks know them)."""
    if saved is not None:
        return tuple(saved.get("context") or {})
    if state.with_:
        return (*state.with_, "run_dir")
    if state.context_passthrough:
        return (*sc.fsm.context, *sc.cursor.captured)
    return ()


def _child_name(sc: StepContext, state: HeadStateConfig) -> str | ChildOutcome:
    """The `loop:` name, interpolated (a failure is the state's load failure)."""
    assert state.loop is not None
    try:
        return interpolate(state.loop, sc.interpolation()).strip()
    except InterpolationError as exc:
        return load_failure(f"Sub-loop '{state.loop}' could not be resolved: {exc}")


class _ChildRun:
    """One run of a child, from its parent's side: prepared, handed to the driver
    (`RunChild`: run here, or elsewhere), brought back."""

    def __init__(
        self,
        core: ParentCore,
        sc: StepContext,
        state: HeadStateConfig,
        frame: SubLoopFrame,
        chain: tuple[str, ...],
        loaded: LoadedChild,
    ) -> None:
        self.core, self.sc, self.state, self.frame = core, sc, state, frame
        self.chain, self.path = chain, loaded.path
        self.parent_state = sc.cursor.current_state
        self.loop: FSMLoop = loaded.loop
        self.worktree = ChildWorktree(sc, state, f"{core.fsm.name}-{self.parent_state}")

    def run(self, saved: dict[str, Any] | None) -> _Sub:
        try:
            fsm, cursor, guards = self._prepare(saved)
        except ChildBindingError as exc:
            return _come_back(self.sc, self.state, load_failure(str(exc)), {}, [])
        if self.state.worktree:
            failed = yield from self.worktree.attach(saved, fsm.context)
            if failed is not None:
                return _come_back(self.sc, self.state, failed, {}, [])
        child = self._nested(fsm, cursor, guards)
        ended: ChildEnded = yield RunChild(child)
        ending = ended.ending
        paused = ending.terminated_by in _PAUSING or self._run_budget_spent(ended)
        if not paused:
            yield from self.worktree.detach()
        return self._ended(ended, child, paused=paused)

    def _prepare(self, saved: dict[str, Any] | None) -> tuple[FSMLoop, RunCursor, RunGuards]:
        """The child loop as it runs here (bound context, clamped clock), its cursor and
        guards: fresh, or as the saved record left them."""
        if saved is not None:
            context, timeout = dict(saved.get("context") or {}), saved.get("timeout")
        else:
            try:
                ctx = self.sc.interpolation()
            except InterpolationError as exc:  # (a fragment's unbound parameter)
                raise ChildBindingError(str(exc)) from exc
            context = bind_child_context(self.state, self.loop, ctx, self.chain[-1])
            timeout = clamped_child_timeout(
                self.loop.timeout,
                parent_timeout=self.core.fsm.timeout,
                parent_elapsed_ms=self.core.elapsed_ms(),
                state_timeout=self.state.timeout,
            )
        budget = clamped_child_budget(
            self.loop.max_cost_usd,
            run_budget=None if self.core.wrapping_up else self.core.fsm.max_cost_usd,
            run_spent=self.sc.cursor.spending.cost_usd,
        )
        fsm = dataclasses.replace(
            self.loop,
            context=context,
            timeout=timeout,
            max_cost_usd=budget,
            llm=self.core.choices.applied_to(self.loop.llm),  # §4.6: the run's LLM choices
        )
        fsm = self._with_token_budget(fsm)
        guards = RunGuards(fsm)
        guards.loops_dir = self.core.guards.loops_dir
        if saved is None:
            cursor = RunCursor(fsm.initial)
        else:
            restore_guards(guards, saved)
            cursor = restored_cursor(saved, int(self.core.clock.wall() * 1000))
        # HEAD §7.6: the rate-limit wait memory is the run's, shared with its sub-loops.
        cursor.head.rate_limit = self.sc.cursor.head.rate_limit
        return fsm, cursor, guards

    def _with_token_budget(self, fsm: FSMLoop) -> FSMLoop:
        """The child's `max_tokens`: clamped to what the run's token budget has left, as
        its dollars are (a child of a run without one keeps its own)."""
        run_tokens = token_budget(self.core.fsm)
        if run_tokens is None or self.core.wrapping_up:  # a wrap-up's child: not held to it
            return fsm
        left = clamped_child_budget(
            token_budget(fsm),
            run_budget=run_tokens,
            run_spent=self.sc.cursor.spending.budget_tokens,
        )
        return with_budgets(fsm, max_tokens=int(left or 0))

    def _nested(self, fsm: FSMLoop, cursor: RunCursor, guards: RunGuards) -> ChildRun:
        depth = self.frame.depth + 1
        frame = SubLoopFrame(depth, self.chain, self.frame.records, self.frame.root_emit)
        log_dir = self.sc.log_dir
        if log_dir is not None:  # beside the parent's logs, never over them
            name = action_log_name(self.sc.cursor.iteration, self.parent_state)
            log_dir = log_dir / f"{name.removesuffix('.log')}.sub-{depth}"
        child = ChildRun(
            frame,
            parent_state=self.parent_state,
            parent_iteration=self.sc.cursor.iteration,
            path=self.path,
            log_dir=log_dir,
            worktree=self.worktree,
        )
        core = self.core.nested(
            fsm, cursor=cursor, guards=guards, emit=child.emit, frame=frame, log_dir=log_dir
        )
        child.start(core)
        return child

    def _ended(self, ended: ChildEnded, child: ChildRun, *, paused: bool) -> Ending | None:
        """The whole run ends (its place kept when it may go on), or the parent routes."""
        ending = ended.ending
        if ended.rate_limit is not None:  # a child run elsewhere: its memory comes back
            memory = self.sc.cursor.head.rate_limit
            memory.clear()
            memory.update(ended.rate_limit)
        if paused:
            self._pause(ended)
            return ending
        del self.frame.records[self.frame.depth :]
        self._roll_up(ended)
        if ending.terminated_by == "signal_stop" or ended.fatal:
            return ending
        outcome = outcome_of(ended.result, self.loop)
        return _come_back(self.sc, self.state, outcome, ended.captured, child.events)

    def _pause(self, ended: ChildEnded) -> None:
        """Keep the child's place (`keep_paused_place`); what it spent is the run's now."""
        if ended.ending.terminated_by == "handoff":
            self.sc.cursor.handoff_count += 1
        self._roll_up(ended)
        keep_paused_place(
            self.frame.records[self.frame.depth],
            ended,
            keep_state_budgets=self.core.revised(BUDGETS_OVER_PAUSES),
        )

    def _run_budget_spent(self, ended: ChildEnded) -> bool:
        """Whether the child stopped at the run's budget (not only its own): the whole
        run stops there, and a resume with a higher budget goes on inside the child."""
        if ended.ending.terminated_by != _BUDGET or self.core.wrapping_up:
            return False
        together = self.sc.cursor.spending.copy()
        together.add(ended.spending.cost_usd, ended.spending.to_dict()["tokens"])
        return budget_reached(self.core.fsm, together)

    def _roll_up(self, ended: ChildEnded) -> None:
        spent = ended.spending
        if spent.anything:
            parent = self.sc.cursor.spending
            state = budgeted_state(self.core.fsm, self.parent_state)  # its own budget
            parent.add(spent.cost_usd, spent.to_dict()["tokens"], state=state)
            parent.priced = parent.priced and spent.priced


def _come_back(
    sc: StepContext,
    state: HeadStateConfig,
    outcome: ChildOutcome,
    child_captured: dict[str, Any],
    child_events: list[dict[str, Any]],
) -> Ending | None:
    """§4.4 write-backs, then the §4.3 route (`$current` allowed); no route ends the run."""
    cursor = sc.cursor
    name = cursor.current_state
    write_back(
        cursor.captured,
        name,
        state,
        outcome,
        child_captured=child_captured,
        child_events=child_events,
    )
    target = route_target(state, outcome)
    if target is None:
        if outcome.kind == "load_error":
            return Ending("error", outcome.error)
        details = {"error": outcome.error} if outcome.error else {}
        return Ending("error", no_route_message(name, outcome.verdict, details))
    try:
        resolved = resolve_target(
            target, current_state=name, state_names=sc.fsm.states, ctx=sc.interpolation()
        )
    except (RoutingError, InterpolationError) as exc:
        return Ending("error", str(exc))
    sc.emit(ROUTE, **{"from": name, "to": resolved, "verdict": outcome.verdict})
    cursor.current_state = resolved
    return None
