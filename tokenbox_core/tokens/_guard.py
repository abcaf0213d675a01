"""A user's own ``TokenCounter`` object, guarded: its failures become :class:`~tokenbox_core.errors.CounterError`.

The engine calls a counter thousands of times deep inside a layout; an
exception from a user's counter (a tokenizer service timing out, a bug) must
reach the user as one error naming the counter, not as a traceback from the
middle of the Token Box.  The guard forwards every other attribute and
compares equal to the counter it wraps.
"""

from __future__ import annotations

from typing import Any

from tokenbox_core.errors import CounterError, TokenBoxError
from tokenbox_core.tokens._base import Keep, TokenCounter, _checked

__all__ = ["GuardedCounter"]


class GuardedCounter:
    """Wraps a ``TokenCounter`` object so that anything it raises is a ``CounterError`` naming it."""

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", None) or type(inner).__name__)

    def _failed(self, method: str, exc: Exception) -> CounterError:
        return CounterError(
            f"counter {self.name!r} ({type(self.inner).__name__}.{method}) raised {type(exc).__name__}: {exc}; "
            f"fix the counter or pass a built-in one such as 'o200k_base' or 'approximate'"
        )

    def count(self, text: str) -> int:
        try:
            value = self.inner.count(text)
        except TokenBoxError:
            raise
        except Exception as exc:
            raise self._failed("count", exc) from exc
        return _checked(value, self.name)

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        try:
            out = self.inner.truncate(text, limit, keep=keep)
        except TokenBoxError:
            raise
        except Exception as exc:
            raise self._failed("truncate", exc) from exc
        if not isinstance(out, str):
            raise CounterError(f"counter {self.name!r} truncate returned {type(out).__name__}; it must return text")
        return out

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not yet set (during unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GuardedCounter):
            return bool(self.inner == other.inner)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.inner)

    def __repr__(self) -> str:
        return f"GuardedCounter({self.inner!r})"
