"""The one family of exceptions for user mistakes.

Every exception here means "the user gave us something wrong" (a bad loop file, a missing
loop, a damaged state file). The CLI turns them into a one-line message and a documented
exit code; anything else is a bug and gets a traceback file.

The classes also inherit the built-in exception the reference raised in the same place
(`ValueError`, `FileNotFoundError`, `yaml.YAMLError`) so code written against the
reference keeps catching them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from little_loops.fsm.model.findings import ValidationError


class LoopError(Exception):
    """Base class of every user-facing error."""

    def user_lines(self) -> list[str]:
        """Lines to show the user, each complete on its own."""
        return [str(self)]


class LoopNotFoundError(LoopError, FileNotFoundError):
    """A loop name or path that resolves to no file."""

    def __init__(
        self, message: str, *, searched: list[str] | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message)
        self.searched = searched or []
        self.hint = hint  # e.g. where the loop is when ll-loop runs in a subfolder

    def __str__(self) -> str:
        return str(self.args[0])

    def user_lines(self) -> list[str]:
        lines = [str(self)]
        if self.searched:
            lines.append("  looked in: " + ", ".join(self.searched))
        if self.hint:
            lines.append(f"  {self.hint}")
        return lines


class LoopFileError(LoopError, ValueError):
    """A loop file that cannot be used: each problem has a key path."""

    def __init__(self, source: str, message: str, *, key_path: str | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.key_path = key_path
        self.message = message

    def __str__(self) -> str:
        return self.message

    def user_lines(self) -> list[str]:
        where = f"{self.source}: {self.key_path}" if self.key_path else self.source
        return [f"{where}: {self.message}"]


class LoopSyntaxError(LoopFileError, yaml.YAMLError):
    """YAML that does not parse, reported with line and column."""

    @classmethod
    def from_yaml_error(cls, source: str, exc: yaml.YAMLError) -> LoopSyntaxError:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        opened = _unclosed_quote_mark(exc)
        if opened is not None:  # the end of the file is not where the mistake is
            where = f"line {opened.line + 1}, column {opened.column + 1}"
            return cls(
                source,
                f"YAML syntax error at {where}: a quoted string opened here is "
                f"never closed ({problem})",
            )
        if mark is not None:
            where = f"line {mark.line + 1}, column {mark.column + 1}"
            return cls(source, f"YAML syntax error at {where}: {problem}")
        return cls(source, f"YAML syntax error: {problem}")


def _unclosed_quote_mark(exc: yaml.YAMLError) -> Any:
    """Where a quoted string that never closes opens (PyYAML reports the end of the file,
    or the next line's indentation, and says where the scalar started in `context_mark`)."""
    context = getattr(exc, "context", None) or ""
    if not context.startswith("while scanning a quoted scalar"):
        return None
    return getattr(exc, "context_mark", None)


class LoopValidationError(LoopFileError):
    """A loop file that parsed but breaks the schema or graph rules.

    `str()` keeps the reference text (`FSM validation failed:` plus one indented
    `[ERROR] path: message` line per error); `user_lines()` gives `file: path: message`.
    """

    def __init__(self, source: str, errors: list[ValidationError]) -> None:
        body = "\n".join(f"  {err}" for err in errors)
        super().__init__(source, f"FSM validation failed:\n{body}")
        self.errors = errors

    def user_lines(self) -> list[str]:
        lines = []
        for err in self.errors:
            where = f"{self.source}: {err.path}" if err.path else self.source
            lines.append(f"{where}: {err.message}")
        return lines


class StateFileError(LoopError):
    """A state file that exists but cannot be read back."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem

    def user_lines(self) -> list[str]:
        return [
            f"{self.path}: damaged state file: {self.problem}",
            "  to start over, delete it or run the loop again (ll-loop run <loop>)",
        ]


class RunFilesError(LoopError, OSError):
    """The files of a run under `.loops/.running/` cannot be written (full disk, a file in
    the way, a read-only file system). Also an `OSError`, which is what the write raised."""

    def __init__(self, path: str, problem: str, *, hint: str | None = None) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"

    def user_lines(self) -> list[str]:
        lines = [str(self)]
        if self.hint:
            lines.append(f"  {self.hint}")
        return lines
