"""Which evaluators need the host: the run core judges the others itself.

An evaluator that only reads the action's output (in memory) is pure and runs inside the
run core. One that calls the LLM, reads a file (`return_metadata` with a `path`, HEAD's
`score_stall`/`open_question_stall` history), the work tree (HEAD's `diff_stall`) or a
truncated output's whole log needs I/O, so the core asks its driver to run it.
"""

from __future__ import annotations

from little_loops.fsm.schema import EvaluateConfig

__all__ = ["needs_host_io"]

# Evaluators that search or parse the whole output: a truncated one is read from its log.
_READ_THE_LOG = frozenset({"output_contains", "output_json"})
# HEAD's stall evaluators that read the host (a legacy file never has them).
_READ_THE_HOST = frozenset({"diff_stall", "score_stall", "open_question_stall"})


def needs_host_io(
    config: EvaluateConfig | None,
    output_was_truncated: bool,
    *,
    llm_by_default: bool = False,
) -> bool:
    """Whether judging with `config` needs host I/O.

    `config` None is the default judgement: the LLM check when `llm_by_default` (a slash
    command with the LLM enabled), else the exit code.
    """
    if config is None:
        return llm_by_default
    kind = config.type
    if kind == "llm_structured" or kind in _READ_THE_HOST:
        return True
    if kind == "return_metadata":
        return bool(config.path)
    if kind in _READ_THE_LOG:
        return output_was_truncated and config.source is None
    return False
