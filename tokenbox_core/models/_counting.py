"""Counting per model family (issue 14 §1): exact where the tokenizer is known, stated estimates elsewhere.

- tiktoken encodings for the OpenAI families (exact);
- a local Hugging Face ``tokenizer.json`` (exact; optional extra ``tokenbox-context[hf]``; never downloaded);
- otherwise :class:`MarginApproximateCounter`: chars/4 inflated by the profile's error bound, so budgets
  built on it stay safe, and named ``approximate+30%`` so every layout trace and report says the count is
  an estimate and by how much.

``get_counter("claude-sonnet-4-5")`` goes through :func:`counter_for_model`; every counter it returns
carries the model's :class:`~tokenbox_core.models.ModelProfile` as ``counter.profile``, which the message
counter uses to cost images and audio by the model's own rules.
"""

from __future__ import annotations

import math
import os
from typing import Any

from tokenbox_core.errors import TokenizerUnavailable
from tokenbox_core.models._profile import ModelProfile
from tokenbox_core.models._registry import fallback_profile, find_model_profile, warn_unknown
from tokenbox_core.tokens._base import Keep, TokenCounter
from tokenbox_core.tokens._counters import _CachedCounter
from tokenbox_core.tokens._fast import tiktoken_counter

__all__ = [
    "HFTokenizerCounter",
    "MarginApproximateCounter",
    "counter_for_model",
    "counter_for_profile",
    "counting_note",
    "profile_of",
]


