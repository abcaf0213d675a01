"""A prompt-cache simulator: replay a conversation through a trimmer, turn by turn.

:func:`simulate_cache` sends, for every user turn of a transcript, the messages
so far through a trimming function (TokenBox's, LangChain's ``trim_messages``,
LlamaIndex's memory, your own), and computes what the provider would have served
from its prefix cache under :class:`~tokenbox_core.cache.rules.CacheRules`: the
prompt tokens, the cached prefix (minimum length, increments, breakpoints,
look-back, time-to-live), the price, and how many past turns the model could still
see (directly, or through a summary the trimmer reports).

Sizes are the core's exact chat counts (:func:`~tokenbox_core.tokens.message_token_count`);
within the first message that differs from a cached prompt the common prefix is
measured on the token ids of its canonical serialisation.  Messages are treated
as the cache's blocks.  Time advances by ``seconds_between_turns`` per turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenbox_core.cache.rules import CacheRules, cache_rules
from tokenbox_core.tokens import PRIMING_TOKENS, TokenCounter, canonical_json, get_counter, message_token_count

__all__ = ["CacheSimulation", "TurnStats", "simulate_cache"]

Trimmer = Callable[[list[dict[str, Any]]], Any]
_CACHE_FIELDS = ("role", "content", "name", "tool_calls", "tool_call_id")


@dataclass(frozen=True)
class TurnStats:
    """One simulated request."""

    turn: int
    prompt_tokens: int
    cached_tokens: int
    written_tokens: int
    cost: float
    uncached_cost: float
    visible_turns: int
    past_turns: int
    messages: int
    direct_turns: int = 0

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


@dataclass(frozen=True)
class CacheSimulation:
    """Per-turn results and their totals."""

    rules: CacheRules
    turns: tuple[TurnStats, ...]
    label: str = ""

    @property
    def prompt_tokens(self) -> int:
        return sum(t.prompt_tokens for t in self.turns)

    @property
    def cached_tokens(self) -> int:
        return sum(t.cached_tokens for t in self.turns)

    @property
    def cached_share(self) -> float:
        """Share of all prompt tokens served from cache over the session."""
        total = self.prompt_tokens
        return self.cached_tokens / total if total else 0.0

    @property
    def cost(self) -> float:
        """Input cost of the session in the rules' currency (``input_price`` per million tokens)."""
        return sum(t.cost for t in self.turns)

    @property
    def uncached_cost(self) -> float:
        return sum(t.uncached_cost for t in self.turns)

    @property
    def mean_visible_turns(self) -> float:
        """Past turns the model could see, directly or through a summary, averaged over turns."""
        return sum(t.visible_turns for t in self.turns) / len(self.turns) if self.turns else 0.0

    @property
    def mean_direct_turns(self) -> float:
        """Past turns with at least one message in the prompt itself, averaged over turns."""
        return sum(t.direct_turns for t in self.turns) / len(self.turns) if self.turns else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "provider": self.rules.provider,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "cached_share": round(self.cached_share, 6),
            "cost": round(self.cost, 6),
            "uncached_cost": round(self.uncached_cost, 6),
            "mean_visible_turns": round(self.mean_visible_turns, 3),
            "mean_direct_turns": round(self.mean_direct_turns, 3),
            "turns": [
                {
                    "turn": t.turn,
                    "prompt_tokens": t.prompt_tokens,
                    "cached_tokens": t.cached_tokens,
                    "written_tokens": t.written_tokens,
                    "visible_turns": t.visible_turns,
                    "messages": t.messages,
                }
                for t in self.turns
            ],
        }

    def summary(self) -> str:
        """One line: cached share, cost against no caching, visible turns."""
        return (
            f"{self.label or 'trimmer'}: {self.cached_share:.1%} of {self.prompt_tokens:,} prompt tokens cached, "
            f"cost {self.cost:.4f} ({self.cost / self.uncached_cost:.2f}× uncached), "
            f"{self.mean_visible_turns:.1f} past turns visible on average"
            if self.uncached_cost
            else f"{self.label or 'trimmer'}: no prompt tokens"
        )

    def table(self, every: int = 1) -> str:
        """A plain-text table, one row per turn (or every ``every``-th turn)."""
        rows = ["turn  prompt  cached  written  share  visible"]
        for t in self.turns[:: max(1, every)]:
            rows.append(
                f"{t.turn:>4}  {t.prompt_tokens:>6}  {t.cached_tokens:>6}  {t.written_tokens:>7}  "
                f"{t.cached_share:>5.0%}  {t.visible_turns:>7}"
            )
        rows.append(self.summary())
        return "\n".join(rows)


@dataclass
class _Block:
    key: bytes
    tokens: int
    ids: tuple[int, ...] = field(default=())


@dataclass
class _Entry:
    keys: tuple[bytes, ...]
    blocks: list[_Block]
    messages: list[Mapping[str, Any]]
    used: float


