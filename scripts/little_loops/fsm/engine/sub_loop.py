"""A `loop:` state (spec §4): its child loop runs to its end as one step of the parent.

The child is a child cursor of the same core: a nested `RunCore` whose requests (run an
action, sleep, hand off, load a grandchild...) pass through the parent to the driver
unchanged, so the driver needs nothing new but `LoadChild`. Its events reach the run's
callback with `depth`; its place is kept in the top-level cursor's `head.sub_loops`
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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
from little_loops.fsm.engine.child_worktree import ChildWorktree
from little_loops.fsm.engine.context import Clock, EventCallback, RunCursor, StepContext
from little_loops.fsm.engine.requests import Finish, LoadChild, LoadedChild, Request
from little_loops.fsm.engine.routing import RoutingError, no_route_message, resolve_target
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.step_result import Ending, ExecutionResult
from little_loops.fsm.engine.sub_loop_record import (
    child_record,
    matching_record,
    restore_guards,
    restored_cursor,
)
from little_loops.fsm.interpolation import InterpolationError, interpolate
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.log_names import action_log_name
from little_loops.fsm.model.run_choices import RunChoices
from little_loops.fsm.schema import FSMLoop

__all__ = ["MAX_SUB_LOOP_DEPTH", "SubLoopFrame", "run_sub_loop"]

MAX_SUB_LOOP_DEPTH = 8
"""Deepest nesting allowed at run time (§9c); deeper is a load failure naming the chain."""

# Child endings that end the whole run, the child's place kept for resume.
_PAUSING = frozenset({"signal", "handoff", "usage_limited"})
_BUDGET = "budget_exhausted"  # `core.BUDGET` (core imports this module)

_Sub = Generator[Request, Any, Ending | None]


@dataclass(frozen=True)
class SubLoopFrame:
    """Where a core sits in a chain of sub-loops: `depth` (0 for the top-level run), the
    loop names from the top (`chain`), the top-level cursor's `head.sub_loops`
    (`records`, shared by every level) and the run's event callback (`root_emit`)."""

    depth: int
    chain: tuple[str, ...]
    records: list[dict[str, Any]]
    root_emit: EventCallback


