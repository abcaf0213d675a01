"""``ModelProfile``: what TokenBox knows about one model family (issue 14 §1, chapter §6.12).

A profile is an immutable value: the context window, the output limit, how
text is counted (and how far off that count may be), the media rules, the
prompt-cache rules and the list prices.  A figure the providers do not
publish is ``None`` rather than a guess.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from tokenbox_core.errors import BudgetError
from tokenbox_core.models._rules import AudioRule, ImageRule, VideoRule

__all__ = ["CacheRule", "CountingRule", "ModelProfile", "Pricing", "WindowSource"]

WindowSource = Literal["registry", "registered", "framework", "fallback"]
"""Where a profile's context window comes from: the built-in registry (with a
published source), a :func:`register_model` call, a framework object
(LangChain / LlamaIndex metadata) or the calculator seed's fallback."""

CountingMethod = Literal["tiktoken", "hf_tokenizer", "approximate"]

DEFAULT_APPROXIMATION_ERROR = 0.30
"""Error bound of chars/4 counting: "off by up to 30% for code, technical content, and non-English
text" (seed token-budget-calculator.txt, ADR-0039).  Applied as a safety margin to approximate counts.
The seed also notes CJK at ~0.5 chars/token, where the bound does not hold: count such text exactly
(a local tokenizer.json) instead."""


@dataclass(frozen=True)
class CountingRule:
    """How text is counted for a model.

    ``tiktoken`` with ``encoding``: exact (``error_bound`` 0).  ``hf_tokenizer``
    with ``tokenizer_file``: exact with a local Hugging Face ``tokenizer.json``
    (never downloaded).  ``approximate``: chars/4 inflated by ``error_bound``
    so that budgets built on it stay safe.
    """

    method: CountingMethod = "approximate"
    encoding: str | None = None
    tokenizer_file: str | None = None
    error_bound: float = DEFAULT_APPROXIMATION_ERROR

    def __post_init__(self) -> None:
        if self.method not in ("tiktoken", "hf_tokenizer", "approximate"):
            raise BudgetError(f"counting method must be tiktoken, hf_tokenizer or approximate, got {self.method!r}")
        if self.method == "tiktoken" and not self.encoding:
            raise BudgetError("counting method 'tiktoken' needs an encoding, e.g. encoding='o200k_base'")
        if self.method == "hf_tokenizer" and not self.tokenizer_file:
            raise BudgetError("counting method 'hf_tokenizer' needs tokenizer_file, the path of a local tokenizer.json")
        bound = self.error_bound
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not (0 <= bound < 10):
            raise BudgetError(f"error_bound must be a fraction between 0 and 10 (0.3 = 30%), got {bound!r}")
        if self.method != "approximate":
            object.__setattr__(self, "error_bound", 0.0)

    @property
    def exact(self) -> bool:
        return self.method != "approximate"


@dataclass(frozen=True)
class CacheRule:
    """Prompt-cache rules (for the cache issue): what prefix can be cached and what a hit costs.

    ``min_prefix_tokens``: the shortest cacheable prefix.  ``increment_tokens``:
    cache hits grow in steps of this many tokens (``None`` when not
    published).  ``max_breakpoints``: explicit cache markers allowed per
    request (``None`` for automatic caching).  ``ttl_seconds``: how long an
    unused entry lives by default (``max_ttl_seconds`` at most).
    ``read_multiplier``: price of a cached input token relative to a fresh one;
    ``write_multiplier``: price of writing one (1.0 when writes are free).
    """

    min_prefix_tokens: int
    increment_tokens: int | None = None
    max_breakpoints: int | None = None
    automatic: bool = True
    ttl_seconds: int | None = None
    max_ttl_seconds: int | None = None
    read_multiplier: float | None = None
    write_multiplier: float | None = None


@dataclass(frozen=True)
class Pricing:
    """List prices in US dollars per million tokens (``None`` where not published)."""

    input: float | None = None
    output: float | None = None
    cached_input: float | None = None

    def cost(self, input_tokens: int, output_tokens: int = 0, cached_tokens: int = 0) -> float | None:
        """Dollars for one request, or ``None`` when a needed price is unknown."""
        if self.input is None or (output_tokens and self.output is None):
            return None
        if cached_tokens and self.cached_input is None:
            return None
        fresh = input_tokens - cached_tokens
        total = fresh * self.input + output_tokens * (self.output or 0.0)
        total += cached_tokens * (self.cached_input or 0.0)
        return total / 1_000_000


@dataclass(frozen=True)
class ModelProfile:
    """What TokenBox knows about a model family (issue 14 §1; chapter §6.12.1).

    ``name`` is the canonical family name; dated snapshots and provider
    prefixes (``gpt-4o-2024-08-06``, ``openai/gpt-4o``) resolve to it.
    ``image``/``audio``/``video`` are ``None`` when the model does not take
    that modality (or no rule is published).  ``sources`` lists the public
    pages the figures come from.

    >>> from tokenbox_core.models import get_model_profile
    >>> p = get_model_profile("gpt-4o-2024-08-06")
    >>> p.name, p.context_window, p.counting.encoding
    ('gpt-4o', 128000, 'o200k_base')
    """

    name: str
    provider: str
    context_window: int
    max_output_tokens: int | None = None
    counting: CountingRule = field(default_factory=CountingRule)
    image: ImageRule | None = None
    audio: AudioRule | None = None
    video: VideoRule | None = None
    cache: CacheRule | None = None
    pricing: Pricing = field(default_factory=Pricing)
    aliases: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    window_source: WindowSource = "registry"
    notes: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise BudgetError(f"a model profile needs a non-empty name, got {self.name!r}")
        _positive_int("context_window", self.context_window)
        if self.max_output_tokens is not None:
            _positive_int("max_output_tokens", self.max_output_tokens)
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "sources", tuple(self.sources))

    @property
    def approximate(self) -> bool:
        """True when text counts for this model are estimates (with ``counting.error_bound``)."""
        return not self.counting.exact

    @property
    def is_fallback(self) -> bool:
        return self.window_source == "fallback"

    def replace(self, **changes: Any) -> ModelProfile:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """One line for people: window, where it comes from, and how counts are made."""
        if self.counting.method == "tiktoken":
            counting = f"exact ({self.counting.encoding})"
        elif self.counting.method == "hf_tokenizer":
            counting = f"exact (tokenizer.json {self.counting.tokenizer_file})"
        else:
            counting = f"approximate (chars/4, +{self.counting.error_bound:.0%} safety margin)"
        return f"{self.name}: {self.context_window:,}-token window ({self.window_source}); counts {counting}"


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BudgetError(f"{name} must be an integer number of tokens, got {value!r}")
    if value <= 0:
        raise BudgetError(f"{name} must be > 0 tokens, got {value}")
