"""A `parallel:` state (issue 25): a child loop run once per item, up to `max_workers`
at once, in both dialects.

The state reads its items (`parallel_items`), loads the child once (`LoadChild`) and
hands a `Fanout` to the driver (`RunBranches`): the driver starts branches while fewer
than `max_workers` run and serves each branch's requests (`parallel_branch.BranchRun`,
a nested core per item); this module decides everything else: each item's binding
(`${context.item}`, `${context.item_index}`, `with:`), its clock and budget, its saved
place, `fail_fast`, the results (`captured.<state>.results`, a JSON list in item order)
and the route (`on_yes`/`on_success`, `on_partial`, `on_no`/`on_failure`).

The fan-out's memory (`cursor.head.parallel`) holds its items, the finished items'
results and each unfinished item's place, saved with the run at each of its branches'
routes and ends: a stopped or killed run resumes the state, finished items are not run
again and the others go on inside their child where they were. Spending of every
branch rolls up into the run's, whose budget caps each branch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.child_binding import (
    ChildBindingError,
    bind_child_context,
    clamped_child_budget,
    clamped_child_timeout,
)
from little_loops.fsm.engine.child_outcome import outcome_of
from little_loops.fsm.engine.child_run import AttachedWorktree, ChildRun, ParentCore, SubLoopFrame
from little_loops.fsm.engine.child_worktree import absolute_run_dir
from little_loops.fsm.engine.context import RunCursor, StepContext
from little_loops.fsm.engine.events import (
    APPROVAL_NEEDED,
    HANDOFF_CONTINUED,
    LOOP_START,
    PARALLEL_BRANCH_END,
    PARALLEL_BRANCH_START,
    PARALLEL_END,
    PARALLEL_START,
    ROUTE,
)
from little_loops.fsm.engine.parallel_branch import ALL_PAUSES, STOP_PAUSES, BranchPlan, BranchRun
from little_loops.fsm.engine.parallel_items import (
    CANCELLED,
    FanoutItemsError,
    branch_result,
    branch_verdict,
    fanout_items,
    fanout_route,
    fanout_verdict,
)
from little_loops.fsm.engine.requests import BranchToRun, RunBranches
from little_loops.fsm.engine.revisions import BRANCH_PAUSES, BUDGETS_OVER_PAUSES
from little_loops.fsm.engine.routing import RoutingError, no_route_message, resolve_target
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.engine.sub_loop import top_frame
from little_loops.fsm.engine.sub_loop_record import (
    keep_paused_place,
    restore_guards,
    restored_cursor,
)
from little_loops.fsm.engine.sub_loop_requests import ChildEnded, LoadChild, LoadedChild
from little_loops.fsm.interpolation import InterpolationError, interpolate
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.parallel_config import ParallelConfig, parallel_of
from little_loops.fsm.schema import FSMLoop, StateConfig

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = [
    "PARALLEL_BRANCH_END",
    "PARALLEL_BRANCH_START",
    "PARALLEL_END",
    "PARALLEL_START",
    "Fanout",
    "run_parallel",
]


if TYPE_CHECKING:  # `Request` is the union of every request, features' too
    _Sub = Generator[Request, Any, Ending | None]

# An item's events after which its place (in this fan-out's memory) has moved.
_PLACE_MOVES = frozenset({ROUTE, LOOP_START, HANDOFF_CONTINUED, APPROVAL_NEEDED})


def run_parallel(core: ParentCore, sc: StepContext, state: StateConfig) -> _Sub:
    """Run `state`'s items to their end; route the parent (or end the run paused)."""
    block = parallel_of(state)
    assert block is not None
    name = sc.cursor.current_state
    memory = sc.cursor.head.parallel
    if memory.get("state") != name or memory.get("iteration") is None:
        started = _start_memory(sc, block, name)
        if isinstance(started, str):
            return _leave(sc, state, "error", error=started)
        memory = sc.cursor.head.parallel = started
    sc.emit(
        PARALLEL_START,
        state=name,
        loop=memory["loop"],
        items=len(memory["items"]),
        max_workers=block.max_workers,
        resumed=bool(memory.get("results") or memory.get("places")),
    )
    given = (*(block.with_ or {}), "item", "item_index", "run_dir")
    loaded = yield LoadChild(memory["loop"], given)
    if not isinstance(loaded, LoadedChild):
        sc.cursor.head.parallel = {}
        return _leave(sc, state, "error", error=loaded.message)
    fanout = Fanout(core, sc, block, memory, loaded)
    if fanout.has_work():
        yield RunBranches(fanout)
    if fanout.paused is not None:
        return fanout.paused
    if fanout.unfinished() and _stopping(core):  # stopped before every item could end
        return Ending("signal")
    return _finish(sc, state, fanout)


