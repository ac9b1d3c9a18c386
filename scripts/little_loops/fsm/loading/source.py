"""The first stage of loading: from a path to the text of a loop file, and its top level.

The path must be an existing regular file (not a directory, FIFO or device, which would
block) of at most 5 MiB, UTF-8 text (a BOM is allowed); each failure is a `LoopError`
naming the file. Once the YAML is read (`yaml_text`), `require_mapping` refuses a top
level that is not a mapping. `pipeline.load_loop_mapping` runs these steps in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopFileError, LoopNotFoundError

MAX_LOOP_FILE_BYTES = 5 * 1024 * 1024


def read_loop_text(path: Path) -> str:
    """The text of the loop file at `path` (checked to be a small regular UTF-8 file)."""
    source = str(path)
    if not path.exists():
        raise LoopNotFoundError(f"FSM file not found: {path}")
    if path.is_dir():
        raise LoopFileError(source, "is a directory, not a loop file")
    if not path.is_file():
        # A FIFO or device would block or never end.
        raise LoopFileError(source, "is not a regular file")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_LOOP_FILE_BYTES + 1)
    except FileNotFoundError:
        raise LoopNotFoundError(f"FSM file not found: {path}") from None
    except OSError as exc:
        raise LoopFileError(source, f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > MAX_LOOP_FILE_BYTES:
        raise LoopFileError(source, "is too large for a loop file (more than 5 MiB)")
    return _decode_utf8(data, source)


def _decode_utf8(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start]
        message = f"is not UTF-8 text (invalid byte 0x{byte:02x} on line {line})"
        raise LoopFileError(source, message) from None


class LoopNotMappingError(LoopFileError):
    """A file whose top level is not a mapping (empty, comments only, a list, a scalar).

    `str()` keeps the reference text (`FSM file must contain a YAML mapping, got <type>`)
    for code that matches it; `user_lines()` says in plain words what is wrong.
    """

    def __init__(self, source: str, data: Any) -> None:
        super().__init__(source, f"FSM file must contain a YAML mapping, got {type(data)}")
        self.problem = _not_a_mapping_problem(data)

    def user_lines(self) -> list[str]:
        return [f"{self.source}: {self.problem}"]


_MAPPING_SHAPE = "a loop file is a mapping (name:, initial:, states:)"


def _not_a_mapping_problem(data: Any) -> str:
    if data is None:  # no document at all, or only comments
        return "file is empty"
    if isinstance(data, list):
        kind = "a list"
    elif isinstance(data, str):
        kind = "text"
    elif isinstance(data, bool):
        kind = "true/false"
    elif isinstance(data, int | float):
        kind = "a number"
    else:
        kind = f"a {type(data).__name__}"
    return f"top level is {kind}; {_MAPPING_SHAPE}"


def require_mapping(data: Any, source: str) -> dict[str, Any]:
    """The parsed top level of a loop file, which must be a mapping."""
    if not isinstance(data, dict):
        raise LoopNotMappingError(source, data)
    return data
