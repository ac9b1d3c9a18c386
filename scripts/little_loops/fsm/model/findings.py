"""The record every loop check returns: a message, a dotted key path and a severity.

A leaf module so that every stage of `loading` (shape, graph and file-level checks) and
`errors.LoopValidationError` can use it without importing each other. Re-exported by the
face `validation`, where the reference defines it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ValidationSeverity(Enum):
    """How bad a finding is: errors reject the loop, warnings are only logged."""

    ERROR = "error"
    WARNING = "warning"


@dataclass
class ValidationError:
    """One finding about a loop (a record, not an exception)."""

    message: str
    path: str | None = None
    severity: ValidationSeverity = ValidationSeverity.ERROR

    def __str__(self) -> str:
        label = f"[{self.severity.value.upper()}]"
        if self.path:
            return f"{label} {self.path}: {self.message}"
        return f"{label} {self.message}"