def _wire(message: Mapping[str, Any]) -> dict[str, Any]:
    """What the cache keys on: the message without its ``cache_control`` markers.

    A breakpoint does not change the content it marks, and one text part is the
    same content as a plain string.
    """
    wire = {k: message[k] for k in _CACHE_FIELDS if message.get(k) is not None}
    content = wire.get("content")
    if isinstance(content, list):
        parts = [{k: v for k, v in p.items() if k != "cache_control"} if isinstance(p, Mapping) else p for p in content]
        if len(parts) == 1 and isinstance(parts[0], Mapping) and set(parts[0]) == {"type", "text"}:
            wire["content"] = parts[0]["text"]
        else:
            wire["content"] = parts
    return wire


class _Blocks:
    """Message → cache block (hash, exact size, token ids), memoised by content."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.memo: dict[str, _Block] = {}

    def __call__(self, message: Mapping[str, Any]) -> _Block:
        text = canonical_json(_wire(message))
        block = self.memo.get(text)
        if block is None:
            key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            block = _Block(key, message_token_count(message, self.counter))
            self.memo[text] = block
        return block

    def ids(self, block: _Block, message: Mapping[str, Any]) -> tuple[int, ...]:
        """Token ids of the message's canonical serialisation (bytes for counters without ids)."""
        if not block.ids:
            encode = getattr(self.counter, "encode", None)
            text = canonical_json(_wire(message))
            block.ids = tuple(encode(text)) if callable(encode) else tuple(text.encode("utf-8", "surrogatepass"))
        return block.ids


def _common(a: Sequence[_Block], b: Sequence[_Block]) -> tuple[int, int]:
    """(whole blocks in common, tokens of those blocks)."""
    n = tokens = 0
    for x, y in zip(a, b, strict=False):
        if x.key != y.key:
            break
        n += 1
        tokens += x.tokens
    return n, tokens


def _messages_of(result: Any) -> tuple[list[Mapping[str, Any]], set[str]]:
    summarized: set[str] = set()
    if isinstance(result, (Mapping, str)) or not isinstance(result, Iterable):
        messages = getattr(result, "messages", None)
        if messages is None:
            raise TypeError(f"a trimmer must return a list of messages or an object with .messages, got {result!r}")
        summarized = {str(i) for i in getattr(result, "summarized_ids", ()) or ()}
        result = messages
    out = []
    for message in result:
        if not isinstance(message, Mapping):
            raise TypeError(f"a trimmer must return chat messages as dicts, got {type(message).__name__}")
        out.append(message)
    return out, summarized


def _turns(transcript: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[int], dict[str, int]]:
    messages: list[dict[str, Any]] = []
    ends: list[int] = []
    turn_of: dict[str, int] = {}
    turn = -1
    for i, raw in enumerate(transcript):
        if not isinstance(raw, Mapping) or "role" not in raw:
            raise ValueError(f"transcript message {i} must be a dict with a 'role', got {raw!r}")
        message = dict(raw)
        message.setdefault("id", f"m{i}")
        if message["role"] == "user":
            turn += 1
            if messages:
                ends.append(len(messages))
        turn_of[str(message["id"])] = max(turn, 0)
        messages.append(message)
    if turn < 0:
        raise ValueError("the transcript has no user message: nothing to replay")
    ends.append(len(messages))
    # a turn's request holds every message up to and including its user message
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    return messages, [s + 1 for s in starts], turn_of


def simulate_cache(
    transcript: Sequence[Mapping[str, Any]],
    trimmer: Trimmer,
    *,
    rules: CacheRules | str = "openai",
    counter: TokenCounter | str = "o200k_base",
    seconds_between_turns: float = 30.0,
    breakpoints: str = "system_and_last",
    label: str = "",
) -> CacheSimulation:
    """Replay ``transcript`` turn by turn through ``trimmer`` and simulate the provider's prompt cache.

    Args:
        transcript: the whole session as chat-shaped dicts (``role``, ``content``,
            ``tool_calls``, ``tool_call_id``; an ``id`` is assigned as ``m<i>`` where
            missing).  Request *t* is the messages up to and including the
            *t*-th user message, trimmed.
        trimmer: called with each request's messages; returns the messages to
            send (dicts), or an object with ``.messages`` and optionally
            ``.summarized_ids`` (ids of messages a summary in the prompt covers).
        rules: a :class:`CacheRules` or a provider / model name for :func:`cache_rules`.
        counter: the counter for prompt sizes.
        seconds_between_turns: simulated time between requests (for TTLs).
        breakpoints: in breakpoint mode (Anthropic), where requests that carry no
            ``cache_control`` of their own are marked: ``"system_and_last"`` (the
            usual practice: after the leading system messages and on the last
            message) or ``"none"``.
        label: a name for reports.
    """
    if breakpoints not in ("system_and_last", "none"):
        raise ValueError(f"breakpoints must be 'system_and_last' or 'none', got {breakpoints!r}")
    rules = cache_rules(rules) if isinstance(rules, str) else rules
    if not isinstance(rules, CacheRules):
        raise TypeError(f"rules must be a CacheRules or a provider/model name, got {type(rules).__name__}")
    tok = get_counter(counter)
    blocks_of = _Blocks(tok)
    messages, request_ends, turn_of = _turns(transcript)
    entries: list[_Entry] = []
    stats: list[TurnStats] = []
    price = rules.input_price / 1_000_000
    for turn, end in enumerate(request_ends):
        now = turn * seconds_between_turns
        sent, summarized = _messages_of(trimmer([dict(m) for m in messages[:end]]))
        blocks = [blocks_of(m) for m in sent]
        prompt = PRIMING_TOKENS + sum(b.tokens for b in blocks)
        entries = [e for e in entries if now - e.used <= rules.ttl_seconds]
        if rules.mode == "automatic":
            cached, written = _automatic(rules, blocks, sent, entries, blocks_of, now)
        else:
            cached, written = _breakpoints(rules, blocks, sent, entries, now, breakpoints)
        cost = (prompt - cached - written + cached * rules.read_multiplier + written * rules.write_multiplier) * price
        direct = {turn_of[str(m["id"])] for m in sent if str(m.get("id")) in turn_of} - {turn}
        seen = (direct | {turn_of[i] for i in summarized if i in turn_of}) - {turn}
        stats.append(
            TurnStats(turn, prompt, cached, written, cost, prompt * price, len(seen), turn, len(sent), len(direct))
        )
    return CacheSimulation(rules, tuple(stats), label)


