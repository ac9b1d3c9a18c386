"""How a HEAD-dialect loop reads the text between `${` and `}` (spec/ll-head-dialect.md §2.5).

A HEAD variable may carry one modifier: `${ns.path:default=TEXT}` (missing -> TEXT),
`${ns.path?}` (missing -> empty) or `${ns.path:shell}` (the value shell-quoted). The three
exclude each other: a variable combining them is an error, never a guess. `${messages}` is
the one variable without a dot. Legacy loops never come here (`interpolation.py` reads
their variables as before).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

__all__ = ["MESSAGES", "HeadVariable", "HeadVariableError", "parse_head_variable", "render"]

MESSAGES = "messages"
_DEFAULT = "default="
_SHELL = "shell"


class HeadVariableError(ValueError):
    """The text of a variable is not a HEAD variable (bad or combined modifiers)."""


@dataclass(frozen=True)
class HeadVariable:
    """One `${...}` of a HEAD loop: where its value lives and what to do when it is missing."""

    namespace: str
    path: str
    optional: bool = False
    default: str | None = None
    shell: bool = False

    @property
    def plain(self) -> bool:
        """No modifier: the value is used as it is (also raw, in `resolve_template`)."""
        return not (self.optional or self.shell or self.default is not None)

    @property
    def fallback(self) -> str | None:
        """What a missing value renders as (None: a missing value is an error)."""
        if self.default is not None:
            return self.default
        return "" if self.optional else None


def parse_head_variable(inside: str) -> HeadVariable:
    """The variable written `${inside}`; `HeadVariableError` when it is malformed."""
    where, colon, modifier = inside.partition(":")
    optional = where.endswith("?")
    where = where.removesuffix("?")
    default: str | None = None
    shell = False
    if colon:
        if optional:
            raise _combined(inside)
        if modifier == _SHELL:
            shell = True
        elif modifier.startswith(_DEFAULT):
            default = modifier[len(_DEFAULT) :]
            if default.endswith(":" + _SHELL):
                raise _combined(inside)
        elif modifier.startswith(_SHELL + ":"):
            raise _combined(inside)
        else:
            raise HeadVariableError(
                f"Invalid variable: ${{{inside}}} (unknown modifier ':{modifier}'; "
                "expected :default=TEXT, :shell or ?)"
            )
    namespace, path = _split(where, inside)
    return HeadVariable(namespace, path, optional=optional, default=default, shell=shell)


def _split(where: str, inside: str) -> tuple[str, str]:
    if where == MESSAGES:
        return MESSAGES, ""
    namespace, dot, path = where.partition(".")
    if not dot or not namespace or not path:
        raise HeadVariableError(f"Invalid variable: ${{{inside}}} (expected namespace.path)")
    return namespace, path


def _combined(inside: str) -> HeadVariableError:
    return HeadVariableError(
        f"Invalid variable: ${{{inside}}} (:default=, ? and :shell cannot be combined)"
    )


def render(variable: HeadVariable, value: Any) -> str:
    """The text a found value stands for: null is empty; `:shell` quotes it."""
    text = "" if value is None else str(value)
    return shlex.quote(text) if variable.shell else text


def messages_property(messages: list[str], path: str) -> str | None:
    """`${messages}`, `${messages.last(N)}`, `${messages.summary}`; None: unknown path."""
    if path == "":
        return "\n".join(messages)
    if path == "summary":
        return ""  # HEAD never fills it
    if path.startswith("last(") and path.endswith(")"):
        count = path[len("last(") : -1].strip()
        if count.isdigit():
            wanted = int(count)
            return "\n".join(messages[-wanted:]) if wanted else ""
    return None
