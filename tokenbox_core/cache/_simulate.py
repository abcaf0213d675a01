"""A prompt-cache simulator: replay a conversation through a trimmer, turn by turn.

:func:`simulate_cache` sends, for every user turn of a transcript, the messages
so far through a trimming function (TokenBox's, LangChain's ``trim_messages``,
LlamaIndex's memory, your own), and computes what the provider would have served
from its prefix cache under :class:`~tokenbox_core.cache._rules.CacheRules`: the
prompt tokens, the cached prefix (minimum length, increments, breakpoints,
look-back, time-to-live, routing by ``prompt_cache_key``), the price, why the
cache missed, and how many past turns the model could still see (directly, or
through a summary the trimmer reports).  Given the usage the provider reported
for the same requests (``reported=``), each turn is checked against it
(:class:`~tokenbox_core.cache._check.TurnCheck`).

Sizes are the core's exact chat counts (:func:`~tokenbox_core.tokens._messages.message_token_count`);
within the first message that differs from a cached prompt the common prefix is
measured on the token ids of its canonical serialisation.  Messages are treated
as the cache's blocks (:mod:`tokenbox_core.cache._blocks`), and one request's
reads and writes follow :mod:`tokenbox_core.cache._lookup`.  Time advances by
``seconds_between_turns`` per turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core.cache._blocks import Block, Blocks, Entry, common_prefix, leading_system
from tokenbox_core.cache._check import TurnCheck, pair_reported
from tokenbox_core.cache._lookup import automatic_lookup, breakpoint_lookup
from tokenbox_core.cache._rules import CacheRules, cache_rules
from tokenbox_core.errors import BudgetError, ConfigError, ConfigTypeError
from tokenbox_core.tokens import PRIMING_TOKENS, TokenCounter, get_counter

__all__ = ["CacheSimulation", "TurnStats", "simulate_cache"]

Trimmer = Callable[[list[dict[str, Any]]], Any]
CacheKey = str | Callable[[int], str | None] | None


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
    miss_reason: str | None = None
    """Why the previous request's prefix was not read back: ``"system_changed"`` / ``"messages_changed"``
    (the previous prompt is no longer a prefix of this one, the first difference inside or after the
    leading system messages), ``"expired"`` (unchanged, but idle longer than the TTL), else ``None``."""

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


@dataclass(frozen=True)
class CacheSimulation:
    """Per-turn results and their totals."""

    rules: CacheRules
    turns: tuple[TurnStats, ...]
    label: str = ""
    checks: tuple[TurnCheck, ...] = ()
    """One per turn when the simulation was given the provider's reported usage."""

    def differences(self, tolerance: float = 0.05) -> tuple[TurnCheck, ...]:
        """The checked turns whose cached share is off by more than ``tolerance``, or whose miss reasons
        disagree."""
        return tuple(c for c in self.checks if c.differs(tolerance))

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
        out = {
            "label": self.label,
            "provider": self.rules.provider,
            "rules": self.rules.name,
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
                    "miss_reason": t.miss_reason,
                }
                for t in self.turns
            ],
        }
        if self.checks:
            out["checks"] = [c.to_dict() for c in self.checks]
        return out

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
        if self.checks:
            off = self.differences()
            rows.append(f"checked against reported usage: {len(off)} of {len(self.checks)} turns differ")
            rows.extend("  " + c.describe() for c in off[:: max(1, every)])
        return "\n".join(rows)


def _messages_of(result: Any) -> tuple[list[Mapping[str, Any]], set[str]]:
    summarized: set[str] = set()
    if isinstance(result, (Mapping, str)) or not isinstance(result, Iterable):
        messages = getattr(result, "messages", None)
        if messages is None:
            raise ConfigTypeError(
                f"a trimmer must return a list of messages or an object with .messages, got {result!r}"
            )
        summarized = {str(i) for i in getattr(result, "summarized_ids", ()) or ()}
        result = messages
    out = []
    for message in result:
        if not isinstance(message, Mapping):
            raise ConfigTypeError(f"a trimmer must return chat messages as dicts, got {type(message).__name__}")
        out.append(message)
    return out, summarized


