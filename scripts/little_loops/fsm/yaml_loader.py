"""The one YAML loader used by the whole program.

PyYAML follows YAML 1.1, where ``on``, ``off``, ``yes``, ``no`` (and ``y``/``n``) are
booleans. In a loop file those words are state and verdict names, so turning them into
``True``/``False`` silently breaks routing. This loader keeps only ``true``/``false``
(any case) as booleans, as YAML 1.2 does, and reports syntax errors as one line with the
line and column.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from little_loops.fsm.errors import LoopSyntaxError

_BOOL_PATTERN = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_BOOL_FIRST_CHARS = list("tTfF")


class LoopYamlLoader(yaml.SafeLoader):
    """SafeLoader whose booleans are only true/false."""


def _drop_yaml11_bool_resolver() -> None:
    resolvers = {
        first: [(tag, regexp) for tag, regexp in entries if tag != "tag:yaml.org,2002:bool"]
        for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    LoopYamlLoader.yaml_implicit_resolvers = resolvers
    LoopYamlLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL_PATTERN, _BOOL_FIRST_CHARS)


_drop_yaml11_bool_resolver()


def parse_yaml(text: str, source: str | Path = "<string>") -> Any:
    """Parse YAML text; a syntax error becomes a one-line `LoopSyntaxError`."""
    try:
        return yaml.load(text, Loader=LoopYamlLoader)  # LoopYamlLoader derives from SafeLoader
    except yaml.YAMLError as exc:
        raise LoopSyntaxError.from_yaml_error(str(source), exc) from None
    except RecursionError:
        raise LoopSyntaxError(str(source), "YAML is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer longer than Python's digit limit
        raise LoopSyntaxError(str(source), f"YAML value cannot be read: {exc}") from None


def dump_yaml(data: Any) -> str:
    """Dump data as block-style YAML, keeping key order."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
