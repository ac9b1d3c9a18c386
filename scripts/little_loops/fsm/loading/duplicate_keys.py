"""Keys written twice in one YAML mapping, found on the composed node tree.

PyYAML builds a dict from a mapping node and lets the last of two equal keys win without
a word, so a state defined twice silently loses its first definition (and the loop then
fails with a misleading graph error such as "No terminal state defined"). The reference
behaved that way by accident of its YAML library; a key written twice is always a
mistake, so each one is an error naming the key path and the lines it is on.

Merge keys (`<<: *base`) are skipped: overriding a merged key is what they are for.
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from little_loops.fsm.loading.value_checks import join_path
from little_loops.fsm.model.findings import ValidationError

_MERGE_TAG = "tag:yaml.org,2002:merge"
_BOOL_TAG = "tag:yaml.org,2002:bool"


def duplicate_key_errors(root: yaml.Node) -> list[ValidationError]:
    """One error per key that appears more than once in the same mapping, in file order."""
    return [_finding(path, lines) for path, lines in _repeated_keys(root)]


def _finding(path: str, lines: list[int]) -> ValidationError:
    if len(lines) == 2:
        return ValidationError(f"defined twice (lines {lines[0]} and {lines[1]})", path)
    listed = ", ".join(str(line) for line in lines[:-1])
    return ValidationError(f"defined {len(lines)} times (lines {listed} and {lines[-1]})", path)


def _repeated_keys(root: yaml.Node) -> Iterator[tuple[str, list[int]]]:
    """(key path, line numbers) of each repeated key; a node shared by aliases is seen once."""
    seen: set[int] = set()
    pending: list[tuple[yaml.Node, str | None]] = [(root, None)]
    while pending:
        node, path = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        children: list[tuple[yaml.Node, str | None]] = []
        if isinstance(node, yaml.SequenceNode):
            children = [(item, join_path(path, index)) for index, item in enumerate(node.value)]
        elif isinstance(node, yaml.MappingNode):
            yield from _repeats_in_mapping(node, path)
            children = [(value, join_path(path, _key_text(key))) for key, value in node.value]
        pending.extend(reversed(children))  # depth first, in file order


def _repeats_in_mapping(
    node: yaml.MappingNode, path: str | None
) -> Iterator[tuple[str, list[int]]]:
    lines_by_key: dict[tuple[str, str], list[int]] = {}
    names: dict[tuple[str, str], str] = {}
    for key, _value in node.value:
        identity = _key_identity(key)
        if identity is None:
            continue
        lines_by_key.setdefault(identity, []).append(key.start_mark.line + 1)
        names.setdefault(identity, _key_text(key))
    for identity, lines in lines_by_key.items():
        if len(lines) > 1:
            yield join_path(path, names[identity]), lines


def _key_identity(key: yaml.Node) -> tuple[str, str] | None:
    """What makes two scalar keys equal once constructed (None: not compared)."""
    if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE_TAG:
        return None
    text = key.value.lower() if key.tag == _BOOL_TAG else key.value
    return key.tag, text


def _key_text(key: yaml.Node) -> str:
    return key.value if isinstance(key, yaml.ScalarNode) else "?"
