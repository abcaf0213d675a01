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

Entries live on a route: requests with different ``prompt_cache_key`` values
never read each other's prefixes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokenbox_core.cache._blocks import Block, Blocks, Entry, common_prefix, has_marker, leading_system, shared_tokens
from tokenbox_core.cache._rules import CacheRules
from tokenbox_core.errors import BudgetError

__all__ = ["automatic_lookup", "breakpoint_lookup", "request_marks"]


def automatic_lookup(
    rules: CacheRules,
    blocks: list[Block],
    sent: list[Mapping[str, Any]],
    entries: list[Entry],
    blocks_of: Blocks,
    now: float,
    route: str | None,
) -> tuple[int, int]:
    """(cached, written) tokens of one request under automatic prefix caching."""
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
    return cached, 0


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
) -> tuple[int, int]:
    """(cached, written) tokens of one request under breakpoint caching."""
    marks = request_marks(rules, sent, default)
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
    for mark in marks:
        prefix = tuple(keys[: mark + 1])
        if ends[mark + 1] < rules.min_tokens:
            continue
        if prefix in live:
            live[prefix].used = now
        else:
            entry = Entry(prefix, blocks[: mark + 1], sent[: mark + 1], now, now, route, order)
            order += 1
            entries.append(entry)
            live[prefix] = entry
    written = 0
    if marks and ends[marks[-1] + 1] >= rules.min_tokens and marks[-1] > hit_at:
        written = ends[marks[-1] + 1] - hit_tokens
    return hit_tokens, written