def _within(blocks_of: _Blocks, a: _Block, am: Mapping[str, Any], b: _Block, bm: Mapping[str, Any]) -> int:
    ia, ib = blocks_of.ids(a, am), blocks_of.ids(b, bm)
    n = 0
    for x, y in zip(ia, ib, strict=False):
        if x != y:
            break
        n += 1
    return min(n, a.tokens, b.tokens)


def _automatic(
    rules: CacheRules,
    blocks: list[_Block],
    sent: list[Mapping[str, Any]],
    entries: list[_Entry],
    blocks_of: _Blocks,
    now: float,
) -> tuple[int, int]:
    best, best_entry = 0, None
    for entry in entries:
        n, tokens = _common(blocks, entry.blocks)
        if n < len(blocks) and n < len(entry.blocks):
            # the first differing message still shares its leading tokens
            tokens += _within(blocks_of, blocks[n], sent[n], entry.blocks[n], entry.messages[n])
        if tokens > best:
            best, best_entry = tokens, entry
    cached = best // rules.increment * rules.increment
    if cached < rules.min_tokens:
        cached = 0
    if best_entry is not None and cached:
        best_entry.used = now
    entries.append(_Entry(tuple(b.key for b in blocks), blocks, sent, now))
    return cached, 0


def _marks(sent: list[Mapping[str, Any]], default: str, limit: int) -> list[int]:
    """Block indices that end a cached prefix (a breakpoint after block i)."""
    marks = [i for i, m in enumerate(sent) if _has_cache_control(m)]
    if not marks and default == "system_and_last" and sent:
        lead = 0
        while lead < len(sent) and sent[lead].get("role") in ("system", "developer"):
            lead += 1
        marks = sorted({lead - 1, len(sent) - 1} - {-1})
    return marks[-limit:] if limit else []


def _has_cache_control(message: Mapping[str, Any]) -> bool:
    if message.get("cache_control"):
        return True
    content = message.get("content")
    if isinstance(content, list):
        return any(isinstance(p, Mapping) and p.get("cache_control") for p in content)
    return False


def _breakpoints(
    rules: CacheRules,
    blocks: list[_Block],
    sent: list[Mapping[str, Any]],
    entries: list[_Entry],
    now: float,
    default: str,
) -> tuple[int, int]:
    marks = _marks(sent, default, rules.max_breakpoints)
    ends = [0]
    for b in blocks:
        ends.append(ends[-1] + b.tokens)
    keys = [b.key for b in blocks]
    live = {e.keys: e for e in entries}
    hit_at, hit_tokens = -1, 0
    for mark in reversed(marks):
        for pos in range(mark, max(-1, mark - rules.lookback_blocks - 1), -1):
            entry = live.get(tuple(keys[: pos + 1]))
            if entry is not None and ends[pos + 1] >= rules.min_tokens:
                entry.used = now
                if ends[pos + 1] > hit_tokens:
                    hit_at, hit_tokens = pos, ends[pos + 1]
                break
        if hit_at >= 0:
            break
    written = 0
    for mark in marks:
        prefix = tuple(keys[: mark + 1])
        if ends[mark + 1] < rules.min_tokens:
            continue
        if prefix in live:
            live[prefix].used = now
        else:
            entry = _Entry(prefix, blocks[: mark + 1], sent[: mark + 1], now)
            entries.append(entry)
            live[prefix] = entry
    if marks and ends[marks[-1] + 1] >= rules.min_tokens:
        written = max(0, ends[marks[-1] + 1] - hit_tokens)
        if hit_at >= 0 and marks[-1] <= hit_at:
            written = 0
    return hit_tokens, written
