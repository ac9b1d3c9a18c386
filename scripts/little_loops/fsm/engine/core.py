"""The run core: every decision of a run, as code that does no I/O.

`RunCore` decides which state runs next, applies the limits and guards, acts on signals,
routes and emits the events; everything that touches the host it asks for as a request
(`requests`): run an action, judge with host I/O, checkpoint, fingerprint the work tree
for the stall guard, sleep or wait, hand off. A driver
loops `request = core.next_request()` / `core.submit(result)` until the request is a
`Finish`, which carries the run's `ExecutionResult`.

`FSMExecutor` drives it synchronously; another engine can drive the same core from async
code (await the I/O, then submit). The core reads time only from the injected clock and
`${env.X}` from the injected environment; events go to the callback as they happen.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.action_step import (
    complete_action,
    completed_keys,
    prepare_action,
    prepare_retry,
    spent_tokens,
)
from little_loops.fsm.engine.budget_routes import (
    announce_wrap_up,
    budget_message,
    budget_reached,
    budgeted_state,
    route_over_budget,
    spent_state_budget,
    take_wrap_up,
)
from little_loops.fsm.engine.context import Clock, EventCallback, RunCursor, StepContext, iso_time
from little_loops.fsm.engine.cursor_records import LimitWaitRecord
from little_loops.fsm.engine.edge_revisits import count_edge
from little_loops.fsm.engine.evaluation_step import (
    Judgement,
    evaluate_step,
    judging_needs_host_io,
    needs_judgement,
)
from little_loops.fsm.engine.events import (
    ACTION_COMPLETE,
    APPROVAL_NEEDED,
    APPROVAL_WAITING,
    BACKOFF,
    CHECKPOINT,
    HANDOFF_CONTINUED,
    HANDOFF_DETECTED,
    LIMIT_WAIT,
    LIMIT_WAIT_END,
    LOOP_COMPLETE,
    LOOP_START,
    PARALLEL_BRANCH_END,
    RATE_LIMIT_BACKOFF,
    RATE_LIMIT_WAITING,
    ROUTE,
    STATE_ENTER,
)
from little_loops.fsm.engine.handoff_flow import handle_handoff
from little_loops.fsm.engine.head_auth import auth_failure_route
from little_loops.fsm.engine.head_caps import announce_summary, cap_reached, take_summary
from little_loops.fsm.engine.head_context import FragmentParameterError
from little_loops.fsm.engine.head_endings import CAP_ENDINGS, FAILURE_TERMINAL
from little_loops.fsm.engine.head_routing import HeadRoute
from little_loops.fsm.engine.head_routing_step import move_head
from little_loops.fsm.engine.host_step import (
    choose_host,
    fail_over,
    moved_prompt,
    note_ran,
    rehosted,
)
from little_loops.fsm.engine.limit_step import (
    CONTINUE_PROMPT,
    backoff_keys,
    limit_of,
    wait_keys,
    wait_record,
)
from little_loops.fsm.engine.retries import count_entry, leave_exhausted
from little_loops.fsm.engine.revisions import (
    HEAD_RATE_LIMITS,
    WORKSPACE_FINGERPRINT,
    every_revision,
)
from little_loops.fsm.engine.routing import RoutingError, resolve_target
from little_loops.fsm.engine.routing_step import (
    leave_over_visited,
    leave_stalled,
    maintain_restart,
    route_after_step,
)
from little_loops.fsm.engine.run_events import (
    EventCallbackError,
    checkpoint_keys,
    completion_keys,
    deliver,
    ignore_event,
)
from little_loops.fsm.engine.run_guards import RunGuards

# The requests a run makes only when a feature asks (waits, judging with I/O, checkpoints,
# the work tree, handoffs) and the steps of approvals, sub-loops, fan-outs, circuits and
# limits are imported where they are used: a plain run does not load them (start-up).
from little_loops.fsm.engine.run_requests import Finish, RunAction, SaveSnapshot
from little_loops.fsm.engine.step_result import Ending, ExecutionResult, Step, step_ending
from little_loops.fsm.engine.throttle import count_action_run, keep_visit_count
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler, HandoffResult
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.model.agent_hosts import DEFAULT_HOST
from little_loops.fsm.model.approval import is_approval
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig
from little_loops.fsm.model.limit_hit import LimitHit
from little_loops.fsm.model.parallel_config import parallel_of
from little_loops.fsm.model.run_choices import NO_CHOICES, RunChoices
from little_loops.fsm.schema import FSMLoop, StateConfig
from little_loops.fsm.signal_detector import SignalDetector

if TYPE_CHECKING:
    from little_loops.fsm.engine.head_rate_limits import HeadLimits
    from little_loops.fsm.engine.limit_policy import LimitBackoff
    from little_loops.fsm.engine.requests import Request
    from little_loops.fsm.engine.sub_loop import SubLoopFrame

__all__ = ["BUDGET", "SAVE_POINTS", "USAGE_LIMITED", "RunCore", "SaveCallback"]

SAVE_POINTS = frozenset(
    {
        LOOP_START,
        ROUTE,
        HANDOFF_CONTINUED,
        LIMIT_WAIT,
        LIMIT_WAIT_END,
        RATE_LIMIT_WAITING,
        APPROVAL_NEEDED,
        APPROVAL_WAITING,
        PARALLEL_BRANCH_END,
    }
)
"""Events after which the core asks for a snapshot (`SaveSnapshot`); also a
`handoff_detected` whose handoff spawns a session (saved before the session exists)."""

SaveCallback = Callable[[SaveSnapshot], None]
# Asks for the top run's snapshot after an event: (event name, payload, from a sub-loop).
_AskSave = Callable[[str, Mapping[str, object], bool], None]

BUDGET = "budget_exhausted"
"""`terminated_by` of a run that reached its budget (`max_cost_usd`, `--max-cost`,
`max_tokens`, `--max-tokens`)."""

USAGE_LIMITED = "usage_limited"
"""`terminated_by` of a run whose usage limit resets beyond `rate_limit.max_wait`."""

# What the core's generator yields, and what it is sent back.
if TYPE_CHECKING:  # `Request` is the union of every request, features' too
    _Steps = Generator[Request, Any, None]
    _Sub = Generator[Request, Any, Ending | None]


@dataclass(frozen=True)
class _Moved:
    """What a limit left of an action (`RunCore._fail_over`): its request's host, the
    limit to meet, the session to continue, and its run on another host (None: none)."""

    first: RunAction
    hit: LimitHit
    session: str | None
    request: RunAction | None = None


class RunCore:
    """One run of `fsm`, as requests to its driver (see the module docstring).

    `cursor` and `guards` are the run's position and guards (a resumed run passes its
    own); `stop_requested` tells whether a shutdown was asked for (also
    `request_shutdown()`); `checkpoints` whether to ask for `Checkpoint`s;
    `handoff_handler` only decides what a handoff does (its `behavior`): the handing off
    itself is the `HandOff` request. `revised(name)` says whether a named change of
    `revisions` applies to this run (default: all do; a replayed workflow may say no).
    `choices`: the run's `--no-llm`/`--llm-model`, already applied to `fsm` by whoever
    loaded it; the core applies them to the sub-loops it loads. `save`: where the core
    asks for a snapshot at each of its `SAVE_POINTS` (None: nobody keeps a state file);
    a sub-loop's core asks its top run's.
    """

    def __init__(
        self,
        fsm: FSMLoop,
        *,
        clock: Clock,
        cursor: RunCursor | None = None,
        guards: RunGuards | None = None,
        emit: EventCallback | None = None,
        env: Mapping[str, str] | None = None,
        signal_detector: SignalDetector | None = None,
        handoff_handler: HandoffHandler | None = None,
        log_dir: Path | None = None,
        checkpoints: bool = False,
        stop_requested: Callable[[], bool] | None = None,
        revised: Callable[[str], bool] = every_revision,
        sub_loop_frame: SubLoopFrame | None = None,
        choices: RunChoices = NO_CHOICES,
        save: SaveCallback | None = None,
    ) -> None:
        self.fsm = fsm
        self.clock = clock
        self.cursor = cursor if cursor is not None else RunCursor(fsm.initial)
        self.guards = guards if guards is not None else RunGuards(fsm)
        self._callback: EventCallback = emit or ignore_event
        self._env = env
        self._signal_detector = signal_detector
        self._handoff_handler = handoff_handler
        self._log_dir = log_dir
        self._checkpoints = checkpoints
        self._stop_requested = stop_requested
        self._revised = revised
        # Set on the core of a sub-loop: its place in the chain (`sub_loop`).
        self.sub_loop_frame = sub_loop_frame
        # The run's `--no-llm`/`--llm-model`, applied to every sub-loop it loads (§4.6).
        self.choices = choices
        # Asks for a snapshot: the top run's (a sub-loop's core is given it by `nested`).
        self._ask_save: _AskSave | None = None if save is None else self._snapshot_asker(save)
        self._stopping = False
        # True while the `on_budget` wrap-up runs: a sub-loop it runs is not held to the
        # run's spent budgets (`sub_loop`).
        self.wrapping_up = False
        self._clock_start = clock.monotonic()
        self._elapsed_before_ms = 0
        self._steps: _Steps = self._run()
        self._request: Request | None = None

    # -- the driver's side --------------------------------------------------------------

    def next_request(self) -> Request:
        """What the driver does next (the same request until it submits a result)."""
        if self._request is None:
            self._request = next(self._steps)
        return self._request

    def submit(self, result: Any = None) -> None:
        """The result of the current request (see each request for its type)."""
        if self._request is None:
            raise RuntimeError("submit() before next_request(): there is no request yet")
        self._request = self._steps.send(result)

    def request_shutdown(self) -> None:
        """Stop soon (see `FSMExecutor.request_shutdown`)."""
        self._stopping = True

    @property
    def shutdown_requested(self) -> bool:
        stop = self._stop_requested
        return self._stopping or (stop is not None and stop())

    def revised(self, name: str) -> bool:
        """Whether the named change of the run core applies to this run (`revisions`)."""
        return self._revised(name)

    def elapsed_ms(self) -> int:
        """Milliseconds spent on this loop, earlier runs of a resumed loop included."""
        return self._elapsed_before_ms + int((self.clock.monotonic() - self._clock_start) * 1000)

    @property
    def event_callback(self) -> EventCallback:
        """Where this core's events go."""
        return self._callback

    def nested(
        self,
        fsm: FSMLoop,
        *,
        cursor: RunCursor,
        guards: RunGuards,
        emit: EventCallback,
        frame: SubLoopFrame,
        log_dir: Path | None,
    ) -> RunCore:
        """The core of a sub-loop of this run: the same clock, environment, signals,
        handoff handler, checkpoints and run choices; it stops when this core stops
        (`sub_loop`)."""
        child = RunCore(
            fsm,
            clock=self.clock,
            cursor=cursor,
            guards=guards,
            emit=emit,
            env=self._env,
            signal_detector=self._signal_detector,
            handoff_handler=self._handoff_handler,
            log_dir=log_dir,
            checkpoints=self._checkpoints,
            stop_requested=lambda: self.shutdown_requested,
            revised=self._revised,
            sub_loop_frame=frame,
            choices=self.choices,
        )
        child._ask_save = self._ask_save  # the top run's snapshot (its state is under way)
        return child

    def finish_after_crash(self, exc: Exception) -> ExecutionResult:
        """End the run after a driver's collaborator or the event callback raised."""
        message = (
            str(exc) if isinstance(exc, EventCallbackError) else f"{type(exc).__name__}: {exc}"
        )
        result = self._result("error", message)
        with contextlib.suppress(EventCallbackError):  # the callback is what failed
            self._emit(LOOP_COMPLETE, **completion_keys(result))
        return result

    # -- the run ------------------------------------------------------------------------

    def _run(self) -> _Steps:
        self._start()
        self._emit(LOOP_START, loop=self.fsm.name)
        ending = yield from self._loop()
        assert ending is not None
        yield Finish(ending, self._finish(ending))

    def _start(self) -> None:
        """A resumed run (its cursor has `started_at` and `start_time_ms`) keeps its
        first start, and its loop clock counts the time already spent."""
        wall = self.clock.wall()
        now_ms = int(wall * 1000)
        cursor = self.cursor
        cursor.start_time_ms = cursor.start_time_ms or now_ms
        self._elapsed_before_ms = max(now_ms - cursor.start_time_ms, 0)
        self._clock_start = self.clock.monotonic()  # durations from here on are monotonic
        cursor.started_at = cursor.started_at or iso_time(wall)

    def _loop(self) -> _Sub:
        sc = self._step_context()  # the collaborators are fixed for the run
        while True:
            state_name = self.cursor.current_state
            state = self.fsm.states.get(state_name)
            if state is None:
                return Ending("error", f"State '{self.cursor.current_state}' is not in the loop")
            reason = self._stop_reason(state)
            if reason == BUDGET:
                return (yield from self._end_at_budget(sc, Ending(BUDGET, self._budget_message())))
            if reason in CAP_ENDINGS:
                return (yield from self._end_at_cap(sc, reason))
            if reason is not None:
                return Ending(reason, self._stop_message(reason))
            spent_budget = spent_state_budget(self.fsm, state_name, self.cursor.spending)
            if state.terminal:
                ending = maintain_restart(sc, state)
            elif spent_budget is not None:  # addition: straight on, counted as a step
                self._enter(state)
                ending = route_over_budget(sc, spent_budget, None)
            elif self._retries_exhausted(state):
                ending = leave_exhausted(sc, state)
                if ending is None:
                    continue  # HEAD §7.1: nothing ran, no step
            elif not self.guards.may_enter(self.cursor.current_state, state):
                ending = leave_over_visited(sc, state)
                if ending is None:
                    continue  # nothing ran: no backoff before the state it went to
            else:
                ending = yield from self._step(sc, state)
            if ending is not None and ending.terminated_by == BUDGET:  # in a sub-loop
                return (yield from self._end_at_budget(sc, ending))
            if ending is not None:
                return ending
            seconds = self._backoff_seconds()
            if seconds is not None:
                self._emit(BACKOFF, seconds=seconds)  # addition: so the wait can be shown
                from little_loops.fsm.engine.wait_requests import Sleep

                yield Sleep(seconds)

    def _step(self, sc: StepContext, state: StateConfig) -> _Sub:
        """Enter and run `state`; a HEAD run then counts the edge it took (§7.5)."""
        self._enter(state)
        source = self.cursor.current_state
        ending = yield from self._run_state(sc, state)
        fsm = self.fsm
        if ending is None and isinstance(fsm, HeadLoop):
            target = self.cursor.current_state
            ending = count_edge(fsm, self.cursor.head, source, target, self._emit)
        return ending

    def _retries_exhausted(self, state: StateConfig) -> bool:
        """HEAD §7.1 at the top of a pass: count the entry (and keep the throttle count of
        this visit only, §7.5); True when `on_retry_exhausted` must be taken instead."""
        if not isinstance(state, HeadStateConfig):
            return False
        memory, name = self.cursor.head, self.cursor.current_state
        keep_visit_count(memory, name)
        return count_entry(memory, name, state)

    def _end_at_cap(self, sc: StepContext, cap: str) -> _Sub:
        """HEAD §7.3/§7.4: run the cap's summary state once (its action runs even when it
        is terminal), then end with the cap whatever the state did (an interruption stays
        one). The run stands again where the cap stopped it (a `route` back, which also
        saves that place), so a resume with a higher cap goes on with the work."""
        fsm, cursor = self.fsm, self.cursor
        assert isinstance(fsm, HeadLoop)
        pending = cursor.current_state
        target = take_summary(fsm, cap, cursor.head)
        if target is None:
            return Ending(cap)
        try:  # `$current` and templates as in any route (§9g)
            summary = resolve_target(
                target, current_state=pending, state_names=fsm.states, ctx=sc.interpolation()
            )
        except RoutingError as exc:
            return Ending("error", str(exc))
        announce_summary(cap, summary, cursor.iteration, cursor.head, self._emit)
        interrupted = yield from self._run_once(sc, summary, pending, cap)
        return interrupted or Ending(cap)

    def _end_at_budget(self, sc: StepContext, ending: Ending) -> _Sub:
        """The run's budget is reached (`ending`): with the loop's `on_budget`, run that
        state once for these budgets (a wrap-up; its route is not taken), then end as
        `ending` says, standing where the budget stopped it (a resume with a higher budget
        goes on with the work). As `_end_at_cap` for the caps."""
        cursor = self.cursor
        target = take_wrap_up(self.fsm, cursor.spending)
        if target is None:
            return ending
        pending = cursor.current_state
        try:
            wrap_up = resolve_target(
                target, current_state=pending, state_names=self.fsm.states, ctx=sc.interpolation()
            )
        except RoutingError as exc:
            return Ending("error", str(exc))
        announce_wrap_up(self.fsm, wrap_up, cursor.spending, self._emit)
        self.wrapping_up = True
        try:
            interrupted = yield from self._run_once(sc, wrap_up, pending, BUDGET)
        finally:
            self.wrapping_up = False
        return interrupted or ending

    def _run_once(self, sc: StepContext, name: str, pending: str, reason: str) -> _Sub:
        """Run state `name` once (its action runs even when it is terminal), then stand at
        `pending` again (a `route` back, for `reason`); an interruption is returned."""
        cursor = self.cursor
        cursor.current_state = name
        state = self.fsm.states[name]
        self._enter(state)
        ending = yield from self._run_state(sc, state)
        if ending is not None and ending.terminated_by == "signal":
            return ending
        self._emit(ROUTE, **{"from": cursor.current_state, "to": pending, "reason": reason})
        cursor.current_state = pending
        return None

    def _enter(self, state: StateConfig) -> None:
        cursor = self.cursor
        cursor.iteration += 1
        self.guards.visits.enter(cursor.current_state)
        cursor.redirected.clear()
        self._emit(STATE_ENTER, state=cursor.current_state, iteration=cursor.iteration)

    def _stop_reason(self, state: StateConfig) -> str | None:
        if self.shutdown_requested:
            return "signal"
        if state.terminal and not self.fsm.maintain:
            # even when this was the last allowed iteration
            failed = isinstance(state, HeadStateConfig) and state.failure
            return FAILURE_TERMINAL if failed else "terminal"
        if self._budget_reached():
            return BUDGET
        if isinstance(self.fsm, HeadLoop):
            cap = cap_reached(self.fsm, self.cursor.iteration, self.cursor.head)
            if cap is not None:
                return cap
        elif self.cursor.iteration >= self.fsm.max_iterations:
            return "max_iterations"
        if self._loop_timed_out():
            return "timeout"
        return None

    def _stop_message(self, reason: str) -> str | None:
        if reason == BUDGET:
            return self._budget_message()
        if reason == FAILURE_TERMINAL:
            return f"the run ended at the failure terminal '{self.cursor.current_state}'"
        return None

    def _run_state(self, sc: StepContext, state: StateConfig) -> _Sub:
        """Execute one state; return how the run ends when it ends here."""
        if isinstance(state, HeadStateConfig) and state.loop:
            from little_loops.fsm.engine.sub_loop import run_sub_loop  # only sub-loops load it

            name = self.cursor.current_state
            ending = yield from run_sub_loop(self, sc, state)
            return ending if ending is not None else self._over_budget_after_child(sc, name)
        if parallel_of(state) is not None:  # issue 25, both dialects
            from little_loops.fsm.engine.parallel import run_parallel  # only fan-outs load it

            return (yield from run_parallel(self, sc, state))
        try:
            ctx = sc.interpolation()
        except FragmentParameterError as exc:  # HEAD §5: an unbound required parameter
            return Ending("error", str(exc))
        if is_approval(state):  # issue 26: ask a person, wait for the answer
            from little_loops.fsm.engine.approval_step import ask_approval  # only approvals

            return (yield from ask_approval(sc, state, ctx, self._now))
        step = Step()
        if state.action:
            acted = yield from self._act(sc, state, ctx)
            if isinstance(acted, Ending):
                return acted
            if isinstance(acted, HeadRoute):  # HEAD §7.6: the rate-limit budget is spent
                return self._head_detour(sc, acted, ctx)
            step = acted
            ending = self._end_after_action(step)
            if ending is not None:
                return ending
            detour = self._head_after_action(state, step)
            if detour is not None:
                return self._head_detour(sc, detour, ctx)
        judgement = None
        if needs_judgement(state, step) and judging_needs_host_io(state, step, self.fsm.llm):
            from little_loops.fsm.engine.judge_requests import EvaluateWithIO

            judgement = yield EvaluateWithIO(state, ctx, step, self.fsm.llm)
            self._spend_judgement(judgement)
        evaluate_step(sc, state, ctx, step, judgement)
        handoff = step.signal_of("handoff")
        if step.action is not None and self._checkpoints:
            yield from self._checkpoint("handoff" if handoff else "iteration")
        cursor, ended = self.cursor, step_ending(step)
        workspace = None
        if self.guards.needs_workspace(ended) and self._revised(WORKSPACE_FINGERPRINT):
            from little_loops.fsm.engine.workspace_requests import InspectWorkspace

            workspace = yield InspectWorkspace()
        stall = self.guards.note_ending(cursor.current_state, cursor.iteration, ended, workspace)
        if stall is not None:
            return leave_stalled(sc, stall)
        if handoff is not None:
            return (yield from self._hand_off(sc, handoff))
        if isinstance(state, HeadStateConfig):
            tripped = yield from self._circuit_trip(state, ctx, step)
            if tripped is not None:
                return self._head_detour(sc, tripped, ctx)
        own = spent_state_budget(self.fsm, cursor.current_state, cursor.spending)
        if own is not None and step.signal_of("stop") is None:  # addition: the state's budget
            return route_over_budget(sc, own, step.verdict)
        return route_after_step(sc, state, ctx, step)

    def _over_budget_after_child(self, sc: StepContext, name: str) -> Ending | None:
        """A `loop:` state whose child spent its budget: taken from where the child's
        outcome routed it to its `on_budget` (a second `route` event)."""
        own = spent_state_budget(self.fsm, name, self.cursor.spending)
        if own is None:
            return None
        self.cursor.current_state = name
        return route_over_budget(sc, own, None)

    def _head_after_action(self, state: StateConfig, step: Step) -> Ending | HeadRoute | None:
        """HEAD §7.5 and §7.6 after a state's action: the throttle's count, and an
        authentication failure straight to `on_error`; None: judge and route as usual."""
        if not isinstance(state, HeadStateConfig):
            return None
        throttled = count_action_run(self.cursor.head, self.cursor.current_state, state, self._emit)
        if throttled is not None:
            return throttled
        auth = auth_failure_route(state, step)
        return auth if auth is not None and self._revised(HEAD_RATE_LIMITS) else None

    def _head_detour(
        self, sc: StepContext, detour: Ending | HeadRoute, ctx: InterpolationContext
    ) -> Ending | None:
        """A HEAD guard's answer: the end of the run, or a route that bypasses routing."""
        if isinstance(detour, Ending):
            return detour
        ctx.result = self.cursor.last_result
        return move_head(sc, detour, ctx)

    def _circuit_trip(
        self, state: HeadStateConfig, ctx: InterpolationContext, step: Step
    ) -> Generator[Request, Any, Ending | HeadRoute | None]:
        """HEAD §7.7 after an evaluated state (not `next:` or `loop:` states); the driver
        fingerprints `progress_paths` (host I/O)."""
        fsm = self.fsm
        circuit = fsm.circuit if isinstance(fsm, HeadLoop) else None
        if circuit is None or step.verdict is None or state.next or state.loop:
            return None
        from little_loops.fsm.engine.circuit import note_outcome, trip_route, watched_paths

        fingerprint = None
        if circuit.progress_paths:
            fingerprint = yield watched_paths(circuit, ctx)
        exit_code = step.action.exit_code if step.action is not None else 0
        outcome = (self.cursor.current_state, exit_code, step.verdict)
        trip = note_outcome(circuit, self.cursor.head, outcome, fingerprint)
        return None if trip is None else trip_route(circuit, trip, self._emit)

    # -- an action, and the limits it may meet ---------------------------------------------

    def _act(
        self, sc: StepContext, state: StateConfig, ctx: InterpolationContext
    ) -> Generator[Request, Any, Step | Ending | HeadRoute]:
        """Run `state`'s action until it gets through or a limit plan gives up; waits and
        backoffs count no iteration, error or stall streak (the state simply runs again).
        A HEAD state with rate-limit keys meets rate and usage limits with HEAD's ladder
        (§7.6), whose exhaustion may route the run elsewhere (a `HeadRoute`)."""
        limits = self._head_limits(state)
        started = yield from self._start_action(sc, state, ctx, limits)
        if not isinstance(started, tuple):
            return started
        first, request = started
        retries = 0 if request is first else 1  # the runs again (each with a log of its own)
        backoffs = usage_waits = 0
        while True:
            result: ActionResult = yield request
            self._spend(result)
            note_ran(sc, state, request, result)
            hit = None if self.shutdown_requested else limit_of(result, request.slash, self._now())
            if hit is None:
                if limits is not None and not self.shutdown_requested:  # it got through
                    from little_loops.fsm.engine.head_rate_limits import note_through

                    note_through(self.cursor.head.rate_limit, self.cursor.current_state)
                return complete_action(sc, state, request, result)
            # Limits are met rarely: their modules load at the first one (start-up cost).
            from little_loops.fsm.engine.head_rate_limits import LADDER_KINDS
            from little_loops.fsm.engine.limit_policy import (
                LimitGiveUp,
                LimitWait,
                plan_after_limit,
            )

            moved = self._fail_over(sc, state, (first, request), result, hit, retries + 1)
            first, hit, own_session = moved.first, moved.hit, moved.session
            if moved.request is not None:  # issue 24: on the next host of the state's list
                retries += 1
                request = moved.request
                continue
            if limits is not None and hit.kind in LADDER_KINDS:
                self._emit(ACTION_COMPLETE, limit=hit.kind, **completed_keys(result))
                waited = yield from self._head_ladder(sc, limits, hit, own_session)
                if isinstance(waited, Ending | HeadRoute):
                    return waited
                retries += 1
                request = self._retry(sc, state, first, waited or None, retry=retries)
                continue
            plan = plan_after_limit(
                hit,
                self.fsm.rate_limit,
                backoffs=backoffs,
                usage_waits=usage_waits,
                now=self._now(),
            )
            if plan is None:
                return complete_action(sc, state, request, result)
            self._emit(ACTION_COMPLETE, limit=hit.kind, **completed_keys(result))
            session = own_session or None
            if isinstance(plan, LimitGiveUp):
                if plan.until is not None:  # resume waits for it, or gives up again
                    wait = wait_record(sc, LimitWait(plan.until, hit), session, first.host)
                    self.cursor.limit_wait = wait.to_dict()
                return Ending(USAGE_LIMITED, plan.message)
            if isinstance(plan, LimitWait):
                usage_waits += 1
                record = wait_record(sc, plan, session, first.host)
                if not (yield from self._wait_for_limit(record)):
                    return Ending("signal")
            else:
                backoffs += 1
                if not (yield from self._back_off(plan)):
                    return Ending("signal")
                session = None
            retries += 1
            request = self._retry(sc, state, first, session, retry=retries)

    def _start_action(
        self,
        sc: StepContext,
        state: StateConfig,
        ctx: InterpolationContext,
        limits: HeadLimits | None,
    ) -> Generator[Request, Any, tuple[RunAction, RunAction] | Step | Ending]:
        """The prepared action and its first request: the action's first run, or, after
        what is left of the wait a stopped run was in (ours or HEAD's ladder), its run
        again; else the step or ending that comes instead."""
        saved = LimitWaitRecord.from_dict(self.cursor.limit_wait)
        name = self.cursor.current_state
        sc.host = None
        if saved is not None and saved.state == name:
            from little_loops.fsm.engine.limit_policy import saved_wait_plan

            give_up = saved_wait_plan(saved.to_dict(), self.fsm.rate_limit, now=self._now())
            if give_up is not None:
                return Ending(USAGE_LIMITED, give_up.message)
            if not (yield from self._wait_for_limit(saved)):
                return Ending("signal")
            session = saved.session_id
            sc.host = saved.host  # the host it waited for (issue 24)
        elif limits is not None and "until" in self.cursor.head.rate_limit.get(name, {}):
            self.cursor.limit_wait = None
            resumed = yield from self._resume_head_wait(sc, limits)
            if resumed is None:
                return Ending("signal")
            session = resumed or None
        else:
            self.cursor.limit_wait = None  # a wait of a state the run has left
            waited = yield from self._pick_host(sc, state)
            if waited is not None:
                return waited
            prepared = prepare_action(sc, state, ctx)
            return (prepared, prepared) if isinstance(prepared, RunAction) else prepared
        first = prepare_action(sc, state, ctx)
        if not isinstance(first, RunAction):
            return first
        return first, self._retry(sc, state, first, session, retry=1)

    def _fail_over(
        self,
        sc: StepContext,
        state: StateConfig,
        requests: tuple[RunAction, RunAction],
        result: ActionResult,
        hit: LimitHit,
        retry: int,
    ) -> _Moved:
        """Issue 24 after a limit: a usage limit on a host of a list moves the state to
        the next free host (`request`: its run there, the same prompt and a note), or, all
        limited, to the earliest to be free (its limit and session to wait for). Otherwise
        the limit is met as before: `first`, `hit` and the run's own session unchanged."""
        from little_loops.fsm.engine.host_failover import Blocked, session_of

        first, request = requests
        # The session to continue after a wait ("" for a claude run that had none).
        own = (result.claude.session_id or "") if result.claude is not None else None
        usage_limit = request.slash and hit.kind == "usage_limit"
        moved = fail_over(sc, state, request, result, hit, self._now()) if usage_limit else None
        if isinstance(moved, Blocked):
            session = session_of(self.cursor.head.hosts, moved.host, sc.cursor.current_state)
            return _Moved(rehosted(first, state, moved.host), moved.hit, session)
        if moved is None:
            return _Moved(first, hit, own)
        self._emit(ACTION_COMPLETE, limit=hit.kind, **completed_keys(result))
        first = rehosted(first, state, moved)
        action = moved_prompt(first, request, result)
        switched = prepare_retry(sc, state, first, action=action, session=None, retry=retry)
        return _Moved(first, hit, None, switched)

    def _pick_host(
        self, sc: StepContext, state: StateConfig
    ) -> Generator[Request, Any, Ending | None]:
        """Issue 24: the host a fresh prompt action runs on (`sc.host`); when no host of its
        list is free (limited, or paced out), first wait for the earliest to be free (or
        end `usage_limited` when that is beyond `rate_limit.max_wait`)."""
        choice = choose_host(sc, state, self._now())
        if choice is None or isinstance(choice, str):  # not `Blocked`: a host, or no choice
            sc.host = choice
            return None
        from little_loops.fsm.engine.limit_policy import LimitGiveUp, LimitWait, plan_after_limit

        plan = plan_after_limit(
            choice.hit, self.fsm.rate_limit, backoffs=0, usage_waits=0, now=self._now()
        )
        if isinstance(plan, LimitGiveUp):
            return Ending(USAGE_LIMITED, plan.message)
        assert isinstance(plan, LimitWait)  # a usage limit always has a wait or gives up
        record = wait_record(sc, LimitWait(max(plan.until, choice.until), choice.hit), None)
        if not (yield from self._wait_for_limit(record)):
            return Ending("signal")
        sc.host = choice.host
        return None

    # -- HEAD's rate-limit ladder (§7.6) ---------------------------------------------------

    def _head_limits(self, state: StateConfig) -> HeadLimits | None:
        """`state`'s HEAD ladder, unless a replayed workflow predates it (`revisions`)."""
        if not isinstance(state, HeadStateConfig):
            return None  # as `head_limits` says, without loading the ladder's module
        from little_loops.fsm.engine.head_rate_limits import head_limits

        limits = head_limits(state)
        if limits is None or not self._revised(HEAD_RATE_LIMITS):
            return None
        return limits

    def _head_entry(self) -> dict[str, Any]:
        """The current state's ladder memory (shared with sub-loops, saved for resume)."""
        return self.cursor.head.rate_limit.setdefault(self.cursor.current_state, {})

    def _head_ladder(
        self, sc: StepContext, limits: HeadLimits, hit: LimitHit, own_session: str | None
    ) -> Generator[Request, Any, str | Ending | HeadRoute]:
        """Wait in place as HEAD's ladder says: the claude session to continue afterwards
        ("" for none), or how the state ends when the budget is spent or a stop came."""
        from little_loops.fsm.engine.head_rate_limit_step import leave_rate_limited, wait_in_place
        from little_loops.fsm.engine.head_rate_limits import HeadExhausted, plan_head_wait

        entry, name = self._head_entry(), self.cursor.current_state
        plan = plan_head_wait(limits, entry, hit, name, self._now())
        if isinstance(plan, HeadExhausted):
            return leave_rate_limited(sc, limits, entry, plan)
        key = f"{plan.tier}_retries"
        entry[key] = int(entry.get(key, 0)) + 1
        session = ""
        if hit.kind == "usage_limit" and own_session is not None:
            session = own_session
            entry["session_id"] = session
        waited = yield from wait_in_place(
            sc, limits, entry, plan, now=self._now, stopped=lambda: self.shutdown_requested
        )
        return session if waited else Ending("signal")

    def _resume_head_wait(
        self, sc: StepContext, limits: HeadLimits
    ) -> Generator[Request, Any, str | None]:
        """A resumed run waits what is left of the ladder's wait it stopped in: the
        session to continue ("" for none), or None when a stop cut it short again."""
        from little_loops.fsm.engine.head_rate_limit_step import wait_in_place
        from little_loops.fsm.engine.head_rate_limits import HeadWait

        entry = self._head_entry()
        until = float(entry["until"])
        session = str(entry.get("session_id") or "")
        wait = HeadWait(max(until - self._now(), 0.0), str(entry.get("tier", "long")))
        waited = yield from wait_in_place(
            sc,
            limits,
            entry,
            wait,
            now=self._now,
            stopped=lambda: self.shutdown_requested,
            until=until,
        )
        return session if waited else None

    def _retry(
        self,
        sc: StepContext,
        state: StateConfig,
        first: RunAction,
        session: str | None,
        *,
        retry: int,
    ) -> RunAction:
        """The request that runs the action again (its `retry`-th time): claude's session
        continued when it may be, the same action otherwise."""
        continued = session is not None and first.slash and self.fsm.rate_limit.continue_session
        action = CONTINUE_PROMPT if continued else first.action
        session = session if continued else None
        return prepare_retry(sc, state, first, action=action, session=session, retry=retry)

    def _wait_for_limit(self, record: LimitWaitRecord) -> Generator[Request, Any, bool]:
        """Wait out a usage limit (`record`, kept in the cursor meanwhile so a stopped or
        crashed run waits only what is left); False when a shutdown cut it short."""
        now = self._now()
        # When the wait began, kept in the record: a run stopped during it and resumed
        # later says how long the limit held it up in all, not only the rest it waited.
        if record.since is None:
            record = dataclasses.replace(record, since=now)
        self.cursor.limit_wait = record.to_dict()
        self._emit(LIMIT_WAIT, **wait_keys(record, now))
        from little_loops.fsm.engine.wait_requests import WaitUntil

        yield WaitUntil(record.until)
        if self.shutdown_requested:
            return False
        self.cursor.limit_wait = None
        waited = max(round(self._now() - (record.since or now)), 0)
        self._emit(LIMIT_WAIT_END, state=record.state, waited_seconds=waited)
        return True

    def _back_off(self, plan: LimitBackoff) -> Generator[Request, Any, bool]:
        """Back off from a rate limit or overload; False when a shutdown cut it short."""
        retries = self.fsm.rate_limit.retries
        self._emit(RATE_LIMIT_BACKOFF, **backoff_keys(self.cursor.current_state, plan, retries))
        from little_loops.fsm.engine.wait_requests import Sleep

        yield Sleep(plan.seconds)
        return not self.shutdown_requested

    def _spend(self, result: ActionResult) -> None:
        claude = result.claude
        if claude is not None:  # a prompt action: counted for its host too (issue 24)
            state = budgeted_state(self.fsm, self.cursor.current_state)
            host = claude.host or DEFAULT_HOST
            self.cursor.spending.add(claude.cost_usd, spent_tokens(result), state=state, host=host)

    def _spend_judgement(self, judgement: Judgement | tuple[str, dict[str, Any]] | None) -> None:
        """What an LLM evaluation cost (its `Judgement.spending`; a driver may submit a
        plain `(verdict, details)`, which cost nothing we know of)."""
        spending = getattr(judgement, "spending", None)
        if spending is not None:
            tokens = spending.get("tokens") or {}
            state = budgeted_state(self.fsm, self.cursor.current_state)
            self.cursor.spending.add(spending.get("cost_usd"), tokens, state=state)

    def _budget_reached(self) -> bool:
        return budget_reached(self.fsm, self.cursor.spending)

    def _budget_message(self) -> str:
        return budget_message(self.fsm, self.cursor.spending)

    def _now(self) -> float:
        return self.clock.wall()

    def _checkpoint(self, reason: str) -> Generator[Request, Any, None]:
        """Commit the work of the state that just ran (`checkpoint: git`)."""
        cursor = self.cursor
        from little_loops.fsm.engine.workspace_requests import Checkpoint

        result = yield Checkpoint(cursor.current_state, cursor.iteration, reason)
        keys = checkpoint_keys(result, reason)
        if keys is not None:
            self._emit(CHECKPOINT, state=cursor.current_state, iteration=cursor.iteration, **keys)

    def _hand_off(self, sc: StepContext, signal: Any) -> _Sub:
        """A handoff: continue, or end the run, handed to the handler when there is one."""
        ending = handle_handoff(sc, signal)
        if ending is None or ending.exhausted or self._handoff_handler is None:
            return ending
        from little_loops.fsm.engine.handoff_requests import HandOff

        handled: HandoffResult = yield HandOff(self.fsm.name, ending.continuation_prompt)
        return Ending(
            "handoff",
            handled.error,
            continuation_prompt=ending.continuation_prompt,
            handoff_result=handled,
        )

    def _end_after_action(self, step: Step) -> Ending | None:
        # Only an action the shutdown cut off ends the run here (it runs again on resume).
        # One that finished on its own is evaluated and routed as usual; the run then
        # stops at the next state (see `_stop_reason`), so its work is kept.
        if self.shutdown_requested and step.action is not None and step.action.cancelled:
            return Ending("signal")
        if step.cut_by_loop_timeout:
            return Ending("timeout")
        if step.signal is not None and step.signal.signal_type == "error":
            message = step.signal.payload or step.signal.raw_match
            stderr = step.action.stderr if step.action else ""
            cursor = self.cursor
            self.guards.note_fatal_error(cursor.current_state, cursor.iteration, message, stderr)
            return Ending("error", message)
        return None

    # -- ending ------------------------------------------------------------------------

    def _finish(self, ending: Ending) -> ExecutionResult:
        result = self._result(ending.terminated_by, ending.error)
        result.handoff = ending.terminated_by == "handoff"
        result.continuation_prompt = ending.continuation_prompt
        result.stop_reason = ending.stop_reason
        result.continuations_exhausted = ending.exhausted
        result.error_detail = ending.error_detail
        self._emit(LOOP_COMPLETE, **completion_keys(result))
        return result

    def _result(self, terminated_by: str, error: str | None) -> ExecutionResult:
        cursor = self.cursor
        spending = cursor.spending
        return ExecutionResult(
            final_state=cursor.current_state,
            iterations=cursor.iteration,
            terminated_by=terminated_by,
            duration_ms=self.elapsed_ms(),
            captured=cursor.captured,
            error=error,
            errors=self.guards.errors.to_list(),
            spending=spending.to_dict() if spending.anything else None,
        )

    # -- helpers ------------------------------------------------------------------------

    def _emit(self, name: str, /, **payload: object) -> None:
        """Stamp and deliver the event `name` (one of `events.EVENT_NAMES`), asking for a
        snapshot first when the event is a save point (the driver writes it once it has
        recorded the event)."""
        ask = self._ask_save
        if ask is not None and (
            name in SAVE_POINTS or (name == HANDOFF_DETECTED and self._spawns())
        ):
            ask(name, payload, self.sub_loop_frame is not None)
        deliver(self._callback, name, payload, iso_time(self.clock.wall()))

    def _spawns(self) -> bool:
        """Whether a handoff spawns a session (saved before the session exists)."""
        handler = self._handoff_handler
        return handler is not None and handler.behavior is HandoffBehavior.SPAWN

    def _snapshot_asker(self, save: SaveCallback) -> _AskSave:
        """Asks `save` for this run's snapshot after an event (see `SaveSnapshot`)."""

        def ask(name: str, payload: Mapping[str, object], nested: bool) -> None:
            cursor = self.cursor
            to = payload.get("to") if name == ROUTE and not nested else None
            current = cursor.current_state if to is None else str(to)
            request = SaveSnapshot(name, cursor, self.guards, current, self.elapsed_ms(), nested)
            try:
                save(request)
            except Exception as exc:  # ends the run as a failing event callback does
                message = f"Event callback failed on '{name}': {type(exc).__name__}: {exc}"
                raise EventCallbackError(message) from exc

        return ask

    def _step_context(self) -> StepContext:
        return StepContext(
            fsm=self.fsm,
            cursor=self.cursor,
            guards=self.guards,
            emit=self._emit,
            elapsed_ms=self.elapsed_ms,
            env=self._env,
            signal_detector=self._signal_detector,
            handoff_handler=self._handoff_handler,
            log_dir=self._log_dir,
        )

    def _loop_timed_out(self) -> bool:
        return bool(self.fsm.timeout) and self.elapsed_ms() > (self.fsm.timeout or 0) * 1000

    def _backoff_seconds(self) -> float | None:
        """How long to wait before the next state (`backoff`); None: do not wait."""
        seconds = self.fsm.backoff or 0
        target = self.fsm.states.get(self.cursor.current_state)
        if seconds <= 0 or self.shutdown_requested or (target is not None and target.terminal):
            return None
        if self.cursor.iteration >= self.fsm.max_iterations:
            return None  # the run ends at the next check; do not make it wait
        if self.fsm.timeout:
            seconds = min(seconds, max(self.fsm.timeout - self.elapsed_ms() / 1000, 0))
        return seconds