def _stopping(core: ParentCore) -> bool:
    stopping: Any = getattr(core, "shutdown_requested", False)
    return bool(stopping)


def _start_memory(sc: StepContext, block: ParallelConfig, name: str) -> dict[str, Any] | str:
    """A new fan-out's memory, or why it cannot start (a one-line message)."""
    try:
        ctx = sc.interpolation()
        items = fanout_items(block, ctx)
        loop_name = interpolate(block.loop, ctx).strip()
    except (InterpolationError, FanoutItemsError) as exc:
        return str(exc)
    return {
        "state": name,
        "iteration": sc.cursor.iteration,
        "loop": loop_name,
        "items": items,
        "results": {},
        "places": {},
    }


def _finish(sc: StepContext, state: StateConfig, fanout: Fanout) -> Ending | None:
    results = fanout.results()
    verdict = fanout_verdict(results, cut_short=fanout.cut_short)
    text = json.dumps(results)
    sc.cursor.captured[sc.cursor.current_state] = {
        "output": text,
        "results": text,
        "verdict": verdict,
        "exit_code": None,
    }
    sc.cursor.head.parallel = {}
    counts = {v: sum(1 for r in results if r["verdict"] == v) for v in ("yes", "no", "error")}
    sc.emit(PARALLEL_END, state=sc.cursor.current_state, verdict=verdict, **counts)
    return _leave(sc, state, verdict)


def _leave(
    sc: StepContext, state: StateConfig, verdict: str, *, error: str | None = None
) -> Ending | None:
    """The state's route for `verdict` (`$current` and templates allowed); no route
    ends the run. A fan-out that could not start is the `error` verdict."""
    name = sc.cursor.current_state
    if error is not None:
        sc.cursor.captured[name] = {"output": "", "results": "[]", "verdict": "error"}
        sc.cursor.captured[name]["error"] = error
        target = state.on_error
        if target is None:
            return Ending("error", error)
    else:
        target = fanout_route(state, verdict)
    if target is None:
        return Ending("error", no_route_message(name, verdict, {}))
    try:
        resolved = resolve_target(
            target, current_state=name, state_names=sc.fsm.states, ctx=sc.interpolation()
        )
    except (RoutingError, InterpolationError) as exc:
        return Ending("error", str(exc))
    sc.emit(ROUTE, **{"from": name, "to": resolved, "verdict": verdict})
    sc.cursor.current_state = resolved
    return None


