"""The model-aware ``TokenBudgetCalculator`` (``docs/adr/0039-token-budget-allocation.md``) on model profiles.

``MODEL_CONTEXT_WINDOWS`` is a live view of the profile registry: dated
snapshots resolve to their family (``gpt-4o-2024-08-06`` → 128,000), and an
unknown model still gets the seed's 8,192-token fallback — but the
``TokenBudget`` says so (``window_source="fallback"``, ``note``) and a warning
under the ``tokenbox`` logger names the model and how to register it
(issue 10 item 18, issue 14 §1).  Both names are re-exported by
``tokenbox_core._budget``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenbox_core.errors import BudgetError
from tokenbox_core.models._counting import counter_for_profile
from tokenbox_core.models._frameworks import profile_from_object
from tokenbox_core.models._profile import CountingRule, ModelProfile
from tokenbox_core.models._registry import (
    DEFAULT_CONTEXT_WINDOW,
    fallback_profile,
    find_model_profile,
    register_profile,
    registered_names,
)
from tokenbox_core.tokens import PRIMING_TOKENS, TokenCounter, get_counter
from tokenbox_core.tokens._messages import message_token_count
from tokenbox_core.tokens._registry import register_model_encoding as _register_encoding

if TYPE_CHECKING:
    from tokenbox_core._budget import ContextBudget

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "MODEL_CONTEXT_WINDOWS",
    "TokenBudget",
    "TokenBudgetCalculator",
    "register_model",
]

RESPONSE_RESERVE_RATIO = 0.15
RESPONSE_RESERVE_MIN = 500
RESPONSE_RESERVE_MAX = 4_096
SAFETY_BUFFER_RATIO = 0.05


class _ContextWindows(MutableMapping[str, int]):
    """Context windows by model name, read from the profile registry (a live view).

    ``windows[name]`` resolves snapshots and provider prefixes; ``name in
    windows`` is False for models that would get the fallback; assigning
    ``windows[name] = n`` registers the model's window (as
    :func:`register_model` does); iteration lists the names registered by the
    user (the built-in families are in ``tokenbox_core.models._registry.builtin_profiles()``).
    """

    def __getitem__(self, name: str) -> int:
        profile = find_model_profile(name) if isinstance(name, str) else None
        if profile is None:
            raise KeyError(name)
        return profile.context_window

    def __setitem__(self, name: str, window: int) -> None:
        register_model(name, window)

    def __delitem__(self, name: str) -> None:
        raise TypeError("model windows cannot be deleted; register a new window with register_model()")

    def __iter__(self) -> Iterator[str]:
        return iter(registered_names())

    def __len__(self) -> int:
        return len(registered_names())

    def __repr__(self) -> str:
        return "MODEL_CONTEXT_WINDOWS(<view of tokenbox_core.models; registered: " + repr(registered_names()) + ">)"


MODEL_CONTEXT_WINDOWS: MutableMapping[str, int] = _ContextWindows()
"""Context windows by model (a live view of the profile registry). Extend with :func:`register_model`."""


def register_model(
    name: str | ModelProfile,
    context_window: int | None = None,
    encoding: str | None = None,
    *,
    max_output_tokens: int | None = None,
    tokenizer_file: str | os.PathLike[str] | None = None,
    error_bound: float | None = None,
) -> ModelProfile:
    """Teach TokenBox a model (window, counting) without editing the library; returns its profile.

    Pass a :class:`~tokenbox_core.models.ModelProfile` to register it whole,
    or a name with the fields to set: a known family keeps its other rules
    (media, cache, prices), an unknown name starts from the fallback.
    ``encoding`` (a tiktoken encoding) or ``tokenizer_file`` (a local
    tokenizer.json) make counts exact; ``error_bound`` sets the margin of
    approximate counts.

    >>> register_model("acme-llm", 32_000, encoding="cl100k_base").context_window
    32000
    >>> MODEL_CONTEXT_WINDOWS["acme-llm"]
    32000
    """
    if isinstance(name, ModelProfile):
        profile = name.replace(window_source="registered")
        register_profile(profile)
        return profile
    if not isinstance(name, str) or not name.strip():
        raise BudgetError(f"register_model needs a model name, got {name!r}")
    base = find_model_profile(name) or fallback_profile(name)
    changes: dict[str, Any] = {"name": name, "aliases": (), "window_source": "registered"}
    if context_window is not None:
        window: object = context_window
        if isinstance(window, float) and window.is_integer():
            window = int(window)
        if isinstance(window, bool) or not isinstance(window, int):
            raise BudgetError(f"context_window must be an integer number of tokens, got {context_window!r}")
        if window <= 0:
            raise BudgetError(f"context_window must be > 0, got {window}")
        changes["context_window"] = window
    elif base.is_fallback:
        raise BudgetError(
            f"register_model({name!r}) needs context_window: TokenBox has no published window for this model"
        )
    if max_output_tokens is not None:
        changes["max_output_tokens"] = max_output_tokens
    if encoding is not None and tokenizer_file is not None:
        raise BudgetError("pass either encoding (tiktoken) or tokenizer_file (tokenizer.json), not both")
    if encoding is not None:
        changes["counting"] = CountingRule("tiktoken", encoding=encoding)
        _register_encoding(name, encoding)
    elif tokenizer_file is not None:
        changes["counting"] = CountingRule("hf_tokenizer", tokenizer_file=os.fspath(tokenizer_file))
    elif error_bound is not None:
        changes["counting"] = CountingRule("approximate", error_bound=error_bound)
    profile = base.replace(**changes)
    if profile.counting.method == "hf_tokenizer":
        counter_for_profile(profile)  # fail now, where the user typed the path, not at first count
    register_profile(profile)
    _forget_counter(name)
    return profile


def _forget_counter(name: str) -> None:
    """Drop a cached counter for ``name`` so the next ``get_counter(name)`` uses the new profile."""
    from tokenbox_core.tokens import _registry as _registry

    with _registry._COUNTERS_LOCK:
        _registry._COUNTERS.pop(name, None)


@dataclass(frozen=True)
class TokenBudget:
    """How many tokens remain for memory injection (``docs/adr/0039-token-budget-allocation.md``).

    ``window_source`` says where ``context_window`` comes from (``registry``,
    ``registered``, ``framework`` or ``fallback``) and ``counting`` how the
    counts were made (``exact (o200k_base)`` or ``approximate+30%``); ``note``
    is the sentence to show a person when either is not exact.
    """

    model: str
    context_window: int
    messages_tokens: int
    directive_tokens: int
    response_reserve: int
    safety_buffer: int
    memory_tokens: int
    is_constrained: bool
    window_source: str = "registry"
    counting: str = ""

    @property
    def note(self) -> str:
        """Empty when the window is published and the counts exact; else what was assumed."""
        notes = []
        if self.window_source == "fallback":
            notes.append(
                f"unknown model {self.model!r}: the {self.context_window:,}-token fallback window was used; "
                f"register it with register_model({self.model!r}, context_window=...)"
            )
        if self.counting.startswith("approximate"):
            notes.append(f"counts are estimates ({self.counting}: chars/4 plus a safety margin)")
        return "; ".join(notes)

    def to_context_budget(self) -> ContextBudget:
        """The same reserves as a ``ContextBudget`` for a Token Box layout."""
        from tokenbox_core._budget import ContextBudget

        return ContextBudget(
            max_tokens=self.context_window,
            output_reserve=min(self.context_window, self.response_reserve + self.safety_buffer),
        )


def _counting_label(counter: TokenCounter) -> str:
    name = str(getattr(counter, "name", "counter"))
    return name if name.startswith("approximate") else f"exact ({name})"


class TokenBudgetCalculator:
    """Calculates the exact token budget for memory injection (``docs/adr/0039-token-budget-allocation.md``).

    Reserves 15% of the window for the response (min 500, max 4,096), 5% as a
    safety buffer, the directive in full, and the messages with their chat
    overhead; what remains is ``memory_tokens``.  ``model`` is a name (dated
    snapshots resolve to their family) or a LangChain chat model / LlamaIndex
    LLM / ``LLMMetadata`` whose window is read.  Unknown models use the
    8,192-token fallback window and the cl100k_base encoding, without raising,
    and the result says so (``window_source``, ``note``).
    """

    def __init__(self, counter: str | TokenCounter | None = None) -> None:
        self._counter = counter

    def _profile(self, model: Any) -> ModelProfile:
        return profile_from_object(model)

    def _counter_for(self, model: Any) -> TokenCounter:
        if self._counter is not None:
            return get_counter(self._counter)
        if isinstance(model, str):
            return get_counter(model)
        profile = self._profile(model)
        return counter_for_profile(profile)

    def count_tokens(self, text: str, model: Any) -> int:
        return self._counter_for(model).count(text)

    def count_messages_tokens(self, messages: Iterable[Any], model: Any) -> int:
        counter = self._counter_for(model)
        return PRIMING_TOKENS + sum(message_token_count(m, counter) for m in messages)

    def calculate(self, model: Any, messages: Iterable[Any], directive: str = "") -> TokenBudget:
        profile = self._profile(model)
        name = model if isinstance(model, str) else profile.name
        counter = self._counter_for(model)
        context_window = profile.context_window
        messages_tokens = PRIMING_TOKENS + sum(message_token_count(m, counter) for m in messages)
        directive_tokens = counter.count(directive) if directive else 0
        response_reserve = max(
            RESPONSE_RESERVE_MIN, min(RESPONSE_RESERVE_MAX, int(context_window * RESPONSE_RESERVE_RATIO))
        )
        safety_buffer = int(context_window * SAFETY_BUFFER_RATIO)
        consumed = messages_tokens + directive_tokens + response_reserve + safety_buffer
        memory_tokens = max(0, context_window - consumed)
        return TokenBudget(
            model=name,
            context_window=context_window,
            messages_tokens=messages_tokens,
            directive_tokens=directive_tokens,
            response_reserve=response_reserve,
            safety_buffer=safety_buffer,
            memory_tokens=memory_tokens,
            is_constrained=memory_tokens < 1_000,
            window_source=profile.window_source,
            counting=_counting_label(counter),
        )
