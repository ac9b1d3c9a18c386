"""`run --context KEY=VALUE` with a KEY the loop never uses: said on stderr (issue 23
item 5). A typo (`greting` for `greeting`) used to be saved and silently do nothing.

A key counts as used when the loop (its `from:` parents merged) defines it in `context:`,
declares it as a HEAD parameter or input, or reads it as `context.<key>` anywhere. Only a
warning: a `loop:` state with `context_passthrough` may hand it to a child we do not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopError
from little_loops.fsm.loading.pipeline import read_resolved_mapping

__all__ = ["unused_context_warnings"]

# `${context.key}`, `${context.key.sub}`: the key a loop reads.
_READ_KEY = re.compile(r"context\.([A-Za-z0-9_-]+)")


def unused_context_warnings(path: Path, loop_name: str, given: Mapping[str, str]) -> list[str]:
    """One line per `--context` key that the loop at `path` never uses."""
    if not given:
        return []
    try:
        data = read_resolved_mapping(path)
    except LoopError:
        return []  # the loader has said what is wrong
    known = _declared_keys(data) | set(_READ_KEY.findall(json.dumps(data, default=str)))
    unused = [key for key in given if key not in known]
    shown = ", ".join(sorted(known)) or "none"
    return [
        f"warning: --context {key}: {loop_name} never uses this key (its context keys: {shown})"
        for key in unused
    ]


def _declared_keys(data: dict[str, Any]) -> set[str]:
    keys: set[str] = set()
    for part in ("context", "parameters"):
        value = data.get(part)
        if isinstance(value, dict):
            keys.update(str(key) for key in value)
    if isinstance(data.get("input_key"), str):
        keys.add(data["input_key"])
    return keys