class ParentCore(Protocol):
    """What a sub-loop needs of the run core (`core.RunCore`, which imports this module)."""

    fsm: FSMLoop
    clock: Clock
    cursor: RunCursor
    guards: RunGuards
    sub_loop_frame: SubLoopFrame | None
    choices: RunChoices

    @property
    def event_callback(self) -> EventCallback: ...

    def elapsed_ms(self) -> int: ...

    def next_request(self) -> Request: ...

    def submit(self, result: Any = None) -> None: ...

    def nested(
        self,
        fsm: FSMLoop,
        *,
        cursor: RunCursor,
        guards: RunGuards,
        emit: EventCallback,
        frame: SubLoopFrame,
        log_dir: Path | None,
    ) -> ParentCore: ...


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
    """One run of a child: built, driven through the parent, brought back."""

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
        self.events: list[dict[str, Any]] = []
        self.child: ParentCore | None = None
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
        child = self.child = self._nested(fsm, cursor, guards)
        self._keep_place(None)
        request = child.next_request()
        while not isinstance(request, Finish):
            child.submit((yield self.worktree.place(request)))
            request = child.next_request()
        ending = request.ending
        paused = ending.terminated_by in _PAUSING or self._run_budget_spent(child, ending)
        if not paused:
            yield from self.worktree.detach()
        return self._ended(ending, request.result, paused=paused)

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
            run_budget=self.core.fsm.max_cost_usd,
            run_spent=self.sc.cursor.spending.cost_usd,
        )
        fsm = dataclasses.replace(
            self.loop,
            context=context,
            timeout=timeout,
            max_cost_usd=budget,
            llm=self.core.choices.applied_to(self.loop.llm),  # §4.6: the run's LLM choices
        )
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

    def _nested(self, fsm: FSMLoop, cursor: RunCursor, guards: RunGuards) -> ParentCore:
        depth = self.frame.depth + 1
        frame = SubLoopFrame(depth, self.chain, self.frame.records, self.frame.root_emit)
        log_dir = self.sc.log_dir
        if log_dir is not None:  # beside the parent's logs, never over them
            name = action_log_name(self.sc.cursor.iteration, self.parent_state)
            log_dir = log_dir / f"{name.removesuffix('.log')}.sub-{depth}"
        return self.core.nested(
            fsm, cursor=cursor, guards=guards, emit=self._emit, frame=frame, log_dir=log_dir
        )

    def _emit(self, event: dict[str, Any]) -> None:
        """A child event: `depth` added (a deeper one keeps its own), the child's place
        refreshed at its routes before the run's callback (persistence) sees them."""
        if "depth" not in event:
            event = {**event, "depth": self.frame.depth + 1}
            kind = event.get("event")
            if kind == "route":
                self._keep_place(str(event["to"]))
            elif kind in ("loop_start", "handoff_continued"):
                self._keep_place(None)  # (a continued handoff's state runs again, prompted)
        self.events.append(event)
        self.frame.root_emit(event)

    def _keep_place(self, next_state: str | None) -> None:
        child = self.child
        assert child is not None
        record = child_record(
            parent_state=self.parent_state,
            loop_name=self.chain[-1],
            loop_path=self.path,
            cursor=child.cursor,
            guards=child.guards,
            context=child.fsm.context,
            timeout=child.fsm.timeout,
            elapsed_ms=child.elapsed_ms(),
            next_state=next_state,
        )
        worktree = self.worktree.record()
        if worktree is not None:  # removed by a resume, which attaches a fresh one
            record["worktree"] = worktree
        records, index = self.frame.records, self.frame.depth
        if index < len(records):
            records[index] = record  # deeper places stay: a resumed grandchild needs its own
        else:
            records.append(record)

    def _ended(self, ending: Ending, result: ExecutionResult, *, paused: bool) -> Ending | None:
        """The whole run ends (its place kept when it may go on), or the parent routes."""
        child = self.child
        assert child is not None
        if paused:
            self._pause(ending)
            return ending
        del self.frame.records[self.frame.depth :]
        self._roll_up(child)
        if ending.terminated_by == "signal_stop" or self._fatal(child, ending):
            return ending
        outcome = outcome_of(result, child.fsm)
        return _come_back(self.sc, self.state, outcome, child.cursor.captured, self.events)

    def _pause(self, ending: Ending) -> None:
        """Keep the child's place: a handoff's state runs again with its prompt, a usage
        limit's wait goes on; an interruption's place is the last route's."""
        record = self.frame.records[self.frame.depth]
        child = self.child
        assert child is not None
        if ending.terminated_by == "handoff":
            self.sc.cursor.handoff_count += 1
            record["handoff_context"] = {
                "prompt": ending.continuation_prompt or "",
                "count": child.cursor.handoff_count,
                "state": child.cursor.current_state,
            }
            record["counters"]["handoff_count"] = child.cursor.handoff_count
        record["limit_wait"] = child.cursor.limit_wait
        # What it spent so far is the run's now; the resumed child counts from nothing.
        self._roll_up(child)
        record["spending"] = {}

    def _run_budget_spent(self, child: ParentCore, ending: Ending) -> bool:
        """Whether the child stopped at the run's budget (not only its own): the whole
        run stops there, and a resume with a higher budget goes on inside the child."""
        budget = self.core.fsm.max_cost_usd
        if ending.terminated_by != _BUDGET or budget is None:
            return False
        return self.sc.cursor.spending.cost_usd + child.cursor.spending.cost_usd >= budget

    def _roll_up(self, child: ParentCore) -> None:
        spent = child.cursor.spending
        if spent.anything:
            parent = self.sc.cursor.spending
            parent.add(spent.cost_usd, spent.to_dict()["tokens"])
            parent.priced = parent.priced and spent.priced

    @staticmethod
    def _fatal(child: ParentCore, ending: Ending) -> bool:
        """Whether the child ended on a `FATAL_ERROR` signal (which fails the whole run)."""
        if ending.terminated_by != "error":
            return False
        entries = child.guards.errors.entries
        last = entries[-1] if entries else None
        cursor = child.cursor
        return (
            last is not None
            and last.source == "fatal_error"
            and last.state == cursor.current_state
            and last.iteration == cursor.iteration
        )


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
    sc.emit("route", **{"from": name, "to": resolved, "verdict": outcome.verdict})
    cursor.current_state = resolved
    return None
