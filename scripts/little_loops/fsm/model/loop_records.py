"""A loop saved as a mapping (`FSMLoop.to_dict()`), built again as the record of its dialect.

A HEAD loop's mapping read back by `FSMLoop.from_dict` would lose what only HEAD has, so
whoever carries a loop as data (the Temporal workflow and its activities) carries its
dialect beside it and builds it here.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.head_parts import DIALECT_HEAD
from little_loops.fsm.schema import FSMLoop

__all__ = ["loop_from_dict"]


def loop_from_dict(data: dict[str, Any], dialect: str) -> FSMLoop:
    """`data` as a `HeadLoop` for the HEAD dialect, else as a legacy `FSMLoop`."""
    return HeadLoop.from_dict(data) if dialect == DIALECT_HEAD else FSMLoop.from_dict(data)
