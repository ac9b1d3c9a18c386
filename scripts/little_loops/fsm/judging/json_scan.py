"""Finding JSON objects in free text (an agent's output), in time that grows linearly.

Trying `json` at every `{` of a long output costs quadratic time (each failed attempt
computes a line number from the start of the text), so a hostile or just unlucky output
could stall a loop for minutes. Instead one pass pairs braces (ignoring braces inside
JSON strings), and only the balanced `{...}` spans are decoded: the outermost ones first,
and the ones nested in an outer span that is not JSON (prose such as `{note: {...}}`)
after it. An unmatched `{` in prose does not hide a later object: what it encloses is
treated as top level. Decoding stops after `DECODE_BUDGET_FACTOR` times the text length,
keeping the objects found nearest the end.

A double quote opens a string only inside a brace span, and a string never crosses a
line end (JSON strings cannot contain raw newlines), so an apostrophe-free quote in
prose can mislead the pairing for one line at most.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DECODE_BUDGET_FACTOR", "json_objects"]

DECODE_BUDGET_FACTOR = 4
# Escapes first so that `\"` and `\\` are consumed whole inside strings.
_TOKENS = re.compile(r'\\.|[{}"\n]', re.DOTALL)


@dataclass
class _Span:
    """A balanced `{...}`: offsets of both braces and the spans directly inside it."""

    start: int
    end: int
    children: list[_Span] = field(default_factory=list)


def json_objects(text: str) -> list[dict[str, Any]]:
    """The top-level JSON objects in `text`, in the order they appear."""
    budget = DECODE_BUDGET_FACTOR * len(text) + 1024
    pending = _balanced_spans(text)  # searched from the end: the last object matters most
    found: list[dict[str, Any]] = []
    while pending and budget > 0:
        span = pending.pop()
        budget -= span.end - span.start + 1
        document = _decode(text[span.start : span.end + 1])
        if document is None:
            pending.extend(span.children)
        else:
            found.append(document)
    found.reverse()
    return found


def _decode(candidate: str) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = json.loads(candidate)  # it starts with `{`: an object
    except (ValueError, RecursionError):
        return None
    return document


def _balanced_spans(text: str) -> list[_Span]:
    """The outermost balanced spans in order (children of unmatched `{` count as outer)."""
    top: list[_Span] = []
    open_spans: list[_Span] = []
    in_string = False
    for match in _TOKENS.finditer(text):
        token = match.group()
        if in_string:
            in_string = token not in ('"', "\n")
        elif token == '"':
            in_string = bool(open_spans)
        elif token == "{":
            open_spans.append(_Span(match.start(), -1))
        elif token == "}" and open_spans:
            span = open_spans.pop()
            span.end = match.start()
            (open_spans[-1].children if open_spans else top).append(span)
    # Braces never closed were prose: what they enclose is top level, in text order.
    for unmatched in open_spans:
        top.extend(unmatched.children)
    return top
