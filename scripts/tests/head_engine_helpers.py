"""Running HEAD-dialect loops in tests: built with `HeadLoop.from_dict`, run by the real
executor with real shell actions, their events recorded (shared by the test_head_* files
of the routing, caps, retries and throttle areas)."""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.model.head_loop import HeadLoop

DONE: dict[str, Any] = {"terminal": True}

# A HEAD file's evaluators say `yes`/`no` where legacy ones say `success`/`failure` (branch
# h3-evaluators); routing treats each pair as one verdict (§3.1). The recorded events
# give HEAD's spelling either way, so the tests read the same before and after the
# evaluators learn the HEAD names.
HEAD_SPELLING = {"success": "yes", "failure": "no"}


class Recorder:
    """Event callback that keeps every event (without its time stamp)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        kept = {k: v for k, v in event.items() if k != "ts"}
        if isinstance(kept.get("verdict"), str):
            kept["verdict"] = HEAD_SPELLING.get(kept["verdict"], kept["verdict"])
        self.events.append(kept)

    def names(self) -> list[str]:
        return [event["event"] for event in self.events]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]

    def routes(self) -> list[tuple[str, str]]:
        return [(event["from"], event["to"]) for event in self.of("route")]


def head_loop(states: dict[str, Any], **top: Any) -> HeadLoop:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    return HeadLoop.from_dict(data)


def run_head(states: dict[str, Any], **top: Any) -> tuple[ExecutionResult, Recorder]:
    recorder = Recorder()
    result = FSMExecutor(head_loop(states, **top), event_callback=recorder).run()
    return result, recorder
