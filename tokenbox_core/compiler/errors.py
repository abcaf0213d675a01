"""The compiler's errors, both in the ``TokenBoxError`` tree.

::

    TokenBoxError
    ├── CompilerInputError (ValueError)   a typed input or a config is invalid (raised at construction)
    └── CompilationError                   a compile violated invariants, overflowed under ``fail_loud``,
                                           or failed a metric gate or a user check

A :class:`CompilationError` lists *every* violated invariant, each with its
numbers (chapter §6.4.1 stage 6, §6.4.3 "Fail-Loud").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core.errors import TokenBoxError

__all__ = ["CompilationError", "CompilerInputError", "Violation"]


class CompilerInputError(TokenBoxError, ValueError):
    """An invalid compiler input or configuration; the message names the field, the value and the fix."""


@dataclass(frozen=True)
class Violation:
    """One violated invariant: a short rule name and a message with the numbers."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


class CompilationError(TokenBoxError):
    """A compilation was rejected (chapter §6.4.1 Validate, §6.4.3 Fail-Loud, §6.11.5 gates).

    Attributes:
        violations: every violated invariant, in the order they were checked.
        trace: the partial compilation trace (a dict) when one was built, else ``None``.
    """

    def __init__(self, violations: Sequence[Violation], trace: dict[str, Any] | None = None) -> None:
        self.violations = tuple(violations)
        self.trace = trace
        lines = "\n".join(f"  - {v}" for v in self.violations)
        count = len(self.violations)
        super().__init__(f"compilation rejected: {count} violated invariant{'s' if count != 1 else ''}:\n{lines}")

    @property
    def rules(self) -> tuple[str, ...]:
        """The rule names of the violations, in order."""
        return tuple(v.rule for v in self.violations)

    def __reduce__(self) -> tuple[type, tuple[tuple[Violation, ...], dict[str, Any] | None]]:
        return (type(self), (self.violations, self.trace))
