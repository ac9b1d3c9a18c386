"""The run's own LLM choices (`run --no-llm`, `--llm-model`): one record for the whole chain.

The command line applies them to the loop it loaded; a sub-loop is loaded by the run
itself, so the core carries this record and applies it to each child's `llm` as data
(spec/ll-head-dialect.md §4.6: the child inherits the run's `--llm-model`/`--no-llm`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeVar

from little_loops.fsm.schema import LLMConfig

__all__ = ["NO_CHOICES", "RunChoices"]

_Llm = TypeVar("_Llm", bound=LLMConfig)


@dataclass(frozen=True)
class RunChoices:
    """`no_llm`: no LLM evaluation anywhere in the run; `llm_model`: the model of every
    LLM evaluation of the run (None: each loop's own)."""

    no_llm: bool = False
    llm_model: str | None = None

    def applied_to(self, llm: _Llm) -> _Llm:
        """`llm` as this run uses it (a copy; a HEAD `llm` keeps its `effort`)."""
        if self.llm_model is not None:
            llm = dataclasses.replace(llm, model=self.llm_model)
        if self.no_llm:
            llm = dataclasses.replace(llm, enabled=False)
        return llm


NO_CHOICES = RunChoices()
"""A run that chose nothing: every loop keeps its own `llm`."""
