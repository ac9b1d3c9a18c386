"""`${...}` in a HEAD-dialect loop that can never resolve, found when the file is loaded.

A HEAD variable may carry `:default=TEXT`, `?` or `:shell` (one of them), and HEAD adds the
namespaces `param` and `messages` (spec/ll-head-dialect.md §2.5). Context keys are not
checked here: HEAD injects keys (`run_dir`, `max_steps`, ...), and the positional input or
`--context` may bring the others, so `ll-loop run` checks them once it knows the run's
context (`cli.loop_inputs`), naming the `--context k=VALUE` that would fix each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from little_loops.fsm.interpolation import ESCAPED_PATTERN, VARIABLE_PATTERN
from little_loops.fsm.model.findings import ValidationError
from little_loops.fsm.model.head_templates import HeadVariableError, parse_head_variable

HEAD_NAMESPACES = (
    "context",
    "captured",
    "prev",
    "result",
    "state",
    "loop",
    "env",
    "handoff",
    "param",
    "messages",
)


def head_interpolation_errors(templates: Iterable[tuple[str, str]]) -> list[ValidationError]:
    """Errors for the (key path, text) `templates` of a HEAD loop, in order."""
    return [
        ValidationError(problem, path)
        for path, template in templates
        for problem in _template_problems(template)
    ]


def _template_problems(template: str) -> Iterator[str]:
    unescaped = ESCAPED_PATTERN.sub("", template)
    for match in VARIABLE_PATTERN.finditer(unescaped):
        try:
            variable = parse_head_variable(match.group(1))
        except HeadVariableError as exc:
            yield str(exc)
            continue
        if variable.namespace not in HEAD_NAMESPACES:
            known = ", ".join(HEAD_NAMESPACES)
            yield (
                f"${{{match.group(1)}}}: unknown namespace '{variable.namespace}' (known: {known})"
            )