def _turns(transcript: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[int], dict[str, int]]:
    messages: list[dict[str, Any]] = []
    ends: list[int] = []
    turn_of: dict[str, int] = {}
    turn = -1
    for i, raw in enumerate(transcript):
        if not isinstance(raw, Mapping) or "role" not in raw:
            raise ConfigError(f"transcript message {i} must be a dict with a 'role', got {raw!r}")
        message = dict(raw)
        message.setdefault("id", f"m{i}")
        if message["role"] == "user":
            turn += 1
            if messages:
                ends.append(len(messages))
        turn_of[str(message["id"])] = max(turn, 0)
        messages.append(message)
    if turn < 0:
        raise ConfigError("the transcript has no user message: nothing to replay")
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
    breakpoints: str | None = None,
    prompt_cache_key: CacheKey = None,
    reported: Sequence[Any] | None = None,
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
        rules: a :class:`CacheRules` or a preset / model name for :func:`cache_rules`.
        counter: the counter for prompt sizes.
        seconds_between_turns: simulated time between requests (for TTLs).
        breakpoints: in breakpoint mode, where the client marks requests that carry
            no markers of their own: ``"system_and_last"`` (after the leading system
            messages and on the last message) or ``"none"``.  Default: ``"none"``
            when the provider places a breakpoint itself (Anthropic's automatic
            caching, OpenAI's implicit mode), else ``"system_and_last"``.
        prompt_cache_key: OpenAI's routing key, the same for every request (a
            string) or per request (a function of the turn index); requests with
            different keys never share cached prefixes.
        reported: the usage the provider reported for each request, in order (any
            shape :func:`~tokenbox_core.models.read_usage` reads); each turn is then
            checked against it (``.checks``, ``.differences()``).
        label: a name for reports.
    """
    rules = cache_rules(rules) if isinstance(rules, str) else rules
    if not isinstance(rules, CacheRules):
        raise ConfigTypeError(f"rules must be a CacheRules or a provider/model name, got {type(rules).__name__}")
    default = breakpoints or ("none" if rules.implicit_breakpoints else "system_and_last")
    if default not in ("system_and_last", "none"):
        raise BudgetError(f"breakpoints must be 'system_and_last' or 'none', got {breakpoints!r}")
    if prompt_cache_key is not None and not rules.keyed:
        raise BudgetError(
            f"prompt_cache_key is an OpenAI parameter; the {rules.name or rules.provider!r} rules do not route by "
            f"key: drop prompt_cache_key or simulate OpenAI rules"
        )
    tok = get_counter(counter)
    blocks_of = Blocks(tok)
    messages, request_ends, turn_of = _turns(transcript)
    entries: list[Entry] = []
    stats: list[TurnStats] = []
    price = rules.input_price / 1_000_000
    previous: tuple[list[Block], list[Mapping[str, Any]]] | None = None
    for turn, end in enumerate(request_ends):
        now = turn * seconds_between_turns
        route = prompt_cache_key(turn) if callable(prompt_cache_key) else prompt_cache_key
        sent, summarized = _messages_of(trimmer([dict(m) for m in messages[:end]]))
        blocks = [blocks_of(m) for m in sent]
        prompt = PRIMING_TOKENS + sum(b.tokens for b in blocks)
        entries = [e for e in entries if _alive(rules, e, now)]
        if rules.mode == "automatic":
            cached, written, priced = automatic_lookup(rules, blocks, sent, entries, blocks_of, now, route)
        else:
            cached, written, priced = breakpoint_lookup(rules, blocks, sent, entries, now, default, route)
        cost = (prompt - cached - written + cached * rules.read_multiplier + priced) * price
        direct = {turn_of[str(m["id"])] for m in sent if str(m.get("id")) in turn_of} - {turn}
        seen = (direct | {turn_of[i] for i in summarized if i in turn_of}) - {turn}
        reason = _miss_reason(previous, blocks, sent, seconds_between_turns > rules.ttl_seconds)
        stats.append(
            TurnStats(
                turn, prompt, cached, written, cost, prompt * price, len(seen), turn, len(sent), len(direct), reason
            )
        )
        previous = (blocks, sent)
    turns = tuple(stats)
    checks = pair_reported(turns, reported) if reported is not None else ()
    return CacheSimulation(rules, turns, label, checks)


def _alive(rules: CacheRules, entry: Entry, now: float) -> bool:
    if now - entry.used > (rules.ttl_seconds if entry.ttl is None else entry.ttl):
        return False
    return rules.max_age_seconds is None or now - entry.created <= rules.max_age_seconds


def _miss_reason(
    previous: tuple[list[Block], list[Mapping[str, Any]]] | None,
    blocks: list[Block],
    sent: list[Mapping[str, Any]],
    idle_too_long: bool,
) -> str | None:
    """Why the previous request's prefix is not read back (the comparison Anthropic's diagnostics make)."""
    if previous is None:
        return None
    before, before_sent = previous
    n, _ = common_prefix(blocks, before)
    if n >= len(before):
        return "expired" if idle_too_long else None
    return "system_changed" if n < max(leading_system(before_sent), leading_system(sent)) else "messages_changed"
