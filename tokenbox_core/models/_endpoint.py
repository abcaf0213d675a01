"""Exact counts from a provider's count endpoint, through a client the user passes.

Anthropic: ``client.messages.count_tokens(model=..., messages=[...])`` returns
``input_tokens``; Gemini (``google-genai``): ``client.models.count_tokens(model=...,
contents=...)`` returns ``total_tokens``.  :class:`EndpointCounter` sends a text
as one user message (Anthropic) or as the contents (Gemini) and reads the count:
for Anthropic that includes the few tokens that frame a user turn, so a count is
an upper bound on the text alone, which keeps budgets safe.

The network is used only when you make this counter and only for texts it has
not counted before: each count is cached by the SHA-256 of the text in a cache
owned by the counter (it lives as long as the counter), bounded in bytes
(``max_cache_bytes``, least recently used first out), because a layout counts
the same texts many times and every miss is a network round trip.  Truncation
searches by characters, about log2(length) counts for a text not seen before.

Why there is no offline Gemini tokenizer here: ``google-genai``'s
``LocalTokenizer`` (checked with google-genai 3.6.1 and sentencepiece 0.2.3,
2026-11-27) ships no tokenizer model.  For Gemini 2.x and 3.0 it downloads
``gemma3_cleaned_262144_v2.spiece.model`` from raw.githubusercontent.com on
first use (``_local_tokenizer_loader._load_from_url``; offline it fails with a
``ConnectionError``), and for Gemini 3.1 and 3.5 it loads
``google/gemma-4-E4B-it`` with ``transformers.AutoProcessor.from_pretrained``
from the Hugging Face hub.  Nothing is downloaded at run time in TokenBox, so
Gemini counts stay estimates, calibrated from usage
(:class:`~tokenbox_core.models.UsageCalibrator`) or asked of the count endpoint.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Literal

from tokenbox_core.errors import CounterError, TokenBoxError
from tokenbox_core.models._profile import ModelProfile
from tokenbox_core.models._registry import find_model_profile
from tokenbox_core.tokens._base import Keep, validate_text

__all__ = ["EndpointCounter"]

Provider = Literal["anthropic", "gemini"]
_ENTRY_BYTES = 32 + 8 + 64
"""What one cached count costs: the 32-byte digest, the count, and the dict's bookkeeping (an estimate)."""


def _cut(text: str, n: int, keep: Keep) -> str:
    if n >= len(text):
        return text
    if n <= 0:
        return ""
    if keep == "head":
        return text[:n]
    if keep == "tail":
        return text[len(text) - n :]
    head = (n + 1) // 2
    return text[:head] + text[len(text) - (n - head) :]


class EndpointCounter:
    """Counts by calling the provider's count endpoint through ``client``; network only for texts not cached.

    Args:
        client: an ``anthropic.Anthropic()`` or a ``google.genai.Client()`` (or anything with the same method).
        model: the model to count for.
        provider: ``"anthropic"`` or ``"gemini"``; by default found from the client.
        max_cache_bytes: the bound of the count cache (1 MB keeps about 10,000 counts).
    """

    def __init__(
        self, client: Any, model: str, *, provider: Provider | None = None, max_cache_bytes: int = 1_000_000
    ) -> None:
        if not isinstance(model, str) or not model:
            raise CounterError(f"model must be a model name, got {model!r}")
        if isinstance(max_cache_bytes, bool) or not isinstance(max_cache_bytes, int) or max_cache_bytes < 0:
            raise CounterError(f"max_cache_bytes must be an integer >= 0, got {max_cache_bytes!r}")
        self.provider: Provider = provider or self._detect(client)
        if self.provider not in ("anthropic", "gemini"):
            raise CounterError(f"provider must be 'anthropic' or 'gemini', got {self.provider!r}")
        self.client = client
        self.model = model
        self.max_cache_bytes = max_cache_bytes
        self.name = f"endpoint:{self.provider}:{model}"
        self.profile: ModelProfile | None = find_model_profile(model)
        self.calls = 0
        self._cache: OrderedDict[bytes, int] = OrderedDict()  # owned by this counter; sha256(text) -> count
        self._lock = threading.Lock()

    @staticmethod
    def _detect(client: Any) -> Provider:
        if callable(getattr(getattr(client, "messages", None), "count_tokens", None)):
            return "anthropic"
        if callable(getattr(getattr(client, "models", None), "count_tokens", None)):
            return "gemini"
        raise CounterError(
            f"{type(client).__name__} has neither messages.count_tokens (Anthropic) nor models.count_tokens "
            f"(google-genai): pass anthropic.Anthropic() or google.genai.Client(), or provider=..."
        )

    def _call(self, text: str) -> int:
        try:
            if self.provider == "anthropic":
                result = self.client.messages.count_tokens(
                    model=self.model, messages=[{"role": "user", "content": text}]
                )
                value = getattr(result, "input_tokens", None)
            else:
                result = self.client.models.count_tokens(model=self.model, contents=text)
                value = getattr(result, "total_tokens", None)
        except TokenBoxError:
            raise
        except Exception as exc:  # the SDKs raise their own errors (network, auth, rate limits)
            raise CounterError(
                f"the {self.provider} count endpoint failed for {self.model!r} ({type(exc).__name__}: {exc}); "
                f"check the client's key and network, or count approximately with get_counter({self.model!r})"
            ) from exc
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CounterError(f"the {self.provider} count endpoint returned {value!r} for {self.model!r}, not a count")
        return value

    def count(self, text: str) -> int:
        """The provider's count of ``text`` (cached by content)."""
        validate_text(text)
        if not text:
            return 0  # the endpoints refuse empty content; an empty text costs nothing
        key = hashlib.sha256(text.encode("utf-8")).digest()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        value = self._call(text)
        with self._lock:
            self.calls += 1
            self._cache[key] = value
            while len(self._cache) * _ENTRY_BYTES > self.max_cache_bytes:
                self._cache.popitem(last=False)
        return value

    @property
    def cache_bytes(self) -> int:
        """The cache's size by the bound's measure."""
        return len(self._cache) * _ENTRY_BYTES

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        """The longest cut of ``text`` (by characters, keeping ``keep``) the provider counts at most ``limit``."""
        limit = max(0, int(limit))
        if self.count(text) <= limit:
            return text
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(_cut(text, mid, keep)) <= limit:
                lo = mid
            else:
                hi = mid - 1
        return _cut(text, lo, keep)

    def __repr__(self) -> str:
        return f"EndpointCounter({self.provider!r}, {self.model!r}, {len(self._cache)} cached)"
