"""OpenAI model profiles, each figure with the public page it comes from.

Sources (read for this table; "not found" means no page with the figure was found, and the field is None):

[models]    https://developers.openai.com/api/docs/models/<id> (model pages: window, max output, prices)
[gpt4]      https://developers.openai.com/api/docs/models/gpt-4 — 8,192 window, 8,192 output, $30/$60
[gpt5]      https://developers.openai.com/api/docs/models/gpt-5-codex — "400,000 context window, 128,000 max
            output tokens", GPT-5 $1.25 input, $0.125 cached, $10 output; window also
            https://vercel.com/ai-gateway/models/gpt-5/faq ("400K tokens")
[gpt5fam]   https://nativeai.agency/hub/tools/openai-api/model-families — GPT-5 mini 400K $0.25/$2.00, GPT-5 nano
            400K $0.05/$0.40, GPT-4.1 $2/$8, GPT-4.1 mini $0.40/$1.60, o3 200K $2/$8, o4-mini 200K $1.10/$4.40
            (third-party summary of the pricing page)
[gpt41]     https://vercel.com/ai-gateway/models/gpt-4.1-fast.md (and -mini-fast, -nano-fast): context window
            1,047,576, maximum output 32,768; cached input $0.50 (gpt-4.1):
            https://gist.github.com/ei-grad/9a7c000f3487bc01221c7bb5e2b3d74a (LiteLLM table, Apr 2025)
[gpt4o]     https://github.com/CommitBrief/commitbrief/wiki/Provider-OpenAI — gpt-4o $2.50/$10.00/$1.25 cached,
            gpt-4o-mini $0.15/$0.60/$0.075, both 128,000 (from openai.com/api/pricing);
            gpt-4o-mini 16,384 max output: https://www.picksbymodel.com/models/openai-gpt-4o-mini/
[o-series]  https://github.com/RooCodeInc/Roo-Code/pull/2691.patch (citing platform.openai.com/docs/models/o3 and
            /o4-mini): o3 and o4-mini 200,000 window, 100,000 max output, o4-mini cached $0.275;
            https://openrouter.ai/openai/o3-mini — o3-mini 200,000 context, $1.10/$4.40, no vision;
            o1 200K: https://docs.rs/matrixcode-core/0.4.43/matrixcode_core/models/fn.context_window_for.html;
            o1 $15 input: https://community.openai.com/t/vision-more-than-one-way-to-send-a-request-undocumented-and-different-pricing-realized/1262691
[seed]      seed token-budget-calculator.txt — gpt-4-turbo 128,000, gpt-3.5-turbo(-16k) 16,385
[gpt35]     https://gist.github.com/ivanpepelko/af4199fa0d1054b54af0cde03a972fea — gpt-3.5-turbo-0125 $0.50/$1.50
[images]    https://platform.openai.com/docs/guides/images-vision (read through the mirror
            https://openai-hd4n6.mintlify.app/docs/guides/images): low detail 85 tokens; high: fit 2048 square,
            shortest side 768, 170 per 512 px tile + 85; patch rule: 32 px patches, cap 1,536, ×1.62 for
            gpt-4.1-mini, ×2.46 for gpt-4.1-nano; worked examples 1024×1024 → 765, 2048×4096 → 1105,
            4096×8192 low → 85 (quoted at https://a64.in/tools/openai-vision-cost-calculator.html)
[img-fam]   per-family base/tile tokens (gpt-5 70/140, o1/o3 75/150, gpt-4o-mini 2833/5667, gpt-4.1 and 4o 85/170):
            https://github.com/jamesmcroft/openai-image-token-calculator (tests and model store) and the billing
            measurements in the [o-series] community thread (gpt-4o-mini low 2845 and high 8512 for a 128×64 image
            with ~12 text tokens = 2833 base + 5667 per tile; o3 86/236 = 75 base + 150 per tile)
[patch-mul] o4-mini ×1.72; gpt-5-mini ×1.62 and gpt-5-nano ×2.46 in the docs, while OpenAI's pricing calculator
            and billing use ×1.2 / ×1.5: https://community.openai.com/t/gpt-5-mini-image-input-token-calculation-discrepancy-with-official-faq-formula/1344040
            and .../introducing-gpt-5-4-mini-and-nano-our-most-capable-small-models-yet/1377015.  The documented
            (larger) multipliers are used, so budgets stay upper bounds.
[cache]     https://developers.openai.com/api/docs/guides/prompt-caching — automatic for prompts of 1024 tokens
            or more, gpt-4o and newer; increments of 128 tokens:
            https://raw.githubusercontent.com/openai/openai-cookbook/main/examples/Prompt_Caching_201.ipynb;
            "typically cleared within 5-10 minutes of inactivity and always removed within one hour":
            https://learn.microsoft.com/en-us/azure/ai-foundry/openai/how-to/prompt-caching
[audio]     ~10 audio tokens per second: https://tools.gera.services/audio-token-cost-estimator (third party; OpenAI
            publishes per-token audio prices but no per-second token rate was found)
"""

