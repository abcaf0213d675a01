"""One error tree for TokenBox.

::

    TokenBoxError
    ├── ContextCriticalOverflow      critical sections alone exceed the budget
    ├── BudgetError (ValueError)     an invalid budget (docs/concepts.md#budgets) or argument
    ├── SectionError (ValueError)    an invalid Section or Item, duplicate ids, bad weights
    ├── CounterError (ValueError)    a token counter misbehaved (raised, negative / non-integer count)
    │   └── TokenizerUnavailable     no local copy of a tiktoken encoding and no network
    ├── InvalidTextError (ValueError) text that cannot be counted (lone surrogates, not str)
    ├── LensError                    a lens raised, grew its input or is unknown
    ├── MediaError (ValueError)      media that cannot be costed (sizes, headers, remote URLs)
    ├── OutputFormError              an output form the layout was not sized for (text-mode .messages)
    ├── SelectionError               item selection failed (see ``tokenbox_core.select``)
    ├── SecurityError                defensive compilation refused an input or a compile
    ├── UsageReportError (ValueError) provider-reported usage that cannot be read or does not fit its request
    └── SpecError (ValueError)       a layout spec file that cannot be read or is invalid

Every message names the numbers involved and how to fix the problem.  Errors
raised by dependencies (tiktoken, pydantic) are mapped onto this tree with
``raise ... from exc`` and never leak.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BudgetError",
    "ContextCriticalOverflow",
    "CounterError",
    "InvalidTextError",
    "LensError",
    "MediaError",
    "OutputFormError",
    "SectionError",
    "SecurityError",
    "SelectionError",
    "SpecError",
    "TokenBoxError",
    "TokenizerUnavailable",
    "UsageReportError",
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
