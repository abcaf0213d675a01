"""Prompt-cache rules of the providers, as the cache simulator applies them.

Each preset names its sources by tag; the figures are what those sources state,
read on the date given.  Where a source gives a range, the simulator takes the
end that promises less (a shorter life, a smaller hit).

[oai-guide] OpenAI prompt-caching guide (platform.openai.com/docs/guides/prompt-caching, as mirrored in
    voxmenthe/prompts ``OPENAI_DOCS_MIRROR/.../prompt-caching/index.md``, read 2026-11-27): automatic for
    prompts of 1,024 tokens or more, "cache hits occurring in increments of 128 tokens" (1024, 1152,
    1280, ...); exact prefix match; requests are routed by a hash of the prompt's first ~256 tokens, and
    ``prompt_cache_key`` "is combined with the prefix hash, allowing you to influence routing"; above
    ~15 requests per minute per prefix and key some requests overflow to other machines (not simulated:
    the guide gives no rule); retention ``in_memory`` keeps prefixes "5 to 10 minutes of inactivity, up
    to a maximum of one hour"; ``24h`` (extended retention) "keeps cached prefixes active for longer, up
    to a maximum of 24 hours" (no idle limit is stated, so the simulator uses 24 hours for both: the best
    case).  Newer revision (developers.openai.com/api/docs/guides/prompt-caching, read 2026-11-27):
    "Cache writes have no additional fee on models before the GPT-5.6 family. For GPT-5.6 models and
    later model families, cache writes cost 1.25× the uncached input token rate."
[oai-sdk] ``openai`` Python SDK at commit e43b422 (2026-08-21), ``types/chat/completion_create_params.py``:
    ``prompt_cache_retention: Literal["in_memory", "24h"]`` (deprecated in favour of
    ``prompt_cache_options.ttl``; "For gpt-5.5, gpt-5.5-pro, and future models, only 24h is supported");
    ``prompt_cache_options`` is "Supported for gpt-5.6 and later models. By default, OpenAI automatically
    chooses one implicit cache breakpoint. You can add explicit breakpoints to content blocks with
    ``prompt_cache_breakpoint``. Each request can write up to four breakpoints. For cache matching,
    OpenAI considers up to the latest 80 breakpoints in the conversation, without a content-block lookback
    limit."  ``mode="implicit"`` writes the implicit breakpoint and "up to the latest three explicit
    breakpoints"; ``mode="explicit"`` writes "up to the latest four explicit breakpoints. If there are no
    explicit breakpoints, the request does not use prompt caching."  ``ttl`` "defaults to ``30m``, which is
    currently the only supported value" and is a minimum ("The backend may retain cache entries for
    longer").  A breakpoint's "boundary is not rounded to a token block"
    (``chat_completion_content_part_text_param.py``).  Where the implicit breakpoint goes is not in the SDK;
    LangChain4j's ``OpenAiOfficialPromptCacheOptions`` documents "a breakpoint at the end of the newest
    eligible message" (docs.langchain4j.dev, read 2026-11-27), which the simulator uses.
[oai-price] GPT-5.5 and GPT-5.6 list prices $5.00 input and $0.50 cached input per million tokens (third-party
    price tables: TheKrush/PromptFuel release v1.0.17, ShellPilot ``PriceTable.psd1``; not an OpenAI page).
[ant-docs] Anthropic prompt caching (platform.claude.com/docs/en/build-with-claude/prompt-caching), quoted
    verbatim in a public research note dated 2026-07-30 (read 2026-11-27): at most 4 breakpoints per request;
    "The lookback window is 20 blocks. The system checks at most 20 positions per breakpoint, counting the
    breakpoint itself as the first. If the system finds no matching entry in that window, checking stops
    (or resumes from the next explicit breakpoint, if any)" — worked example: a write at block 10 is found
    from a breakpoint at block 15 and missed from one at block 35; automatic caching: "Add a single
    ``cache_control`` field at the top level of your request. The system automatically applies the cache
    breakpoint to the last cacheable block and moves it forward as conversations grow" (a no-op when the
    last block already carries the same breakpoint, an HTTP 400 when 4 explicit breakpoints exist); TTL 5
    minutes by default or 1 hour (``"ttl": "1h"``), refreshed on use; writes 1.25× (5 minutes) or 2×
    (1 hour) the base input price, reads 0.1×; minimum cacheable prefix per model in ``CLAUDE_MIN_PREFIX``.
[ant-sdk] ``anthropic`` Python SDK at commit 009b035 (2026-08-07): top-level
    ``cache_control: CacheControlEphemeralParam`` ("Top-level cache control automatically applies a
    cache_control marker to the last cacheable block in the request"), ``ttl: Literal["5m", "1h"]``;
    ``usage.cache_creation.ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``; beta
    ``diagnostics.cache_miss_reason`` of type ``model_changed``, ``system_changed``, ``tools_changed``,
    ``messages_changed`` (each with ``cache_missed_input_tokens``), ``previous_message_not_found`` or
    ``unavailable``.
[ant-min] Minimum cacheable prefix: the [ant-docs] table, the same figures in dev.to/creeta "Claude's prompt
    cache fails silently below 1,024 tokens" (2026) and, for the 4.x models, in anthropic-sdk-python issue
    #1194 (docs.orq.ai lists 2,048 for Sonnet 4.6; the two newer sources say 1,024, used here).
[gemini] Gemini implicit caching: automatic, minimum 1,024 tokens (2.5 Flash) or 2,048 (2.5 Pro), cached
    tokens billed at a 75 % discount (90 % on 2.5+ models).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, replace
from typing import Literal

from tokenbox_core.errors import BudgetError

__all__ = ["CLAUDE_MIN_PREFIX", "CacheRules", "cache_rules", "claude_min_prefix", "rule_names"]

Mode = Literal["automatic", "breakpoints"]
Retention = Literal["in_memory", "24h"]


@dataclass(frozen=True)
class CacheRules:
    """How one provider caches prompt prefixes and bills them.

    Attributes:
        provider: a label for reports.
        mode: ``"automatic"`` (every prompt's prefix is cached; OpenAI before GPT-5.6, Gemini) or
            ``"breakpoints"`` (only prefixes ending at a breakpoint are written and read; Anthropic,
            OpenAI GPT-5.6 and later).
        min_tokens: a prefix shorter than this is never cached.
        increment: cached lengths are rounded down to a multiple of this.
        max_breakpoints: most breakpoints a request may write (the provider's own included).
        lookback_blocks: positions checked per breakpoint, the breakpoint itself first (``None``: no limit).
        ttl_seconds: an entry unused for longer expires.
        read_multiplier: price of a cached token relative to an uncached one.
        write_multiplier: price of a token written to the cache (breakpoint mode).
        input_price: price per million uncached input tokens (for reports).
        max_age_seconds: an entry older than this expires however often it is used (``None``: no limit).
        implicit_breakpoints: breakpoints the provider adds itself on the last block (1 for OpenAI's
            implicit mode and Anthropic's top-level ``cache_control``, else 0).
        max_entries: breakpoints of a conversation the provider considers for a hit (``None``: all).
        marker: the content-part field that marks a breakpoint in a request.
        keyed: requests route by ``prompt_cache_key`` (OpenAI).
        name: the preset's name, for reports.
    """

    provider: str
    mode: Mode = "automatic"
    min_tokens: int = 1024
    increment: int = 1
    max_breakpoints: int = 0
    lookback_blocks: int | None = 0
    ttl_seconds: float = 300.0
    read_multiplier: float = 0.5
    write_multiplier: float = 1.0
    input_price: float = 1.0
    max_age_seconds: float | None = None
    implicit_breakpoints: int = 0
    max_entries: int | None = None
    marker: str = "cache_control"
    keyed: bool = False
    name: str = ""

    def __post_init__(self) -> None:
        if self.mode not in ("automatic", "breakpoints"):
            raise BudgetError(f"mode must be 'automatic' or 'breakpoints', got {self.mode!r}")
        for key in ("min_tokens", "increment", "max_breakpoints", "implicit_breakpoints"):
            _count(key, getattr(self, key))
        for key in ("lookback_blocks", "max_entries"):
            if getattr(self, key) is not None:
                _count(key, getattr(self, key))
        if self.increment < 1:
            raise BudgetError(f"increment must be >= 1, got {self.increment}")
        if self.implicit_breakpoints > max(self.max_breakpoints, 0) and self.mode == "breakpoints":
            raise BudgetError(
                f"implicit_breakpoints ({self.implicit_breakpoints}) cannot exceed max_breakpoints "
                f"({self.max_breakpoints}): the provider's own breakpoints count toward the limit"
            )
        for key in ("ttl_seconds", "read_multiplier", "write_multiplier", "input_price", "max_age_seconds"):
            value = getattr(self, key)
            if value is None and key == "max_age_seconds":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise BudgetError(f"{key} must be a finite number >= 0, got {value!r}")
        if self.marker not in ("cache_control", "prompt_cache_breakpoint"):
            raise BudgetError(f"marker must be 'cache_control' or 'prompt_cache_breakpoint', got {self.marker!r}")

    def with_discount(self, discount: float) -> CacheRules:
        """The same rules with cached reads billed at ``1 - discount`` of the base price."""
        if not 0 <= discount <= 1:
            raise BudgetError(f"discount must be between 0 and 1, got {discount!r}")
        return replace(self, read_multiplier=1 - discount)

    def with_retention(self, retention: Retention) -> CacheRules:
        """OpenAI's ``prompt_cache_retention``: ``"in_memory"`` (5 minutes idle, an hour at most) or ``"24h"``.

        >>> cache_rules("openai").with_retention("24h").ttl_seconds
        86400.0
        """
        if not self.keyed:
            raise BudgetError(
                f"prompt_cache_retention is an OpenAI parameter; the {self.provider!r} rules have no retention "
                f"policy (use their TTL presets, e.g. 'anthropic-1h')"
            )
        if retention == "in_memory":
            return replace(self, ttl_seconds=300.0, max_age_seconds=3600.0, name=_renamed(self.name, ""))
        if retention == "24h":
            return replace(self, ttl_seconds=86400.0, max_age_seconds=86400.0, name=_renamed(self.name, "-24h"))
        raise BudgetError(f"prompt_cache_retention must be 'in_memory' or '24h', got {retention!r}")


def _renamed(name: str, suffix: str) -> str:
    base = name.removesuffix("-24h")
    return base + suffix if base else ""


def _count(key: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BudgetError(f"{key} must be an integer >= 0, got {value!r}")


_OPENAI = CacheRules(  # [oai-guide]: in-memory retention, free writes, 50 % off reads (GPT-4o)
    "openai",
    "automatic",
    min_tokens=1024,
    increment=128,
    ttl_seconds=300.0,
    max_age_seconds=3600.0,
    read_multiplier=0.5,
    input_price=2.5,
    keyed=True,
    name="openai",
)
_OPENAI_56 = CacheRules(  # [oai-sdk] / [oai-guide] / [oai-price]: GPT-5.6 and later
    "openai",
    "breakpoints",
    min_tokens=1024,
    increment=1,
    max_breakpoints=4,
    lookback_blocks=None,
    ttl_seconds=1800.0,
    read_multiplier=0.1,
    write_multiplier=1.25,
    input_price=5.0,
    implicit_breakpoints=1,
    max_entries=80,
    marker="prompt_cache_breakpoint",
    keyed=True,
    name="openai-gpt-5.6",
)
_ANTHROPIC = CacheRules(  # [ant-docs]
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
    name="anthropic",
)
_HOUR, _HOUR_WRITE = 3600.0, 2.0  # [ant-docs]: "ttl": "1h", writes 2× the base input price

_PRESETS: dict[str, CacheRules] = {
    "openai": _OPENAI,
    "openai-in-memory": replace(_OPENAI, name="openai-in-memory"),
    "openai-24h": _OPENAI.with_retention("24h"),
    "openai-gpt-4.1": replace(_OPENAI, read_multiplier=0.25, input_price=2.0, name="openai-gpt-4.1"),
    "openai-gpt-5": replace(_OPENAI, read_multiplier=0.1, input_price=1.25, name="openai-gpt-5"),
    "openai-gpt-5.5": replace(  # [oai-sdk]: only 24h retention from gpt-5.5 on; [oai-price]: $5.00, $0.50 cached
        _OPENAI,
        read_multiplier=0.1,
        input_price=5.0,
        ttl_seconds=86400.0,
        max_age_seconds=86400.0,
        name="openai-gpt-5.5",
    ),
    "openai-gpt-5.6": _OPENAI_56,
    "openai-gpt-5.6-explicit": replace(_OPENAI_56, implicit_breakpoints=0, name="openai-gpt-5.6-explicit"),
    "anthropic": _ANTHROPIC,
    "anthropic-1h": replace(_ANTHROPIC, ttl_seconds=_HOUR, write_multiplier=_HOUR_WRITE, name="anthropic-1h"),
    "anthropic-auto": replace(_ANTHROPIC, implicit_breakpoints=1, name="anthropic-auto"),
    "anthropic-auto-1h": replace(
        _ANTHROPIC, implicit_breakpoints=1, ttl_seconds=_HOUR, write_multiplier=_HOUR_WRITE, name="anthropic-auto-1h"
    ),
    "gemini": CacheRules(  # [gemini]
        "gemini",
        "automatic",
        min_tokens=1024,
        increment=1,
        ttl_seconds=300.0,
        read_multiplier=0.25,
        input_price=1.25,
        name="gemini",
    ),
}

CLAUDE_MIN_PREFIX: tuple[tuple[str, int], ...] = (
    ("claude-opus-5", 512),
    ("claude-fable-5", 512),
    ("claude-mythos-5", 512),
    ("claude-opus-4-8", 1024),
    ("claude-sonnet-5", 1024),
    ("claude-sonnet-4-6", 1024),
    ("claude-sonnet-4-5", 1024),
    ("claude-opus-4-7", 2048),
    ("claude-mythos-preview", 2048),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-opus-4-1", 1024),
    ("claude-opus-4", 1024),
    ("claude-sonnet-4", 1024),
    ("claude-3-7-sonnet", 1024),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
"""[ant-min] The shortest prefix each Claude model caches, by model-name prefix (the longest prefix wins)."""

_GPT = re.compile(r"gpt-(\d+)(?:\.(\d+))?")


def rule_names() -> list[str]:
    """The preset names :func:`cache_rules` accepts (besides model names)."""
    return sorted(_PRESETS)


def claude_min_prefix(model: str) -> int | None:
    """[ant-min] The minimum cacheable prefix of a Claude model, or ``None`` when the docs list no such model.

    >>> claude_min_prefix("claude-haiku-4-5-20251001"), claude_min_prefix("anthropic/claude-opus-4.1")
    (4096, 1024)
    """
    name = model.lower().rsplit("/", 1)[-1].replace(".", "-")
    for prefix, tokens in sorted(CLAUDE_MIN_PREFIX, key=lambda row: -len(row[0])):
        if name == prefix or name.startswith(prefix + "-") or name.startswith(prefix + "@"):
            return tokens
    return None


def cache_rules(provider_or_model: str) -> CacheRules:
    """Rules for a preset (:func:`rule_names`) or a model name.

    Model names map by family: ``claude-*`` → Anthropic with the model's minimum prefix, ``gemini-*`` →
    Gemini with its profile's minimum, ``gpt-5.6`` and later → OpenAI's breakpoint rules, ``gpt-5.5`` → 24-hour
    retention at a 90 % discount, other ``gpt-5*`` → 90 %, ``gpt-4.1*`` → 75 %, other ``gpt-*`` and ``o*`` → 50 %.

    >>> cache_rules("claude-sonnet-4-5").max_breakpoints
    4
    >>> cache_rules("claude-haiku-4-5").min_tokens
    4096
    >>> cache_rules("gpt-5.6-sol").name
    'openai-gpt-5.6'
    """
    if not isinstance(provider_or_model, str) or not provider_or_model:
        raise BudgetError(f"provider or model must be a non-empty string, got {provider_or_model!r}")
    name = provider_or_model.lower()
    if name in _PRESETS:
        return _PRESETS[name]
    family = name.rsplit("/", 1)[-1]
    if "claude" in family:  # claude-*, anthropic.claude-* (Bedrock), ...
        family = family[family.index("claude") :]
        minimum = claude_min_prefix(family)
        if minimum is None or minimum == _ANTHROPIC.min_tokens:
            return _ANTHROPIC
        return replace(_ANTHROPIC, min_tokens=minimum, name=f"anthropic ({family})")
    if family.startswith("gemini"):
        from tokenbox_core.models._registry import find_model_profile

        profile = find_model_profile(family)  # the model's own minimum (tokenbox_core/models/_google.py [cache])
        minimum = profile.cache.min_prefix_tokens if profile is not None and profile.cache is not None else None
        if minimum is None or minimum == _PRESETS["gemini"].min_tokens:
            return _PRESETS["gemini"]
        return replace(_PRESETS["gemini"], min_tokens=minimum, name=f"gemini ({family})")
    version = _GPT.match(family)
    if version:
        major, minor = int(version.group(1)), int(version.group(2) or 0)
        if (major, minor) >= (5, 6):
            return _PRESETS["openai-gpt-5.6"]
        if (major, minor) == (5, 5):
            return _PRESETS["openai-gpt-5.5"]
        if major == 5:
            return _PRESETS["openai-gpt-5"]
        if family.startswith("gpt-4.1"):
            return _PRESETS["openai-gpt-4.1"]
    if family.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return _PRESETS["openai"]
    close = difflib.get_close_matches(name, list(_PRESETS), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise BudgetError(
        f"no prompt-cache rules known for {provider_or_model!r}; {hint}pass one of {', '.join(rule_names())}, "
        f"a model name, or a CacheRules(...) of your own"
    )
