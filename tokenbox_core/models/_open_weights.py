"""Open-weight and other API families: Meta Llama, Mistral, DeepSeek, Qwen.

Their tokenizers are not tiktoken encodings: text is counted approximately (chars/4, +30%) unless the user
registers the model's local tokenizer.json (``register_model(name, tokenizer_file=...)``, extra
``tokenbox-context[hf]``).  None of these families is given an image rule here (their vision variants are
separate models with unpublished token rules).

[llama]    https://github.com/scaleway/docs-content/commit/c8a89107383cd9ea3cd69b56c65e66ecdcb91dc2 —
           llama-3.1-8b-instruct 128k; llama-3.3-70b-instruct 131k (provider limits);
           https://huggingface.co/spaces/SE-Arena/Software-Engineering-Arena/blob/main/context_window.json —
           llama-3.1-8b/70b/405b and llama-3.3-70b 128000.  128,000 is used.
[mistral]  https://developers.llamaindex.ai/typescript/framework-api-reference/variables/all_available_mistral_models
           — mistral-large-latest 131,000, codestral-latest 256,000, mistral-small-latest 32,000 (LlamaIndex's
           table; later Mistral Small releases may be larger); Mistral Large 2 "128k context window":
           https://ollama.com/library/mistral-large; mistral-nemo 128k: the [llama] scaleway table.
           Cached prompt tokens billed at 10% of input: https://docs.mistral.ai/studio-api/conversations/advanced/prompt-caching
[deepseek] https://api-docs.deepseek.com/quick_start/pricing-details-usd — deepseek-chat 64K context, 8K max
           output, $0.07 cache hit / $0.27 miss / $1.10 output; deepseek-reasoner 64K, 8K output,
           $0.14 / $0.55 / $2.19.  (Later DeepSeek releases list 128K:
           https://raw.githubusercontent.com/RooCodeInc/Roo-Code/main/packages/types/src/providers/deepseek.ts;
           the documented 64K is kept as the safe figure.)
[qwen]     https://huggingface.co/Qwen/Qwen2.5-32B-instruct — "Context Length: Full 131,072 tokens and
           generation 8192 tokens" (beyond 32,768 needs YaRN enabled:
           https://huggingface.co/Qwen/Qwen2.5-72B-Instruct-GGUF/discussions/2)
"""

from __future__ import annotations

from tokenbox_core.models._profile import CacheRule, CountingRule, ModelProfile, Pricing

__all__ = ["OPEN_WEIGHT_PROFILES"]

APPROX = CountingRule("approximate")

_SCALEWAY = "https://github.com/scaleway/docs-content/commit/c8a89107383cd9ea3cd69b56c65e66ecdcb91dc2"
_ARENA = "https://huggingface.co/spaces/SE-Arena/Software-Engineering-Arena/blob/main/context_window.json"
_LI_MISTRAL = (
    "https://developers.llamaindex.ai/typescript/framework-api-reference/variables/all_available_mistral_models"
)
_DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing-details-usd"
_QWEN = "https://huggingface.co/Qwen/Qwen2.5-32B-instruct"
_MISTRAL_CACHE = CacheRule(min_prefix_tokens=1, automatic=True, read_multiplier=0.1)  # [mistral]; no minimum published


def _deepseek_cache(hit: float, miss: float) -> CacheRule:
    return CacheRule(min_prefix_tokens=1, automatic=True, read_multiplier=round(hit / miss, 4))


OPEN_WEIGHT_PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile(
        "llama-3.1", "meta", 128_000, None, APPROX, aliases=("llama3.1", "meta-llama-3.1"), sources=(_ARENA, _SCALEWAY)
    ),
    ModelProfile("llama-3.3", "meta", 128_000, None, APPROX, aliases=("llama3.3", "meta-llama-3.3"), sources=(_ARENA,)),
    ModelProfile("mistral-large", "mistral", 131_000, None, APPROX, cache=_MISTRAL_CACHE, sources=(_LI_MISTRAL,)),
    ModelProfile("codestral", "mistral", 256_000, None, APPROX, cache=_MISTRAL_CACHE, sources=(_LI_MISTRAL,)),
    ModelProfile("mistral-small", "mistral", 32_000, None, APPROX, cache=_MISTRAL_CACHE, sources=(_LI_MISTRAL,)),
    ModelProfile(
        "mistral-nemo", "mistral", 128_000, None, APPROX, aliases=("open-mistral-nemo",), sources=(_SCALEWAY,)
    ),
    ModelProfile(
        "deepseek-chat",
        "deepseek",
        64_000,
        8_000,
        APPROX,
        cache=_deepseek_cache(0.07, 0.27),
        pricing=Pricing(0.27, 1.10, 0.07),
        aliases=("deepseek-v3",),
        sources=(_DEEPSEEK,),
    ),
    ModelProfile(
        "deepseek-reasoner",
        "deepseek",
        64_000,
        8_000,
        APPROX,
        cache=_deepseek_cache(0.14, 0.55),
        pricing=Pricing(0.55, 2.19, 0.14),
        aliases=("deepseek-r1",),
        sources=(_DEEPSEEK,),
    ),
    ModelProfile("qwen2.5", "qwen", 131_072, 8_192, APPROX, aliases=("qwen-2.5",), sources=(_QWEN,)),
)
