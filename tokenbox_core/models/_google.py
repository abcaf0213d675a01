"""Google Gemini profiles, each figure with the public page it comes from.

Gemini's tokenizer is not public ("a token is equivalent to about 4 characters":
https://ai.google.dev/gemini-api/docs/tokens), so text is counted approximately with the seed's 30% margin.

[2.0]     https://ai.google.dev/gemini-api/docs/models/gemini-2.0-flash — input limit 1,048,576, output 8,192
          (same for gemini-2.0-flash-lite: .../models/gemini-2.0-flash-lite)
[2.5]     https://cloud.google.com/vertex-ai/generative-ai/docs/models/gemini/2-5-flash — maximum input tokens
          1,048,576, maximum output 65,535
[1.5]     https://huggingface.co/spaces/SE-Arena/Software-Engineering-Arena/blob/main/context_window.json —
          gemini-1.5-pro-latest 2,097,152, gemini-1.5-flash-latest 1,048,576 (third party)
[media]   https://ai.google.dev/gemini-api/docs/tokens (as quoted at
          https://geminibyexample.com/027-calculate-input-tokens/): images with both sides ≤ 384 px cost 258
          tokens, larger images are cropped and scaled into 768×768 tiles of 258 tokens each; video 263 tokens
          per second; audio 32 tokens per second
[cache]   https://ai.google.dev/gemini-api/docs/caching — implicit caching minimum 1,024 tokens for 2.5 Flash
          and 4,096 for 2.5 Pro (a later revision lists 2,048 for both); explicit caches live 1 hour unless a
          TTL is set.  The cached-token price multiplier was not found.
[2.5-pro] https://docs.cloud.jpsovereigncloud.jp/en-us/iaas/Content/generative-ai/google-gemini-2-5-pro.htm (Oracle's
          page for google.gemini-2.5-pro) — maximum input tokens 1,048,576, maximum output 65,536
"""

from __future__ import annotations

from tokenbox_core.models._profile import CacheRule, CountingRule, ModelProfile
from tokenbox_core.models._rules import AudioRule, GeminiTileRule, VideoRule

__all__ = ["GOOGLE_PROFILES"]

APPROX = CountingRule("approximate")
IMAGE = GeminiTileRule(tile_tokens=258, small_side=384, tile_size=768)  # [media]
AUDIO = AudioRule(32.0)  # [media]
VIDEO = VideoRule(263.0, default_fps=1.0)  # [media]


def _cache(min_prefix: int | None) -> CacheRule | None:
    if min_prefix is None:
        return None
    return CacheRule(min_prefix_tokens=min_prefix, automatic=True, ttl_seconds=3600)  # [cache]


def _gemini(name: str, window: int, max_output: int | None, min_cache: int | None, source: str) -> ModelProfile:
    return ModelProfile(
        name,
        "google",
        window,
        max_output,
        APPROX,
        image=IMAGE,
        audio=AUDIO,
        video=VIDEO,
        cache=_cache(min_cache),
        sources=(source, "https://ai.google.dev/gemini-api/docs/tokens"),
    )


_ORACLE_25_PRO = "https://docs.cloud.jpsovereigncloud.jp/en-us/iaas/Content/generative-ai/google-gemini-2-5-pro.htm"
_VERTEX_25 = "https://cloud.google.com/vertex-ai/generative-ai/docs/models/gemini/2-5-flash"
_AI_DEV = "https://ai.google.dev/gemini-api/docs/models/"
_ARENA = "https://huggingface.co/spaces/SE-Arena/Software-Engineering-Arena/blob/main/context_window.json"

GOOGLE_PROFILES: tuple[ModelProfile, ...] = (
    _gemini("gemini-2.5-pro", 1_048_576, 65_536, 4096, _ORACLE_25_PRO),
    _gemini("gemini-2.5-flash", 1_048_576, 65_535, 1024, _VERTEX_25),
    _gemini("gemini-2.0-flash", 1_048_576, 8_192, None, _AI_DEV + "gemini-2.0-flash"),
    _gemini("gemini-2.0-flash-lite", 1_048_576, 8_192, None, _AI_DEV + "gemini-2.0-flash-lite"),
    _gemini("gemini-1.5-pro", 2_097_152, None, None, _ARENA),
    _gemini("gemini-1.5-flash", 1_048_576, None, None, _ARENA),
)