class MarginApproximateCounter(_CachedCounter):
    """``ceil(ceil(chars / 4) × (1 + error_bound))``: the chars/4 estimate with its error bound as a margin.

    >>> MarginApproximateCounter(0.30).count("x" * 40)
    13
    >>> MarginApproximateCounter(0.30).name
    'approximate+30%'
    """

    approximate = True

    def __init__(self, error_bound: float) -> None:
        self.error_bound = float(error_bound)
        self.name = f"approximate+{round(self.error_bound * 100):g}%"
        super().__init__()
        self._cache_key = f"margin-approx:{self.error_bound!r}"

    def _raw_count(self, text: str) -> int:
        return self._inflate(-(-len(text) // 4))

    def _inflate(self, raw: int) -> int:
        return math.ceil(raw * (1.0 + self.error_bound) - 1e-9)

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        limit = max(0, int(limit))
        if self.count(text) <= limit:
            return text
        raw = math.floor(limit / (1.0 + self.error_bound))
        while raw > 0 and self._inflate(raw) > limit:
            raw -= 1
        return _cut(text, raw * 4, keep)


def _cut(text: str, n_keep: int, keep: Keep) -> str:
    if n_keep >= len(text):
        return text
    if n_keep <= 0:
        return ""
    if keep == "head":
        return text[:n_keep]
    if keep == "tail":
        return text[len(text) - n_keep :]
    head = (n_keep + 1) // 2
    return text[:head] + text[len(text) - (n_keep - head) :]


class HFTokenizerCounter(_CachedCounter):
    """Exact counts with a local Hugging Face ``tokenizer.json`` (Llama, Mistral, Qwen, DeepSeek, ...).

    The file is read from disk only; nothing is downloaded.  Special tokens
    are not added (the chat overhead is counted separately).  Needs the
    optional extra ``pip install "tokenbox-context[hf]"``.
    """

    def __init__(self, tokenizer_file: str | os.PathLike[str], *, name: str | None = None) -> None:
        path = os.fspath(tokenizer_file)
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise TokenizerUnavailable(
                'counting with a tokenizer.json needs the "hf" extra: pip install "tokenbox-context[hf]"'
            ) from exc
        if not os.path.isfile(path):
            raise TokenizerUnavailable(
                f"no tokenizer file at {path!r}: pass the path of a local tokenizer.json (TokenBox never "
                f"downloads tokenizers; get it from the model's repository once and keep it with your code)"
            )
        try:
            self.tokenizer = Tokenizer.from_file(path)
        except Exception as exc:  # the tokenizers library raises its own Exception subclass
            raise TokenizerUnavailable(f"cannot read tokenizer file {path!r}: {exc}") from exc
        self.tokenizer_file = os.path.abspath(path)
        self.name = name or f"hf:{os.path.basename(os.path.dirname(self.tokenizer_file))}"
        super().__init__()
        self._cache_key = f"hf:{self.tokenizer_file}"  # one cache per file, whatever the model name

    def _encode(self, text: str) -> Any:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _raw_count(self, text: str) -> int:
        return len(self._encode(text).ids)

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        limit = max(0, int(limit))
        offsets = [tuple(o) for o in self._encode(text).offsets]
        if len(offsets) <= limit:
            return text
        while limit > 0:
            if keep == "head":
                out = text[: offsets[limit - 1][1]]
            elif keep == "tail":
                out = text[offsets[len(offsets) - limit][0] :]
            else:
                head = (limit + 1) // 2
                tail = limit - head
                out = text[: offsets[head - 1][1]] + (text[offsets[len(offsets) - tail][0] :] if tail else "")
            if self.count(out) <= limit:
                return out
            limit -= 1  # re-encoding a cut can merge differently; shrink until it fits
        return ""


def counter_for_profile(profile: ModelProfile) -> TokenCounter:
    """The counter a profile's counting rule names, carrying the profile as ``counter.profile``."""
    rule = profile.counting
    counter: Any
    if rule.method == "tiktoken":
        counter = tiktoken_counter(rule.encoding or "cl100k_base")  # the fast exact counter where proven
    elif rule.method == "hf_tokenizer":
        counter = HFTokenizerCounter(rule.tokenizer_file or "", name=f"hf:{profile.name}")
    else:
        counter = MarginApproximateCounter(rule.error_bound)
        from tokenbox_core._logs import warn_once

        warn_once("approximate", profile.name, counting_note(counter, profile))
    counter.profile = profile
    return counter  # type: ignore[no-any-return]


def counter_for_model(name: str) -> TokenCounter:
    """The counter for a model name: its profile's rule, or the seed's fallback (stated in a warning).

    An unknown model keeps the encoding TokenBox always gave it (cl100k_base, or
    the one tiktoken knows for it) and gets the seed's fallback window.
    """
    profile = find_model_profile(name)
    if profile is None:
        from tokenbox_core.tokens._registry import encoding_for_model

        encoding = encoding_for_model(name)
        profile = fallback_profile(name, encoding=encoding)
        warn_unknown(name, encoding=encoding)
    return counter_for_profile(profile)


def profile_of(counter: object) -> ModelProfile | None:
    """The model profile a counter was made for (``None`` for encodings, built-in counters, callables)."""
    profile = getattr(counter, "profile", None)
    return profile if isinstance(profile, ModelProfile) else None


def counting_note(counter: object, profile: ModelProfile | None = None) -> str:
    """A sentence for people when a model's counts are not exact or its window is a fallback; else ``""``.

    >>> from tokenbox_core import get_counter
    >>> counting_note(get_counter("claude-sonnet-4-5"))[:60]
    'counts for claude-sonnet-4-5 are estimates: chars/4 plus a 3'
    """
    own = getattr(counter, "counting_note", None)  # a calibrated counter states its own calibration
    if isinstance(own, str) and own:
        return own
    profile = profile or profile_of(counter)
    if profile is None:
        return ""
    if profile.is_fallback:
        from tokenbox_core.models._registry import fallback_message

        return fallback_message(profile.name, encoding=profile.counting.encoding or "cl100k_base")
    if profile.approximate:
        return (
            f"counts for {profile.name} are estimates: chars/4 plus a {profile.counting.error_bound:.0%} safety "
            f"margin ({getattr(counter, 'name', 'approximate')}; its tokenizer is not published). For exact counts "
            f"register a local tokenizer.json: register_model({profile.name!r}, tokenizer_file=...)"
        )
    return ""
