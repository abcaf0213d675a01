"""Names to counters: model names to encodings, and ``get_counter`` for names, counters and callables."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tokenbox_core._logs import warn_once
from tokenbox_core.errors import CounterError
from tokenbox_core.tokens._base import TokenCounter
from tokenbox_core.tokens._counters import (
    ApproximateCounter,
    BytesCounter,
    CallableCounter,
    WhitespaceCounter,
    _CachedCounter,
)
from tokenbox_core.tokens._guard import GuardedCounter

__all__ = ["encoding_for_model", "get_counter", "register_model_encoding"]


_MODEL_ENCODINGS: dict[str, str] = {}
_MODEL_PREFIX_ENCODINGS: tuple[tuple[str, str], ...] = (
    ("gpt-5", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-4o", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-oss", "o200k_harmony"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada", "cl100k_base"),
)
_DEFAULT_ENCODING = "cl100k_base"


def register_model_encoding(model: str, encoding: str) -> None:
    """Map a model name to a tiktoken encoding (``budget.register_model`` calls this)."""
    _MODEL_ENCODINGS[model] = encoding
    _COUNTERS.pop(model, None)


def known_encoding_for_model(model: str) -> str | None:
    """The tiktoken encoding of a model TokenBox or tiktoken knows, else ``None``."""
    if model in _MODEL_ENCODINGS:
        return _MODEL_ENCODINGS[model]
    bare = model.rsplit("/", 1)[-1]  # "openai/gpt-4o" → "gpt-4o"
    if bare in _MODEL_ENCODINGS:
        return _MODEL_ENCODINGS[bare]
    for prefix, encoding in _MODEL_PREFIX_ENCODINGS:
        if bare.startswith(prefix):
            return encoding
    try:
        import tiktoken.model

        return tiktoken.model.encoding_name_for_model(bare)
    except (KeyError, ImportError):
        return None


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding name for a model; unknown models get cl100k_base, never an error."""
    return known_encoding_for_model(model) or _DEFAULT_ENCODING


_COUNTERS: dict[str, TokenCounter] = {}
_COUNTERS_LOCK = threading.Lock()
_NAMED: dict[str, Callable[[], TokenCounter]] = {
    "bytes": BytesCounter,
    "approximate": ApproximateCounter,
    "whitespace": WhitespaceCounter,
}


def get_counter(name: str | TokenCounter | Callable[[str], Any] = "o200k_base") -> TokenCounter:
    """Return a counter for a name, an encoding, a model, a counter or a callable.

    A ``TokenCounter`` object of your own comes back wrapped in a
    :class:`~tokenbox_core.tokens._guard.GuardedCounter`, so that whatever it
    raises reaches you as a ``CounterError`` naming it.

    >>> get_counter("bytes").count("héllo")
    6
    >>> get_counter("approximate").count("twelve chars")
    3
    """
    if isinstance(name, str):
        with _COUNTERS_LOCK:
            counter = _COUNTERS.get(name)
        if counter is not None:
            return counter
        if name in _NAMED:
            counter = _NAMED[name]()
            if name == "approximate":
                warn_once(
                    "approximate",
                    name,
                    "counting with 'approximate' (ceil(chars / 4)): sizes are estimates, off by up to 30% for code "
                    "and non-English text; pair it with estimation_safety_margin_percent or use the model's encoding",
                )
        else:
            import tiktoken

            if name in tiktoken.list_encoding_names():
                from tokenbox_core.tokens._fast import tiktoken_counter  # issue 16: the fast exact counter

                counter = tiktoken_counter(name)
            else:  # issue 14: a model name counts by its profile (exact, or a stated estimate)
                from tokenbox_core.models._counting import counter_for_model

                counter = counter_for_model(name)
        with _COUNTERS_LOCK:
            return _COUNTERS.setdefault(name, counter)
    if isinstance(name, _CachedCounter):
        return name
    if isinstance(name, GuardedCounter):
        return name
    if hasattr(name, "count") and hasattr(name, "truncate") and hasattr(name, "name"):
        return GuardedCounter(name)
    if callable(name):
        return CallableCounter(name)
    raise CounterError(
        f"cannot make a counter from {type(name).__name__}; pass an encoding or model name, 'bytes', "
        f"'approximate', a TokenCounter, or a callable returning an int or a list of ids"
    )
