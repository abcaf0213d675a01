"""Anthropic Claude profiles, each figure with the public page it comes from.

Claude's tokenizer is not public, so text is counted approximately (chars/4 with the seed's 30% error
bound as a safety margin) unless the user registers a local tokenizer.json or a counter.

[models]  https://platform.claude.com/docs/en/models/<model>/overview — Opus 4.5: 200K window, 64K max output,
          $5/$25; Sonnet 4.5: 200K, 64K, $3/$15; Haiku 4.5: 200K, 64K, $1/$5
[prices]  https://docs.electronhub.ai/guides/prompt-caching (table of Anthropic's prices): Opus 4.1 and Opus 4
          $15/$75, Sonnet 4 and Sonnet 3.7 $3/$15, Haiku 3.5 $0.80/$4, Haiku 3 $0.25/$1.25; cache reads 0.1×,
          5-minute writes 1.25×, 1-hour writes 2×
[window]  200K for the Claude 3 and 4 families: https://docs.rs/matrixcode-core/0.4.43/matrixcode_core/models/fn.context_window_for.html
          and https://huggingface.co/spaces/SE-Arena/Software-Engineering-Arena/blob/main/context_window.json
          (claude-3-5-sonnet-latest, claude-3-5-haiku 200000); Haiku 3.5 max output 8,192:
          https://github.com/xsyetopz/claudetto/wiki/Claude-Code-Models-Catalog
[cache]   minimum cacheable prompt per model (https://docs.orq.ai/docs/proxy/prompt-caching, matching the
          docs quoted in https://github.com/anthropics/anthropic-sdk-python/issues/1194): 4,096 for Opus 4.5 and
          Haiku 4.5; 1,024 for Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4, Sonnet 3.7; 2,048 for Haiku 3.5 and
          Haiku 3.  Up to 4 cache breakpoints, 5-minute TTL by default (1 hour optional):
          https://portkey.ai/docs/integrations/llms/anthropic/prompt-caching
[images]  https://docs.claude.com/en/docs/vision — tokens = (width px × height px)/750; long edge over 1568 px
          (or over ~1,600 tokens) is scaled down preserving the aspect ratio; over 8000×8000 px is rejected;
          examples 200×200 → ~54, 1000×1000 → ~1334, 1092×1092 → ~1590 tokens; the largest sizes that are not
          resized include 784×1568 (1:2), i.e. 1,229,312 px, which is the area cap used here (an upper bound on
          "~1,600 tokens")
"""

from __future__ import annotations

from tokenbox_core.models._profile import CacheRule, CountingRule, ModelProfile, Pricing
from tokenbox_core.models._rules import AreaRule

__all__ = ["ANTHROPIC_PROFILES"]

APPROX = CountingRule("approximate")
AREA = AreaRule()  # [images]


def _cache(min_prefix: int) -> CacheRule:
    """[cache] / [prices]: explicit breakpoints (4), 5-minute TTL (1 h optional), reads 0.1×, writes 1.25×."""
    return CacheRule(
        min_prefix_tokens=min_prefix,
        increment_tokens=None,
        max_breakpoints=4,
        automatic=False,
        ttl_seconds=300,
        max_ttl_seconds=3600,
        read_multiplier=0.1,
        write_multiplier=1.25,
    )


_DOCS = "https://platform.claude.com/docs/en/models/"
_PRICES = "https://docs.electronhub.ai/guides/prompt-caching"
_WINDOW = "https://docs.rs/matrixcode-core/0.4.43/matrixcode_core/models/fn.context_window_for.html"


def _claude(
    name: str, max_output: int | None, price: tuple[float, float] | None, min_cache: int | None, *sources: str
) -> ModelProfile:
    pricing = Pricing(price[0], price[1], round(price[0] * 0.1, 6)) if price else Pricing()
    return ModelProfile(
        name,
        "anthropic",
        200_000,  # [models] / [window]
        max_output,
        APPROX,
        image=AREA,
        cache=_cache(min_cache) if min_cache else None,
        pricing=pricing,
        sources=sources,
    )


ANTHROPIC_PROFILES: tuple[ModelProfile, ...] = (
    _claude("claude-opus-4-5", 64_000, (5.0, 25.0), 4096, _DOCS + "opus-4-5/overview"),
    _claude("claude-sonnet-4-5", 64_000, (3.0, 15.0), 1024, _DOCS + "sonnet-4-5/overview"),
    _claude("claude-haiku-4-5", 64_000, (1.0, 5.0), 4096, _DOCS + "haiku-4-5/overview"),
    _claude("claude-opus-4-1", None, (15.0, 75.0), 1024, _PRICES, _WINDOW),
    _claude("claude-opus-4", None, (15.0, 75.0), 1024, _PRICES, _WINDOW),
    _claude("claude-sonnet-4", None, (3.0, 15.0), 1024, _PRICES, _WINDOW),
    _claude("claude-3-7-sonnet", None, (3.0, 15.0), 1024, _PRICES, _WINDOW),
    _claude("claude-3-5-sonnet", None, None, None, _WINDOW),
    _claude(
        "claude-3-5-haiku",
        8_192,
        (0.80, 4.0),
        2048,
        _PRICES,
        "https://github.com/xsyetopz/claudetto/wiki/Claude-Code-Models-Catalog",
    ),
    _claude("claude-3-haiku", None, (0.25, 1.25), 2048, _PRICES, _WINDOW),
)
