"""One error tree for TokenBox.

::

    TokenBoxError
    ├── ContextCriticalOverflow      critical sections alone exceed the budget
    │   └── FixedTiersOverflow       the compiler's (and a session's) fixed tiers alone exceed the window;
    │                                also a CompilationError
    ├── BudgetError (ValueError)     an invalid budget (docs/concepts.md#budgets) or argument
    ├── CompilationError             a compile violated invariants, overflowed under ``fail_loud``,
    │                                or failed a metric gate or a user check (lists every ``Violation``)
    ├── CompilerInputError (ValueError) a typed compiler input or a compiler config is invalid
    ├── ConfigError (ValueError)     an invalid option of a component (defence, detectors, cache, simulator, adapters)
    │   └── ConfigTypeError (TypeError) an argument of the wrong type
    ├── ConversationError (ValueError) a message list a provider would reject (orphan result, unanswered
    │                                call, unknown role, no content), naming the index and the fix
    ├── SectionError (ValueError)    an invalid Section or Item, duplicate ids, bad weights
    ├── CounterError (ValueError)    a token counter misbehaved (raised, negative / non-integer count)
    │   └── TokenizerUnavailable     no local copy of a tiktoken encoding and no network
    ├── InvalidTextError (ValueError) text that cannot be counted (lone surrogates, not str)
    ├── LensError                    a lens raised, grew its input or is unknown
    ├── MediaError (ValueError)      media that cannot be costed (sizes, headers, remote URLs)
    ├── OutputFormError              an output form the layout was not sized for (text-mode .messages)
    ├── SelectionError               item selection failed (see ``tokenbox_core.select``)
    ├── SecurityError                defensive compilation refused an input or a compile
    ├── SessionError (ValueError)    invalid input to the session archive
    │   └── UnknownTurnError (KeyError) turn or summary ids the session does not hold
    ├── SessionStoreError            the archive file cannot be used (not a database, corrupt, newer schema)
    ├── UsageReportError (ValueError) provider-reported usage that cannot be read or does not fit its request
    └── SpecError (ValueError)       a layout spec file that cannot be read or is invalid

Warnings (``warnings.warn``), shown on stderr by Python's default filter::

    TokenBoxWarning (UserWarning)
    ├── ConversationRepairWarning    on_invalid="repair" changed a conversation: each move and drop, by index
    └── UnknownModelWarning          a model name TokenBox does not know: counted with a fallback encoding

Every message names the numbers involved and how to fix the problem.  Errors
raised by dependencies (tiktoken, pydantic) are mapped onto this tree with
``raise ... from exc`` and never leak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BudgetError",
    "CompilationError",
    "CompilerInputError",
    "ConfigError",
    "ConfigTypeError",
    "ContextCriticalOverflow",
    "ConversationError",
    "ConversationRepairWarning",
    "CounterError",
    "FixedTiersOverflow",
    "InvalidTextError",
    "LensError",
    "MediaError",
    "OutputFormError",
    "SectionError",
    "SecurityError",
    "SelectionError",
    "SessionError",
    "SessionStoreError",
    "SpecError",
    "TokenBoxError",
    "TokenBoxWarning",
    "TokenizerUnavailable",
    "UnknownModelWarning",
    "UnknownTurnError",
    "UsageReportError",
    "Violation",
]


class TokenBoxError(Exception):
    """Base class of every error TokenBox raises on purpose."""


class ContextCriticalOverflow(TokenBoxError):
    """The critical sections (``shrink == 0``) alone do not fit the budget.

    Attributes:
        budget: the capacity available to critical sections, in counter units.
        required: the units the critical sections need.
        section_ids: ids of the critical sections, in declaration order.
    """

    def __init__(self, budget: int, required: int, section_ids: Sequence[str]) -> None:
        self.budget = budget
        self.required = required
        self.section_ids = tuple(section_ids)
        ids = ", ".join(repr(s) for s in self.section_ids) or "(none)"
        super().__init__(
            f"critical sections need {required:,} tokens but the budget is {budget:,} "
            f"(over by {required - budget:,}); critical sections: {ids}. Raise the budget, "
            f"shorten them, or give one of them shrink > 0 so it may be compressed."
        )

    def __reduce__(self) -> tuple[type, tuple[int, int, tuple[str, ...]]]:
        return (type(self), (self.budget, self.required, self.section_ids))


class BudgetError(TokenBoxError, ValueError):
    """An invalid budget: the message names the field and the value."""


class SectionError(TokenBoxError, ValueError):
    """An invalid Section or Item (ids, weights, sizes, content)."""


class CounterError(TokenBoxError, ValueError):
    """A token counter raised or returned something that is not a non-negative integer.

    A ``ValueError`` like the error LangChain raises for a bad ``token_counter``,
    so ``except ValueError`` around a drop-in keeps working.
    """


class TokenizerUnavailable(CounterError):
    """A tiktoken encoding could not be loaded from any local copy or the network."""


class InvalidTextError(TokenBoxError, ValueError):
    """Text that cannot be counted or emitted, such as a string with lone surrogates."""


class LensError(TokenBoxError):
    """A compression lens is unknown, raised, or grew its input."""


class SelectionError(TokenBoxError):
    """Item selection could not satisfy its configuration."""


class MediaError(TokenBoxError, ValueError):
    """Media that cannot be costed: bad sizes, unreadable image headers, a remote URL under the
    ``"error"`` policy, or a model without a published rule for the modality (issue 14)."""


class SpecError(TokenBoxError, ValueError):
    """A layout spec that cannot be read or is invalid; the message names the file and the field."""


class SecurityError(TokenBoxError):
    """Defensive compilation refused an input or a compile (chapter §6.9.3, Algorithm 6.6).

    Raised when a source's policy is ``reject`` and its injection score reaches
    the threshold, when phase-4 validation finds a violated invariant, or when
    the injection vulnerability surface exceeds the configured gate.

    Attributes:
        source: the source type of the offending input, if one input is at fault.
        section_id: its section (or item) id.
        score: its detection score.
        findings: the detector's evidence (``Finding`` objects).
        violations: the violated invariants, for validation failures.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        section_id: str | None = None,
        score: float | None = None,
        findings: Sequence[object] = (),
        violations: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.source = source
        self.section_id = section_id
        self.score = score
        self.findings = tuple(findings)
        self.violations = tuple(violations)


