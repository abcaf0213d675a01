"""One request against the simulated prompt cache: what it reads, what it writes.

Two rule families (:class:`~tokenbox_core.cache._rules.CacheRules` ``mode``):

- **automatic** (OpenAI before GPT-5.6, Gemini): the longest cached prefix of
  the prompt is read, rounded down to the increment, if it reaches the minimum;
  the whole prompt is cached afterwards (writes are free);
- **breakpoints** (Anthropic, OpenAI GPT-5.6 and later): only prefixes ending
  at a breakpoint are written and read.  The request's breakpoints are its own
  markers (``cache_control`` / ``prompt_cache_breakpoint``), or the client's
  usual placement when it has none, plus the provider's implicit breakpoint on
  the last block (Anthropic's top-level ``cache_control``, OpenAI's implicit
  mode).  A hit is looked for from the last breakpoint backwards: Anthropic
  checks 20 positions per breakpoint, the breakpoint itself first, then resumes
  from the next breakpoint; OpenAI has no look-back limit but considers only
  the latest 80 breakpoints written in the conversation.  Writes are billed
  from the hit to the last breakpoint written.

A breakpoint may set its own TTL (``"cache_control": {"type": "ephemeral",
"ttl": "1h"}``): its entry lives that long, and Anthropic bills each stretch of
the write at the rate of the breakpoint that ends it (1.25× for 5 minutes, 2×
for an hour); a request whose 1-hour breakpoint follows a 5-minute one is an
HTTP 400 ([ant-docs]: "You can mix both TTLs in the same request, but 1-hour
entries must appear before 5-minute entries"; the per-TTL split is what the
SDK's ``usage.cache_creation.ephemeral_5m_input_tokens`` /
``ephemeral_1h_input_tokens`` report; read 2026-11-27).

Entries live on a route: requests with different ``prompt_cache_key`` values
never read each other's prefixes.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from tokenbox_core.cache._blocks import (
    Block,
    Blocks,
    Entry,
    common_prefix,
    has_marker,
    leading_system,
    marker_ttl,
    shared_tokens,
)
from tokenbox_core.cache._rules import CacheRules
from tokenbox_core.errors import BudgetError

__all__ = ["automatic_lookup", "breakpoint_lookup", "request_marks"]

_ANTHROPIC_WRITE = {300.0: 1.25, 3600.0: 2.0}  # [ant-docs]: writes 1.25× (5 minutes) or 2× (1 hour) the input price


def automatic_lookup(
    rules: CacheRules,
    blocks: list[Block],
    sent: list[Mapping[str, Any]],
    entries: list[Entry],
    blocks_of: Blocks,
    now: float,
    route: str | None,
) -> tuple[int, int, float]:
    """(cached, written, written × write price) tokens of one request under automatic prefix caching (writes are
    free)."""
    best, best_entry = 0, None
    for entry in entries:
        if entry.route != route:
            continue
        n, tokens = common_prefix(blocks, entry.blocks)
        if n < len(blocks) and n < len(entry.blocks):
            # the first differing message still shares its leading tokens
            tokens += shared_tokens(blocks_of, blocks[n], sent[n], entry.blocks[n], entry.messages[n])
        if tokens > best:
            best, best_entry = tokens, entry
    cached = best // rules.increment * rules.increment
    if cached < rules.min_tokens:
        cached = 0
    if best_entry is not None and cached:
        best_entry.used = now
    entries.append(Entry(tuple(b.key for b in blocks), blocks, sent, now, now, route, _next(entries)))
    return cached, 0, 0.0


def request_marks(rules: CacheRules, sent: Sequence[Mapping[str, Any]], default: str) -> list[int]:
    """Block indices that end a prefix this request writes (a breakpoint after block ``i``), ascending.

    ``default`` is the client's placement when the request carries no markers:
    ``"system_and_last"`` (after the leading system messages and on the last
    message) or ``"none"``.
    """
    if not sent or rules.max_breakpoints == 0:
        return []
    explicit = [i for i, m in enumerate(sent) if has_marker(m, rules.marker)]
    if not explicit and default == "system_and_last":
        lead = leading_system(sent)
        explicit = sorted({lead - 1, len(sent) - 1} - {-1})
    if not rules.implicit_breakpoints:
        return explicit[-rules.max_breakpoints :]
    last = len(sent) - 1
    if rules.marker == "cache_control":  # [ant-docs]: a no-op on a marked last block, an HTTP 400 over the limit
        if last not in explicit and len(explicit) >= rules.max_breakpoints:
            raise BudgetError(
                f"the request carries {len(explicit)} cache_control breakpoints and automatic caching adds one "
                f"on the last block: Anthropic allows {rules.max_breakpoints} (it answers HTTP 400); drop a "
                f"breakpoint or use the explicit rules ('anthropic')"
            )
        return sorted({*explicit, last})
    # [oai-sdk]: the implicit breakpoint and "up to the latest three explicit breakpoints"
    keep = [i for i in explicit if i != last][-(rules.max_breakpoints - rules.implicit_breakpoints) :]
    return sorted({*keep, last})


def _next(entries: Sequence[Entry]) -> int:
    return max((e.order for e in entries), default=-1) + 1


def breakpoint_lookup(
    rules: CacheRules,
    blocks: list[Block],
    sent: list[Mapping[str, Any]],
    entries: list[Entry],
    now: float,
    default: str,
    route: str | None,
) -> tuple[int, int, float]:
    """(cached, written, written × its write price) tokens of one request under breakpoint caching."""
    marks = request_marks(rules, sent, default)
    ttls = _mark_ttls(rules, sent, marks)
    ends = [0]
    for b in blocks:
        ends.append(ends[-1] + b.tokens)
    keys = [b.key for b in blocks]
    on_route = sorted((e for e in entries if e.route == route), key=lambda e: e.order)
    if rules.max_entries is not None:
        on_route = on_route[-rules.max_entries :]  # [oai-sdk]: "the latest 80 breakpoints in the conversation"
    live = {e.keys: e for e in on_route}
    hit_at, hit_tokens = -1, 0
    for mark in reversed(marks):
        stop = -1 if rules.lookback_blocks is None else max(-1, mark - rules.lookback_blocks)
        for pos in range(mark, stop, -1):
            entry = live.get(tuple(keys[: pos + 1]))
            if entry is not None and ends[pos + 1] >= rules.min_tokens:
                entry.used = now
                hit_at, hit_tokens = pos, ends[pos + 1]
                break
        if hit_at >= 0:
            break
    order = _next(entries)
    written, priced, start = 0, 0.0, hit_tokens
    for mark, ttl in zip(marks, ttls, strict=True):
        prefix = tuple(keys[: mark + 1])
        if ends[mark + 1] < rules.min_tokens:
            continue
        if prefix in live:
            live[prefix].used = now
        else:
            entry = Entry(prefix, blocks[: mark + 1], sent[: mark + 1], now, now, route, order, ttl)
            order += 1
            entries.append(entry)
            live[prefix] = entry
        if mark > hit_at and ends[mark + 1] > start:
            stretch = ends[mark + 1] - start
            rate = rules.write_multiplier
            if ttl is not None and rules.marker == "cache_control":
                rate = _ANTHROPIC_WRITE.get(ttl, rate)
            written, priced, start = written + stretch, priced + stretch * rate, start + stretch
    return hit_tokens, written, priced


def _mark_ttls(rules: CacheRules, sent: Sequence[Mapping[str, Any]], marks: Sequence[int]) -> list[float | None]:
    """Each breakpoint's own TTL in seconds (None: the rules' TTL); a longer one after a shorter one is refused."""
    ttls = [marker_ttl(sent[i], rules.marker) for i in marks]
    seconds = [rules.ttl_seconds if t is None else t for t in ttls]
    for before, after in itertools.pairwise(seconds):
        if after > before:
            raise BudgetError(
                f"a cache breakpoint with a {after:g} s TTL follows one with {before:g} s: the provider rejects "
                f"this (HTTP 400: longer-lived entries must come first); put the 1h breakpoints before the 5m ones"
            )
    return ttls
