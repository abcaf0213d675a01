"""Which counter an adapter call uses, resolved at call time.

Order of precedence:

1. the counter given to the component (a TokenBox counter name, a
   ``TokenCounter``, or a LlamaIndex-style tokenizer callable);
2. ``Settings.tokenizer`` when the user set one;
3. the counter for the LLM's model name (unknown models get cl100k_base);
4. ``cl100k_base``, the encoding LlamaIndex's own default tokenizer uses.

Nothing is captured at import time, so setting ``Settings.tokenizer`` after
building a component takes effect on its next call.

LlamaIndex 0.14 keeps the tokenizer in ``llama_index.core.global_tokenizer``
(``Settings._tokenizer`` is never written).  Its getter installs a default on
first use (``partial(tiktoken cl100k_base .encode, allowed_special="all")``),
so "the user set one" means: the global is set and is not that default.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tokenbox_core import TokenCounter, get_counter
from tokenbox_core.errors import ConfigError

__all__ = ["DEFAULT_COUNTER", "counter_name", "resolve_counter", "user_tokenizer"]

DEFAULT_COUNTER = "cl100k_base"
"""LlamaIndex's default tokenizer is tiktoken's cl100k_base (via ``gpt-3.5-turbo``)."""


def _is_llama_index_default(tokenizer: Callable[[str], Any]) -> bool:
    """True for the tokenizer ``llama_index.core.utils.get_tokenizer()`` installs by default."""
    if not isinstance(tokenizer, functools.partial) or tokenizer.args:
        return False
    if tokenizer.keywords != {"allowed_special": "all"}:
        return False
    encoding = getattr(tokenizer.func, "__self__", None)
    return getattr(tokenizer.func, "__name__", "") == "encode" and getattr(encoding, "name", None) == DEFAULT_COUNTER


def user_tokenizer() -> Callable[[str], Any] | None:
    """The tokenizer the user set with ``Settings.tokenizer``, or ``None`` when it is LlamaIndex's default."""
    import llama_index.core

    tokenizer: Callable[[str], Any] | None = getattr(llama_index.core, "global_tokenizer", None)
    if tokenizer is None or _is_llama_index_default(tokenizer):
        return None
    return tokenizer


def resolve_counter(counter: Any = None, *, model_name: str | None = None) -> TokenCounter:
    """The counter for one call (see the module docstring for the order)."""
    if counter is not None:
        return get_counter(counter)
    tokenizer = user_tokenizer()
    if tokenizer is not None:
        return get_counter(tokenizer)
    if model_name and model_name != "unknown":
        return get_counter(model_name)
    return get_counter(DEFAULT_COUNTER)


def counter_name(owner: str, counter: Any) -> str | None:
    """The counter as it is serialised: its name, ``None`` for the default; an unnamed counter (a callable or
    counter object) raises ``ValueError`` saying how to restore it (issue 10 item 14)."""
    if counter is None or isinstance(counter, str):
        return counter
    raise ConfigError(
        f"{owner}.to_dict cannot serialise the counter {counter!r}: it has no name. Use a counter name "
        f"('cl100k_base', 'gpt-4o', 'whitespace' ...), or leave it out and pass it again with "
        f"{owner}.from_dict(data, counter=...)"
    )