from __future__ import annotations

from tokenbox_core.models._profile import CacheRule, CountingRule, ModelProfile, Pricing
from tokenbox_core.models._rules import AudioRule, PatchRule, TileRule

__all__ = ["OPENAI_PROFILES"]

O200K = CountingRule("tiktoken", encoding="o200k_base")
CL100K = CountingRule("tiktoken", encoding="cl100k_base")

# [images] / [img-fam]
TILES_4O = TileRule(base_tokens=85, tile_tokens=170)
TILES_4O_MINI = TileRule(base_tokens=2833, tile_tokens=5667)
TILES_GPT5 = TileRule(base_tokens=70, tile_tokens=140)
TILES_O_SERIES = TileRule(base_tokens=75, tile_tokens=150)


def _cache(read: float | None) -> CacheRule:
    """[cache]: automatic, 1024-token minimum, 128-token steps, 5-10 min idle TTL, one hour at most."""
    return CacheRule(
        min_prefix_tokens=1024,
        increment_tokens=128,
        max_breakpoints=None,
        automatic=True,
        ttl_seconds=300,
        max_ttl_seconds=3600,
        read_multiplier=read,
        write_multiplier=1.0,
    )


def _ratio(cached: float, fresh: float) -> float:
    return round(cached / fresh, 4)


_OAI = "https://developers.openai.com/api/docs/models/"

