"""Unknown keyword arguments rejected with a "did you mean" (issue 10 item 6).

The adapters' classes are pydantic models, which silently ignore an unknown
field: ``TokenBoxNodePostprocessor(token_budgt=300)`` would lay out into the
LLM's whole window.  :func:`check_arguments` names each unknown argument, the
closest known one, or a specific hint (``BUDGET_HINTS``: the budget has the
host's name where a class replaces a host class, ``budget`` elsewhere).
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, ParamSpec, TypeVar

from tokenbox_core.errors import TokenBoxError

__all__ = [
    "BUDGET_NAMES",
    "StrictArguments",
    "UnknownArgumentError",
    "check_arguments",
    "check_keywords",
    "known_arguments",
    "no_bool",
    "suggest_keywords",
]

_T = TypeVar("_T", bound=type)
_P = ParamSpec("_P")
_R = TypeVar("_R")

BUDGET_NAMES = ("budget", "token_budget", "token_limit", "max_tokens", "context_window", "max_input_tokens")
"""The names a token budget goes by in LangChain, LlamaIndex and TokenBox."""


class UnknownArgumentError(TokenBoxError, TypeError, ValueError):
    """An unknown keyword argument: a ``TypeError`` as Python raises for one, and a ``ValueError`` as LlamaIndex's
    ``from_defaults`` raises."""


def check_arguments(
    owner: str, given: Iterable[str], allowed: Iterable[str], *, budget: str | None = None, hint: str = ""
) -> None:
    """Raise :class:`UnknownArgumentError` when ``given`` names an argument ``allowed`` does not.

    ``budget`` is the owner's name for the token budget: any other budget name
    is answered with it.  ``hint`` is appended to the message.
    """
    known = sorted(set(allowed))
    unknown = [name for name in given if name not in known]
    if not unknown:
        return
    parts = []
    for name in unknown:
        candidates = sorted({*known, *BUDGET_NAMES}) if budget is not None else known
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
        if budget is not None and (name in BUDGET_NAMES or (close and close[0] not in known)):
            parts.append(f"{name!r} (the token budget of {owner} is {budget!r})")
        else:
            parts.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    plural = "s" if len(unknown) > 1 else ""
    message = f"{owner} got unknown argument{plural} {', '.join(parts)}; its arguments are {', '.join(known)}"
    raise UnknownArgumentError(message + (f". {hint}" if hint else ""))


def known_arguments(fields: Mapping[str, object], extra: Iterable[str] = ()) -> list[str]:
    """The names a pydantic model accepts: its field names, their aliases and ``extra``."""
    names = set(extra)
    for name, info in fields.items():
        names.add(name)
        alias = getattr(info, "alias", None)
        if isinstance(alias, str):
            names.add(alias)
        choices = getattr(getattr(info, "validation_alias", None), "choices", None)
        for choice in choices or ():
            if isinstance(choice, str):
                names.add(choice)
    return sorted(names)


def no_bool(name: str, value: object) -> object:
    """``value`` unchanged unless it is a bool, which Python treats as an int (``True`` would be 1 token)."""
    if isinstance(value, bool):
        from tokenbox_core.errors import BudgetError

        raise BudgetError(f"{name} must be a number of tokens or a ContextBudget, got {value!r}")
    return value


class StrictArguments:
    """A mixin for pydantic-based classes: unknown keyword arguments raise :class:`UnknownArgumentError` with a
    "did you mean" instead of being ignored.  ``budget_name`` is the class's name for the token budget."""

    budget_name: ClassVar[str | None] = "budget"

    def __init__(self, *args: object, **kwargs: object) -> None:
        fields = getattr(type(self), "model_fields", {})
        check_arguments(type(self).__name__, kwargs, known_arguments(fields), budget=self.budget_name)
        super().__init__(*args, **kwargs)


def suggest_keywords(cls: _T) -> _T:
    """Class decorator: a misspelt keyword argument raises :class:`UnknownArgumentError` (a ``TypeError``, as
    Python raises) naming the closest argument, instead of Python's bare "unexpected keyword argument".

    >>> from dataclasses import dataclass
    >>> @suggest_keywords
    ... @dataclass
    ... class Knob:
    ...     shrink: int = 0
    >>> Knob(shrnk=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tokenbox_core._arguments.UnknownArgumentError: Knob got unknown argument 'shrnk' (did you mean 'shrink'?); ...
    """
    init: Any = cls.__init__  # type: ignore[misc]  # the class's own initialiser, which this wraps
    params = list(inspect.signature(init).parameters.values())[1:]  # without self
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return cls
    names = frozenset(p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL)
    owner = cls.__name__

    @functools.wraps(init)
    def checked_init(self: Any, *args: Any, **kwargs: Any) -> None:
        if not names.issuperset(kwargs):
            check_arguments(owner, kwargs, names)
        init(self, *args, **kwargs)

    cls.__init__ = checked_init  # type: ignore[misc]
    return cls


def check_keywords(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Function or method decorator: a misspelt keyword argument raises :class:`UnknownArgumentError` naming the
    closest argument (a ``TypeError``, as Python raises), where the user typed it.

    >>> @check_keywords
    ... def fit(budget: int, *, counter: str = "gpt-4o") -> int:
    ...     return budget
    >>> fit(10, countr="x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tokenbox_core._arguments.UnknownArgumentError: fit got unknown argument 'countr' (did you mean 'counter'?); ...
    """
    params = list(inspect.signature(fn).parameters.values())
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return fn
    names = frozenset(p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL) - {"self"}
    owner = fn.__qualname__.replace(".__init__", "")

    @functools.wraps(fn)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not names.issuperset(kwargs):
            check_arguments(owner, kwargs, names)
        return fn(*args, **kwargs)

    return checked
