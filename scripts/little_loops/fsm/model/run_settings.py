"""A run's own settings, given on the command line: one frozen value, built once.

`ll-loop run`/`resume` may change a loop's limits and choices for one run (`-n`,
`--max-steps`, `--max-continuations`, `--no-llm`, `--llm-model`, `--stall-threshold`,
`--max-cost`, `--max-tokens`, `--notify`), never the file. The CLI builds a `RunSettings`
once and hands it to what runs the loop (the executor, or the Temporal backend); wherever a
loop value is needed, `applied_to` gives a COPY of the loaded loop with them, so the loaded
loop is never changed. `resumed` is the one rule for what a resume keeps of the saved run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from little_loops.fsm.model.budgets import with_budgets
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.run_choices import NO_CHOICES, RunChoices
from little_loops.fsm.schema import FSMLoop

__all__ = ["NO_SETTINGS", "RunSettings"]

_Loop = TypeVar("_Loop", bound=FSMLoop)


@dataclass(frozen=True)
class RunSettings:
    """What this run changes of its loop (None: the loop's own).

    `max_iterations`: `-n` (a HEAD file's `max_iterations`: the step cap, or the pass cap
    when a step cap is set); `max_steps`: `--max-steps` (a legacy loop's step cap is its
    `max_iterations`); `max_continuations`: handoffs the run may be continued after;
    `choices`: `--no-llm`/`--llm-model`, for the loop and every sub-loop; `stall_threshold`
    (0: no stall guard); `max_cost_usd`: the budget in dollars; `notify`: the command told
    when the run ends or waits ("": none); `max_tokens`: the budget in input + output
    tokens. The budgets and `notify` are saved with the run, so a resume that does not give
    them anew keeps them (`resumed`).
    """

    max_iterations: int | None = None
    max_steps: int | None = None
    max_continuations: int | None = None
    choices: RunChoices = NO_CHOICES
    stall_threshold: int | None = None
    max_cost_usd: float | None = None
    notify: str | None = None
    max_tokens: int | None = None

    def applied_to(self, loop: _Loop) -> _Loop:
        """A copy of `loop` as this run uses it (`loop` itself is left as it is)."""
        changes = self._caps(loop)
        if self.max_continuations is not None:
            changes["max_continuations"] = self.max_continuations
        changes["llm"] = self.choices.applied_to(loop.llm)
        if self.stall_threshold is not None:
            changes["stall_threshold"] = self.stall_threshold
        if self.max_cost_usd is not None:
            changes["max_cost_usd"] = self.max_cost_usd
        if self.notify is not None:
            changes["notify"] = self.notify or None
        applied = dataclasses.replace(loop, **changes)
        if self.max_tokens is None:
            return applied
        return cast(_Loop, with_budgets(applied, max_tokens=self.max_tokens))

    def _caps(self, loop: FSMLoop) -> dict[str, Any]:
        if isinstance(loop, HeadLoop):
            return self._head_caps(loop)
        steps = self.max_iterations if self.max_iterations is not None else self.max_steps
        return {"max_iterations": steps} if steps is not None else {}

    def _head_caps(self, loop: HeadLoop) -> dict[str, Any]:
        """`--max-steps N` sets HEAD's step cap; `-n N` is HEAD's `max_iterations`: the step
        cap when no `max_steps` is set (file or flag), else the cap on passes (§2.5, §7.4)."""
        caps: dict[str, Any] = {}
        if self.max_steps is not None:
            caps["max_iterations"] = self.max_steps  # where a HEAD loop keeps its step cap
        if self.max_iterations is None:
            return caps
        caps["max_iterations_written"] = True
        if self.max_steps is not None or loop.max_steps_written:
            caps["max_passes"] = self.max_iterations
        else:
            caps["max_iterations"] = self.max_iterations
        return caps

    def resumed(
        self, *, max_cost_usd: float | None, notify: str | None, max_tokens: int | None = None
    ) -> RunSettings:
        """The settings of a resume of a run saved with `max_cost_usd`, `notify` and
        `max_tokens`: the run's `--max-cost`, `--notify` and `--max-tokens` hold again
        unless given anew."""
        return dataclasses.replace(
            self,
            max_cost_usd=self.max_cost_usd if self.max_cost_usd is not None else max_cost_usd,
            notify=self.notify if self.notify is not None else notify,
            max_tokens=self.max_tokens if self.max_tokens is not None else max_tokens,
        )


NO_SETTINGS = RunSettings()
"""A run that changes nothing of its loop."""