class UsageReportError(TokenBoxError, ValueError):
    """Usage a provider reported (token counts, cache diagnostics) that cannot be read, or that does not
    match the requests it is said to describe."""


class OutputFormError(TokenBoxError):
    """A layout was asked for an output form it was not sized for (``Layout.messages`` of a text-mode layout)."""


class CompilerInputError(TokenBoxError, ValueError):
    """An invalid compiler input or configuration; the message names the field, the value and the fix."""


class ConfigError(TokenBoxError, ValueError):
    """An invalid option of a component outside budgets, sections and the compiler — a defence policy, a detector,
    cache breakpoints or eviction, the cache simulator, an adapter's constructor; the message names the field, the
    value and the fix.  A ``ValueError``, as these were before they joined the tree."""


class ConfigTypeError(ConfigError, TypeError):
    """An argument of the wrong type (a ``TypeError`` as Python raises, so ``except TypeError`` keeps working)."""


@dataclass(frozen=True)
class Violation:
    """One violated invariant of a compile: a short rule name and a message with the numbers."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


class CompilationError(TokenBoxError):
    """A compilation was rejected (chapter §6.4.1 Validate, §6.4.3 Fail-Loud, §6.11.5 gates).

    It lists *every* violated invariant, each with its numbers.

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


class FixedTiersOverflow(ContextCriticalOverflow, CompilationError):
    """The compiler's fixed tiers (policy, task, tools, the latest user message: its critical sections) alone
    exceed the window left after the generation reserve — the one condition every other path reports as
    :class:`ContextCriticalOverflow`.  Also a :class:`CompilationError` with its violation, which is what the
    compiler and :class:`~tokenbox_core.ContextSession` raised before, so ``except CompilationError`` keeps working.
    """

    def __init__(self, budget: int, required: int, section_ids: Sequence[str], violation: Violation) -> None:
        ContextCriticalOverflow.__init__(self, budget, required, section_ids)
        CompilationError.__init__(self, [violation])

    def __reduce__(self) -> tuple[type, tuple[int, int, tuple[str, ...], Violation]]:  # type: ignore[override]
        return (type(self), (self.budget, self.required, self.section_ids, self.violations[0]))


class SessionError(TokenBoxError, ValueError):
    """Invalid input to the session archive (a message that is not a neutral chat dict, a bad option)."""


class UnknownTurnError(SessionError, KeyError):
    """Turn or summary ids that the session does not hold."""

    def __str__(self) -> str:  # KeyError would repr the message
        return str(self.args[0]) if self.args else ""


class SessionStoreError(TokenBoxError):
    """The archive file cannot be used: not a database, corrupt, another application's, or a newer schema.

    Never answered by silently resetting the file.
    """


class ConversationError(TokenBoxError, ValueError):
    """A conversation a provider would reject: a tool result without its call, a call without results when the
    context is compiled, an unknown role, a message without content.

    Attributes:
        index: the position of the offending message in the list given.
        kind: ``"orphan_result"``, ``"separated_result"``, ``"duplicate_result"``, ``"unanswered_call"``,
            ``"unknown_role"``, ``"no_content"`` or ``"bad_content"``.
        problems: every problem found (:class:`tokenbox_core.chat._validate.Problem`), the first one in the message.

    Pass ``on_invalid="repair"`` to move, drop or close what cannot be sent instead (see
    :func:`tokenbox_core.chat.check_conversation`).
    """

    def __init__(self, message: str, *, index: int = -1, kind: str = "", problems: Sequence[object] = ()) -> None:
        super().__init__(message)
        self.index = index
        self.kind = kind
        self.problems = tuple(problems)


class TokenBoxWarning(UserWarning):
    """The base of TokenBox's warnings: something a result depends on was assumed, and how to avoid it."""


class ConversationRepairWarning(TokenBoxWarning):
    """``on_invalid="repair"`` changed a conversation: a tool result moved next to its call, a duplicate result, a
    message a provider rejects or an unanswered call dropped.  The message lists each change by index; pass
    ``on_invalid="raise"`` to get a :class:`ConversationError` instead."""


class UnknownModelWarning(TokenBoxWarning):
    """A model name TokenBox does not know: counts use a fallback encoding and window (with a did-you-mean)."""
