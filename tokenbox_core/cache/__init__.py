"""Prompt-cache-aware layouts: prefix-stable eviction, cache breakpoints and a cache simulator.

Providers bill cached prompt prefixes at a fraction of the price (OpenAI's
automatic prefix caching and, from GPT-5.6, its breakpoints; Anthropic's
``cache_control`` breakpoints and automatic caching; Gemini's implicit
caching), but a sliding window that evicts one old message per turn changes the
prompt right after the system message on every turn.  This package holds the
pieces that keep the prefix stable and the tool that measures it:

- ``fit_conversation(cache_aware=True)`` (or a :class:`CacheWindow`): evict history in steps
  of a fixed number of tokens, at boundaries fixed by the conversation itself;
- :func:`simulate_cache`: replay a transcript through any trimmer under a
  provider's published caching rules (:class:`CacheRules`, :func:`cache_rules`,
  :func:`rule_names`), and check a live session's reported usage against it
  (:class:`TurnCheck`).
"""

from tokenbox_core.cache._breakpoints import cache_breakpoints, with_cache_control
from tokenbox_core.cache._check import TurnCheck
from tokenbox_core.cache._rules import CacheRules, cache_rules, rule_names
from tokenbox_core.cache._simulate import CacheSimulation, simulate_cache
from tokenbox_core.cache._window import CacheAwareFit, CacheWindow

__all__ = [
    "CacheAwareFit",
    "CacheRules",
    "CacheSimulation",
    "CacheWindow",
    "TurnCheck",
    "cache_breakpoints",
    "cache_rules",
    "rule_names",
    "simulate_cache",
    "with_cache_control",
]
