"""Prompt-cache rules of the providers, as the cache simulator applies them.

Sources (published provider documentation, read 2026-11):

- OpenAI prompt caching: automatic for prompts of 1,024 tokens or more, cache
  hits in increments of 128 tokens, exact prefix match, entries kept
  5–10 minutes of inactivity (up to an hour off-peak); cached input tokens are
  billed at a discount that depends on the model (50 % for the GPT-4o family,
  75 % for GPT-4.1, 90 % for the GPT-5 family).
- Anthropic prompt caching: opt-in ``cache_control`` breakpoints, at most 4 per
  request; the cached prefix is everything up to a breakpoint; on lookup the
  service checks the breakpoint and up to 20 content blocks before it; minimum
  cacheable length 1,024 tokens (Sonnet and Opus 4 models; 2,048 or 4,096 on
  some others); TTL 5 minutes (refreshed on use) or 1 hour; cache writes cost
  1.25× the base input price, cache reads 0.1×.
- Gemini implicit caching: automatic, minimum 1,024 tokens (2.5 Flash) or 2,048
  (2.5 Pro), cached tokens billed at a 75 % discount (90 % on 2.5+ models).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

__all__ = ["CacheRules", "cache_rules"]

Mode = Literal["automatic", "breakpoints"]


@dataclass(frozen=True)
class CacheRules:
    """How one provider caches prompt prefixes and bills them.

    Attributes:
        provider: a label for reports.
        mode: ``"automatic"`` (every prompt's prefix is cached; OpenAI, Gemini)
            or ``"breakpoints"`` (only prefixes ending at a ``cache_control``
            breakpoint are written; Anthropic).
        min_tokens: a prefix shorter than this is never cached.
        increment: cached lengths are rounded down to a multiple of this.
        max_breakpoints: most breakpoints a request may carry.
        lookback_blocks: blocks before a breakpoint checked for a hit.
        ttl_seconds: an entry unused for longer expires.
        read_multiplier: price of a cached token relative to an uncached one.
        write_multiplier: price of a token written to the cache (breakpoint mode).
        input_price: price per million uncached input tokens (for reports).
    """

    provider: str
    mode: Mode = "automatic"
    min_tokens: int = 1024
    increment: int = 1
    max_breakpoints: int = 0
    lookback_blocks: int = 0
    ttl_seconds: float = 300.0
    read_multiplier: float = 0.5
    write_multiplier: float = 1.0
    input_price: float = 1.0

    def __post_init__(self) -> None:
        if self.mode not in ("automatic", "breakpoints"):
            raise ValueError(f"mode must be 'automatic' or 'breakpoints', got {self.mode!r}")
        for name in ("min_tokens", "increment", "max_breakpoints", "lookback_blocks"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        if self.increment < 1:
            raise ValueError(f"increment must be >= 1, got {self.increment}")
        for name in ("ttl_seconds", "read_multiplier", "write_multiplier", "input_price"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    def with_discount(self, discount: float) -> CacheRules:
        """The same rules with cached reads billed at ``1 - discount`` of the base price."""
        if not 0 <= discount <= 1:
            raise ValueError(f"discount must be between 0 and 1, got {discount!r}")
        return replace(self, read_multiplier=1 - discount)


_PRESETS = {
    "openai": CacheRules(
        "openai", "automatic", min_tokens=1024, increment=128, ttl_seconds=300.0, read_multiplier=0.5, input_price=2.5
    ),
    "openai-gpt-4.1": CacheRules(
        "openai", "automatic", min_tokens=1024, increment=128, ttl_seconds=300.0, read_multiplier=0.25, input_price=2.0
    ),
    "openai-gpt-5": CacheRules(
        "openai", "automatic", min_tokens=1024, increment=128, ttl_seconds=300.0, read_multiplier=0.1, input_price=1.25
    ),
    "anthropic": CacheRules(
        "anthropic",
        "breakpoints",
        min_tokens=1024,
        increment=1,
        max_breakpoints=4,
        lookback_blocks=20,
        ttl_seconds=300.0,
        read_multiplier=0.1,
        write_multiplier=1.25,
        input_price=3.0,
    ),
    "gemini": CacheRules(
        "gemini", "automatic", min_tokens=1024, increment=1, ttl_seconds=300.0, read_multiplier=0.25, input_price=1.25
    ),
}


def cache_rules(provider_or_model: str) -> CacheRules:
    """Rules for ``"openai"``, ``"anthropic"``, ``"gemini"`` or a model name.

    Model names map by family: ``claude-*`` → Anthropic, ``gemini-*`` → Gemini,
    ``gpt-5*`` → OpenAI at a 90 % discount, ``gpt-4.1*`` → 75 %, other ``gpt-*``
    and ``o*`` models → OpenAI at 50 %.

    >>> cache_rules("claude-sonnet-4-5").max_breakpoints
    4
    """
    if not isinstance(provider_or_model, str) or not provider_or_model:
        raise ValueError(f"provider or model must be a non-empty string, got {provider_or_model!r}")
    name = provider_or_model.lower()
    if name in _PRESETS:
        return _PRESETS[name]
    if name.startswith("claude") or name.startswith("anthropic"):
        return _PRESETS["anthropic"]
    if name.startswith("gemini"):
        return _PRESETS["gemini"]
    if name.startswith("gpt-5"):
        return _PRESETS["openai-gpt-5"]
    if name.startswith("gpt-4.1"):
        return _PRESETS["openai-gpt-4.1"]
    if name.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return _PRESETS["openai"]
    raise ValueError(
        f"no prompt-cache rules known for {provider_or_model!r}; pass 'openai', 'anthropic' or 'gemini', "
        f"or a CacheRules(...) of your own"
    )