class Fanout:
    """The items of one `parallel:` state as its driver runs them (`RunBranches`)."""

    def __init__(
        self,
        core: ParentCore,
        sc: StepContext,
        block: ParallelConfig,
        memory: dict[str, Any],
        loaded: LoadedChild,
    ) -> None:
        self.core, self.sc, self.block, self.memory = core, sc, block, memory
        self.loop: FSMLoop = loaded.loop
        self.path = loaded.path
        self.max_workers = block.max_workers
        self.name = sc.cursor.current_state
        self.frame = core.sub_loop_frame or top_frame(core)
        self.items: list[Any] = memory["items"]
        self.pending = [i for i in range(len(self.items)) if str(i) not in memory["results"]]
        self.running: dict[int, BranchRun] = {}
        self.cut_short = False
        self.paused: Ending | None = None
        self.pausing = ALL_PAUSES if core.revised(BRANCH_PAUSES) else STOP_PAUSES

    def has_work(self) -> bool:
        return bool(self.pending)

    def unfinished(self) -> bool:
        """Whether an item has no result yet (and was not cut short by `fail_fast`)."""
        done = self.memory["results"]
        return not self.cut_short and any(str(i) not in done for i in range(len(self.items)))

    # -- the driver's side ----------------------------------------------------------------

    def next_branch(self) -> BranchToRun | None:
        """The next item to start (None: none now: all started, cut short or stopping)."""
        while self.pending and not self._stopping():
            index = self.pending.pop(0)
            branch = self._branch(index)
            if branch is not None:
                self.running[index] = branch
                return branch
        return None

    def branch_ended(self, branch: BranchToRun) -> list[BranchToRun]:
        """Keep what the branch came back with; the branches to cancel (`fail_fast`)."""
        run = self.running.pop(branch.index)
        if run.paused:
            assert run.ended is not None
            self.paused = self.paused or run.ended.ending
            if run.ended.ending.terminated_by != "signal":  # a handoff, a usage limit
                self._keep_place(run.index, run.ended)
            return []
        result = self._result(run)
        self._record(run.index, result)
        if self.block.fail_fast and result["verdict"] != "yes" and not self.cut_short:
            self.cut_short = True
            return list(self.running.values())
        return []

    # -- the results ----------------------------------------------------------------------

    def results(self) -> list[dict[str, Any]]:
        """One entry per item, in item order (items never started: `cancelled`)."""
        saved = self.memory["results"]
        return [
            saved.get(str(i)) or branch_result(item, i, verdict=CANCELLED, terminated_by=CANCELLED)
            for i, item in enumerate(self.items)
        ]

    def _result(self, run: BranchRun) -> dict[str, Any]:
        item, index = self.items[run.index], run.index
        where = run.worktree.record() if run.worktree is not None else None
        ended = run.ended
        if ended is None:  # its worktree could not be had
            return branch_result(
                item, index, verdict="error", terminated_by="error", error=run.failure
            )
        self._roll_up(ended.spending)
        outcome = outcome_of(ended.result, self.loop)
        verdict = CANCELLED if run.cancelled else branch_verdict(outcome)
        return branch_result(
            item,
            index,
            verdict=verdict,
            terminated_by=outcome.terminated_by,
            captured=ended.captured,
            error=outcome.error,
            worktree=where,
        )

    def _record(self, index: int, result: dict[str, Any]) -> None:
        self.memory["results"][str(index)] = result
        self.memory["places"].pop(str(index), None)
        self.sc.emit(
            PARALLEL_BRANCH_END,
            state=self.name,
            item_index=index,
            branch_item=result["item"],
            branches=len(self.items),
            verdict=result["verdict"],
            terminated_by=result["terminated_by"],
        )

    def _keep_place(self, index: int, ended: ChildEnded) -> None:
        """A branch that paused the run: its place kept for the resume (as a sub-loop's),
        what it spent so far the run's."""
        if ended.ending.terminated_by == "handoff":
            self.sc.cursor.handoff_count += 1
        self._roll_up(ended.spending)
        keep_paused_place(
            self.memory["places"][str(index)][self.frame.depth],
            ended,
            keep_state_budgets=self.core.revised(BUDGETS_OVER_PAUSES),
        )

    def _roll_up(self, spent: Any) -> None:
        if spent.anything:
            parent = self.sc.cursor.spending
            parent.add(spent.cost_usd, spent.to_dict()["tokens"])
            parent.priced = parent.priced and spent.priced

    # -- one branch -----------------------------------------------------------------------

    def _stopping(self) -> bool:
        return self.cut_short or self.paused is not None or _stopping(self.core)

    def _branch(self, index: int) -> BranchRun | None:
        """Item `index`'s branch, or None when it cannot be bound (its result is kept)."""
        item = self.items[index]
        places: list[dict[str, Any]] = self.memory["places"].get(str(index)) or []
        own = self.frame.depth  # the branch's record; deeper ones are its sub-loops'
        saved = places[own] if len(places) > own and places[own] else None
        try:
            fsm, cursor, guards = self._prepare(index, item, saved)
        except ChildBindingError as exc:
            message = str(exc)
            self._record(
                index,
                branch_result(item, index, verdict="error", terminated_by="error", error=message),
            )
            return None
        left = (saved or {}).get("worktree") or {}
        git_branch = None
        if self.block.in_worktrees:
            git_branch = f"ll/{self.core.fsm.name}/{self.name}/{index}"
        plan = BranchPlan(
            index=index,
            item=item,
            build=lambda worktree, origin: self._nest(index, fsm, cursor, guards, worktree, origin),
            git_branch=git_branch,
            label=f"{self.core.fsm.name}-{self.name}-{index}",
            left_worktree=left.get("path") if isinstance(left, dict) else None,
            fresh=saved is None,
            pausing=self.pausing,
        )
        self.sc.emit(
            PARALLEL_BRANCH_START,
            state=self.name,
            item_index=index,
            item=item,
            branches=len(self.items),
            resumed=saved is not None,
        )
        return BranchRun(plan, self._tagged(index))

    def _prepare(
        self, index: int, item: Any, saved: dict[str, Any] | None
    ) -> tuple[FSMLoop, RunCursor, RunGuards]:
        """The child as item `index` runs it: bound, clocked and budgeted; its cursor
        and guards fresh, or as its saved place left them."""
        core, loop = self.core, self.loop
        if saved is not None:
            context, timeout = dict(saved.get("context") or {}), saved.get("timeout")
        else:
            context = self._bind(index, item)
            timeout = clamped_child_timeout(
                loop.timeout,
                parent_timeout=core.fsm.timeout,
                parent_elapsed_ms=core.elapsed_ms(),
                state_timeout=self.block.timeout_seconds,
            )
        budget = clamped_child_budget(
            loop.max_cost_usd,
            run_budget=core.fsm.max_cost_usd,
            run_spent=self.sc.cursor.spending.cost_usd,
        )
        fsm = dataclasses.replace(
            loop,
            context=context,
            timeout=timeout,
            max_cost_usd=budget,
            llm=core.choices.applied_to(loop.llm),
        )
        guards = RunGuards(fsm)
        guards.loops_dir = core.guards.loops_dir
        if saved is None:
            cursor = RunCursor(fsm.initial)
        else:
            restore_guards(guards, saved)
            cursor = restored_cursor(saved, int(core.clock.wall() * 1000))
        return fsm, cursor, guards

    def _bind(self, index: int, item: Any) -> dict[str, Any]:
        """`with:` (which may use `${context.item}`), the item and its index, parameters."""
        try:
            ctx = self.sc.interpolation()
        except InterpolationError as exc:
            raise ChildBindingError(str(exc)) from exc
        given = {"item": item, "item_index": index}
        ctx = dataclasses.replace(ctx, context={**ctx.context, **given})
        # Placeholders stand for the item in the parameter checks (the item is no template).
        binding = HeadStateConfig(with_={**(self.block.with_ or {}), "item": "", "item_index": 0})
        context = bind_child_context(binding, self.loop, ctx, self.memory["loop"])
        context.update(given)
        return context

    def _nest(
        self,
        index: int,
        fsm: FSMLoop,
        cursor: RunCursor,
        guards: RunGuards,
        worktree: AttachedWorktree | None,
        origin: Path | None,
    ) -> ChildRun:
        """The branch's child run, its core started (in its worktree, if any)."""
        depth = self.frame.depth + 1
        places = self.memory["places"]
        records = places.get(str(index))
        if not records:
            records = places[str(index)] = [{} for _ in range(depth - 1)]
        emit = self._tagged(index)
        frame = SubLoopFrame(depth, (*self.frame.chain, self.memory["loop"]), records, emit)
        if origin is not None:  # a relative run_dir names the project's, not the worktree's
            absolute_run_dir(fsm.context, origin)
        log_dir = self.sc.log_dir
        if log_dir is not None:
            log_dir = log_dir / f"{self.memory['iteration']}-{self.name}.branch-{index}"
        child = ChildRun(
            frame,
            parent_state=f"{self.name}#{index}",  # one child per item (a workflow id each)
            parent_iteration=self.memory["iteration"],
            path=self.path,
            log_dir=log_dir,
            worktree=worktree,
        )
        core = self.core.nested(
            fsm, cursor=cursor, guards=guards, emit=child.emit, frame=frame, log_dir=log_dir
        )
        child.start(core)
        return child

    def _tagged(self, index: int) -> Any:
        """The run's callback for branch `index`'s events: each says its branch."""
        root = self.frame.root_emit
        item = self.items[index]
        tags = {
            "branch": index,
            "branches": len(self.items),
            "parallel_state": self.name,
            "branch_item": item if isinstance(item, str | int | float) else json.dumps(item),
        }

        keepers = self.frame.place_keepers

        def emit(event: dict[str, Any]) -> None:
            if keepers and event.get("event") in _PLACE_MOVES:
                # Inside a sub-loop (or an item): that level's place holds this fan-out's
                # memory, and it routes only when the fan-out ends; keep it current.
                for keep in keepers:
                    keep()
            root({**event, **tags})

        return emit
