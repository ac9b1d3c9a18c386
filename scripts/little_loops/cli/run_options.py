"""What `ll-loop run`/`resume` were asked for: the run's settings and how to show it.

`RunOptions` is the command line of one run, shared by both commands and both engines;
`settings` is the part that changes the loop (`model/run_settings.py`), built once and
handed to what runs it. Light to import: nothing of the engine until `settings` is asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from little_loops.fsm.model.run_settings import RunSettings

__all__ = ["RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """Per-run overrides and display choices shared by `run` and `resume`."""

    max_iterations: int | None = None
    max_continuations: int | None = None
    no_llm: bool = False
    llm_model: str | None = None
    quiet: bool = False
    verbose: bool = False
    queue: bool = False
    stall_threshold: int | None = None
    max_cost: float | None = None  # `--max-cost`: the run's budget in dollars
    max_tokens: int | None = None  # `--max-tokens`: the run's budget in tokens
    # `run --context KEY=VALUE`, in the order given (a later KEY wins).
    context: tuple[tuple[str, str], ...] = ()
    # `--notify CMD`: replaces the loop's `notify` for this run ("": none).
    notify: str | None = None
    # HEAD files: `--max-steps N` (the step cap) and `run <loop> INPUT` (positional input).
    max_steps: int | None = None
    input: str | None = None

    @property
    def settings(self) -> RunSettings:
        """The run's settings: what of the loop this run changes (never the file)."""
        from little_loops.fsm.model.run_choices import RunChoices
        from little_loops.fsm.model.run_settings import RunSettings

        return RunSettings(
            max_iterations=self.max_iterations,
            max_steps=self.max_steps,
            max_continuations=self.max_continuations,
            choices=RunChoices(no_llm=self.no_llm, llm_model=self.llm_model),
            stall_threshold=self.stall_threshold,
            max_cost_usd=self.max_cost,
            notify=self.notify,
            max_tokens=self.max_tokens,
        )
