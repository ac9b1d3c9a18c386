"""Which engine a command goes to: `--engine`, else `LL_ENGINE`, else `local`.

Light to import (the dispatch asks it before anything of an engine is loaded); a choice of
`temporal` without the `temporal` extra installed is a one-line error, not a traceback.
"""

from __future__ import annotations

import os

from little_loops.fsm.errors import LoopError

__all__ = ["ENGINES", "ENGINE_ENV", "engine_choice", "require_temporal"]

ENGINE_ENV = "LL_ENGINE"
ENGINES = ("local", "temporal")


def engine_choice(flag: str | None) -> str:
    """`--engine`, else `LL_ENGINE`, else `local`; an unknown `LL_ENGINE` is an error."""
    engine = flag or os.environ.get(ENGINE_ENV) or "local"
    if engine not in ENGINES:
        raise LoopError(f"{ENGINE_ENV}={engine}: unknown engine (choose from local, temporal)")
    if engine == "temporal":
        require_temporal()
    return engine


def require_temporal() -> None:
    """A one-line error, not a traceback, when the `temporal` extra is not installed."""
    import importlib.util  # only when the Temporal engine is asked for

    if importlib.util.find_spec("temporalio") is None:
        raise LoopError(
            "the Temporal engine needs the temporal extra: "
            'pip install -e ".[temporal]" (in this checkout)'
        )
