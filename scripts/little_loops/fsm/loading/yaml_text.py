"""The one YAML loader used by the whole program.

PyYAML follows YAML 1.1, where ``on``, ``off``, ``yes``, ``no`` (and ``y``/``n``) are
booleans. In a loop file those words are state and verdict names, so turning them into
``True``/``False`` silently breaks routing. This loader keeps only ``true``/``false``
(any case) as booleans, as YAML 1.2 does, and reports syntax errors as one line with the
line and column. It also refuses an "alias bomb": a few lines whose anchors and aliases
stand for millions of values, which would hang every later step.

`parse_yaml` reads text into values in one call. The loop-file pipeline calls its two
halves, `compose_yaml` (text to nodes, which still know their lines and repeated keys)
and `construct_yaml` (nodes to values), so that the duplicate-key check runs in between.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from little_loops.fsm.errors import LoopSyntaxError

_BOOL_PATTERN = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_BOOL_FIRST_CHARS = list("tTfF")
_UNQUOTED_COLON_PROBLEM = "mapping values are not allowed here"
MAX_ALIAS_EXPANSION = 100_000
"""Values that aliases may add beyond those written out (reusing a block a few times is
far below this; a file that multiplies itself past it is refused)."""


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
    return construct_yaml(compose_yaml(text, source), source)


def compose_yaml(text: str, source: str | Path = "<string>") -> yaml.Node | None:
    """The node tree of one YAML document (None when empty), aliases checked for size."""
    with _as_loop_syntax_errors(str(source)):
        return _compose(text, str(source))


def construct_yaml(node: yaml.Node | None, source: str | Path = "<string>") -> Any:
    """The Python values of a composed document, with only true/false as booleans."""
    if node is None:
        return None
    with _as_loop_syntax_errors(str(source)):
        # Tags were resolved while composing, so a fresh loader builds the same values.
        loader = LoopYamlLoader("")
        try:
            return loader.construct_document(node)
        finally:
            loader.dispose()


@contextmanager
def _as_loop_syntax_errors(source: str) -> Iterator[None]:
    """Every way reading YAML fails becomes one `LoopSyntaxError` line."""
    try:
        yield
    except LoopSyntaxError:
        raise
    except yaml.YAMLError as exc:
        raise _syntax_error(source, exc) from None
    except RecursionError:
        raise LoopSyntaxError(source, "YAML is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer longer than Python's digit limit
        raise LoopSyntaxError(source, f"YAML value cannot be read: {exc}") from None


def _syntax_error(source: str, exc: yaml.YAMLError) -> LoopSyntaxError:
    """The one-line error; the classic unquoted `: ` inside a value gets what to do."""
    error = LoopSyntaxError.from_yaml_error(source, exc)
    if getattr(exc, "problem", None) == _UNQUOTED_COLON_PROBLEM:
        hint = " (quote a value that contains ': ', e.g. action: \"echo a: b\")"
        error = LoopSyntaxError(source, error.message + hint)
    return error


def _compose(text: str, source: str) -> yaml.Node | None:
    """`yaml.compose` with the alias check before anything is constructed."""
    loader = LoopYamlLoader(text)  # derives from SafeLoader
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    if node is None:
        return None
    counted: dict[int, int] = {}
    added = _expanded_size(node, counted) - len(counted)
    if added > MAX_ALIAS_EXPANSION:
        raise LoopSyntaxError(
            source,
            f"YAML aliases expand to {added:,} more values than the file spells out "
            f"(at most {MAX_ALIAS_EXPANSION:,})",
        )
    return node


def _expanded_size(node: yaml.Node, counted: dict[int, int]) -> int:
    """How many values `node` stands for with every alias written out (each node once)."""
    key = id(node)
    if key in counted:
        return counted[key]
    counted[key] = 1  # a node inside itself (`&a [*a]`) counts once
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(item, counted) for item in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, counted) + _expanded_size(v, counted) for k, v in node.value)
    counted[key] = size
    return size


def dump_yaml(data: Any) -> str:
    """Dump data as block-style YAML, keeping key order."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