OPENAI_PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile(
        "gpt-5",
        "openai",
        400_000,
        128_000,
        O200K,
        image=TILES_GPT5,  # [gpt5], [img-fam]
        cache=_cache(_ratio(0.125, 1.25)),
        pricing=Pricing(1.25, 10.0, 0.125),
        aliases=("gpt-5-chat-latest",),
        sources=(_OAI + "gpt-5-codex",),
    ),
    ModelProfile(
        "gpt-5-mini",
        "openai",
        400_000,
        None,
        O200K,
        image=PatchRule(multiplier=1.62),  # [gpt5fam], [patch-mul]
        cache=_cache(None),
        pricing=Pricing(0.25, 2.0),
        sources=("https://nativeai.agency/hub/tools/openai-api/model-families",),
        notes="max output and cached price not found; image multiplier documented 1.62, billed 1.2",
    ),
    ModelProfile(
        "gpt-5-nano",
        "openai",
        400_000,
        None,
        O200K,
        image=PatchRule(multiplier=2.46),  # [gpt5fam], [patch-mul]
        cache=_cache(None),
        pricing=Pricing(0.05, 0.40),
        sources=("https://nativeai.agency/hub/tools/openai-api/model-families",),
        notes="max output and cached price not found; image multiplier documented 2.46, billed 1.5",
    ),
    ModelProfile(
        "gpt-4.1",
        "openai",
        1_047_576,
        32_768,
        O200K,
        image=TILES_4O,  # [gpt41], [img-fam]
        cache=_cache(_ratio(0.50, 2.0)),
        pricing=Pricing(2.0, 8.0, 0.50),
        sources=("https://vercel.com/ai-gateway/models/gpt-4.1-fast.md",),
    ),
    ModelProfile(
        "gpt-4.1-mini",
        "openai",
        1_047_576,
        32_768,
        O200K,
        image=PatchRule(multiplier=1.62),  # [gpt41], [images]
        cache=_cache(None),
        pricing=Pricing(0.40, 1.60),
        sources=("https://vercel.com/ai-gateway/models/gpt-4.1-mini-fast.md",),
    ),
    ModelProfile(
        "gpt-4.1-nano",
        "openai",
        1_047_576,
        32_768,
        O200K,
        image=PatchRule(multiplier=2.46),  # [gpt41], [images]
        cache=_cache(None),
        pricing=Pricing(0.10),
        sources=("https://vercel.com/ai-gateway/models/gpt-4.1-nano-fast.md",),
        notes="output price not found",
    ),
    ModelProfile(
        "gpt-4o",
        "openai",
        128_000,
        16_384,
        O200K,
        image=TILES_4O,  # [gpt4o], [images]
        cache=_cache(_ratio(1.25, 2.50)),
        pricing=Pricing(2.50, 10.0, 1.25),
        aliases=("chatgpt-4o-latest",),
        sources=("https://github.com/CommitBrief/commitbrief/wiki/Provider-OpenAI",),
    ),
    ModelProfile(
        "gpt-4o-mini",
        "openai",
        128_000,
        16_384,
        O200K,
        image=TILES_4O_MINI,  # [gpt4o], [img-fam]
        cache=_cache(_ratio(0.075, 0.15)),
        pricing=Pricing(0.15, 0.60, 0.075),
        sources=("https://www.picksbymodel.com/models/openai-gpt-4o-mini/",),
    ),
    ModelProfile(
        "gpt-4o-audio-preview",
        "openai",
        128_000,
        16_384,
        O200K,
        image=None,  # [audio]
        audio=AudioRule(10.0, official=False),
        aliases=("gpt-audio", "gpt-4o-realtime-preview", "gpt-realtime"),
        sources=("https://tools.gera.services/audio-token-cost-estimator",),
        notes="audio rate is a third-party estimate (about 10 tokens per second)",
    ),
    ModelProfile(
        "o1",
        "openai",
        200_000,
        None,
        O200K,
        image=TILES_O_SERIES,  # [o-series], [img-fam]
        cache=_cache(None),
        pricing=Pricing(15.0),
        aliases=("o1-pro",),
        sources=("https://docs.rs/matrixcode-core/0.4.43/matrixcode_core/models/fn.context_window_for.html",),
    ),
    ModelProfile(
        "o3",
        "openai",
        200_000,
        100_000,
        O200K,
        image=TILES_O_SERIES,  # [o-series], [gpt5fam]
        cache=_cache(None),
        pricing=Pricing(2.0, 8.0),
        sources=("https://github.com/RooCodeInc/Roo-Code/pull/2691.patch",),
    ),
    ModelProfile(
        "o3-mini",
        "openai",
        200_000,
        None,
        O200K,
        image=None,  # [o-series]: no vision
        cache=_cache(None),
        pricing=Pricing(1.10, 4.40),
        sources=("https://openrouter.ai/openai/o3-mini",),
    ),
    ModelProfile(
        "o4-mini",
        "openai",
        200_000,
        100_000,
        O200K,
        image=PatchRule(multiplier=1.72),  # [o-series], [patch-mul]
        cache=_cache(_ratio(0.275, 1.10)),
        pricing=Pricing(1.10, 4.40, 0.275),
        sources=("https://github.com/RooCodeInc/Roo-Code/pull/2691.patch",),
    ),
    ModelProfile(
        "gpt-4-turbo",
        "openai",
        128_000,
        None,
        CL100K,
        image=TILES_4O,  # [seed], [img-fam]
        pricing=Pricing(10.0),
        aliases=("gpt-4-turbo-preview", "gpt-4-vision-preview"),
        sources=("seed token-budget-calculator.txt",),
    ),
    ModelProfile(
        "gpt-4",
        "openai",
        8_192,
        8_192,
        CL100K,
        pricing=Pricing(30.0, 60.0),  # [gpt4]
        sources=(_OAI + "gpt-4",),
    ),
    ModelProfile(
        "gpt-3.5-turbo",
        "openai",
        16_385,
        None,
        CL100K,
        pricing=Pricing(0.50, 1.50),  # [seed], [gpt35]
        aliases=("gpt-3.5-turbo-16k", "gpt-35-turbo"),
        sources=("seed token-budget-calculator.txt",),
    ),
)
