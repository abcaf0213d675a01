"""One error tree for TokenBox.

::

    TokenBoxError
    ├── ContextCriticalOverflow      critical sections alone exceed the budget
    ├── BudgetError (ValueError)     an invalid budget (seed rules 1-7) or budget argument
    ├── SectionError (ValueError)    an invalid Section or Item, duplicate ids, bad weights
    ├── CounterError                 a token counter misbehaved (negative / non-integer count)
    │   └── TokenizerUnavailable     no local copy of a tiktoken encoding and no network
    ├── InvalidTextError (ValueError) text that cannot be counted (lone surrogates, not str)
    ├── LensError                    a lens raised, grew its input or is unknown
    └── SelectionError               item selection failed (see ``tokenbox_core.select``)

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
    "OutputFormError",
    "SectionError",
    "SelectionError",
    "TokenBoxError",
    "TokenizerUnavailable",
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


class CounterError(TokenBoxError):
    """A token counter returned something that is not a non-negative integer."""


class TokenizerUnavailable(CounterError):
    """A tiktoken encoding could not be loaded from any local copy or the network."""


class InvalidTextError(TokenBoxError, ValueError):
    """Text that cannot be counted or emitted, such as a string with lone surrogates."""


class LensError(TokenBoxError):
    """A compression lens is unknown, raised, or grew its input."""


class SelectionError(TokenBoxError):
    """Item selection could not satisfy its configuration."""


class OutputFormError(TokenBoxError):
    """A layout was asked for an output form it was not sized for (``Layout.messages`` of a text-mode layout)."""
