"""The reference path of the paradigm compilers: a face over `loading.paradigms`.

Code written for the reference imports `compile_paradigm` and the four `compile_*`
functions from here (and `_passthrough_fsm`, the reference's name for the `fsm`
pass-through). The implementation lives in `little_loops.fsm.loading.paradigms`; no
module of the package imports this face.
"""

from __future__ import annotations

from little_loops.fsm.loading.paradigms import (
    SLUG_MAX_LENGTH,
    compile_convergence,
    compile_goal,
    compile_imperative,
    compile_invariants,
    compile_paradigm,
)
from little_loops.fsm.loading.paradigms import passthrough_fsm as _passthrough_fsm

__all__ = [
    "SLUG_MAX_LENGTH",
    "_passthrough_fsm",
    "compile_convergence",
    "compile_goal",
    "compile_imperative",
    "compile_invariants",
    "compile_paradigm",
]
