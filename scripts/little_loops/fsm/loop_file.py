"""Reading a loop file into a mapping: the checks between "a path" and "parsed YAML".

The path must be an existing regular file (not a directory, FIFO or device, which would
block) of at most 5 MiB, UTF-8 text (a BOM is allowed), and YAML (through
`yaml_loader.parse_yaml`, the one loader) whose top level is a mapping. Each failure is
a `LoopError` naming the file. Re-exported by `validation`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopFileError, LoopNotFoundError
from little_loops.fsm.yaml_loader import parse_yaml

MAX_LOOP_FILE_BYTES = 5 * 1024 * 1024


def _read_loop_text(path: Path) -> str:
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


def load_loop_mapping(path: Path | str) -> dict[str, Any]:
    """Read and parse a loop file whose top level must be a mapping."""
    path = Path(path)
    data = parse_yaml(_read_loop_text(path), str(path))
    if not isinstance(data, dict):
        message = f"FSM file must contain a YAML mapping, got {type(data)}"
        raise LoopFileError(str(path), message)
    return data
