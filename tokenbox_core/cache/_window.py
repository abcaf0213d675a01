"""``fit_conversation(cache_aware=...)``: history evicted in prefix-stable blocks (issue 15).

The conversation is translated once by the core's conversation engine
(:func:`~tokenbox_core.chat.conversation_sections`, every message counted); its
flexible history is cut into *units* — a user turn with its replies and tool
calls, never splitting a tool group — and :func:`~tokenbox_core.cache._eviction.plan_block_cut`
chooses the first kept unit: cuts move in steps of ``(1 - low_water)`` of the
history's allocation, at boundaries fixed by the conversation itself.  The
messages before the cut are removed (reason ``"cache_block"``) and, when asked,
replaced by one message placed right after the leading system messages — a
summary (``summarizer``) or an omission marker naming every removed id — that is
a function of the cut alone, so it changes only when the cut moves.  The rest is
fitted by the ordinary :func:`~tokenbox_core.chat.fit_conversation`, so the
budget, critical messages, tool groups and ``start_on`` rules all still hold;
it normally evicts nothing more.

The cut's positions are counted from the first message passed: pass the whole
session (or a history whose head only ever loses whole blocks), not a list that
slides by one message per turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core.cache._eviction import plan_block_cut
from tokenbox_core.cache._rules import CacheRules, cache_rules
from tokenbox_core.chat._fit import ConversationFit, shift_budget
from tokenbox_core.chat._messages import ChatCounter, matcher
from tokenbox_core.chat._sections import Finished, Marker, RemovedMessage, conversation_sections
from tokenbox_core.errors import SectionError
from tokenbox_core.tokens import PRIMING_TOKENS, canonical_json

__all__ = ["BlockCut", "CacheWindow", "CacheAwareFit", "fit_cache_aware", "plan_history_cut"]

SUMMARY_SECTION = "cache-block"
_DEFAULT_MARKER = "[{count} earlier messages omitted: {ids}]"


@dataclass(frozen=True)
class CacheWindow:
    """How cache-aware eviction cuts history.

    Args:
        low_water: after a cut, history uses at most about this share of its
            allocation (each cut frees ``1 - low_water`` of it, so the next
            ``(1 - low_water) × allocation`` tokens of growth only append).
        summarizer: a :class:`~tokenbox_core.session.Summarizer` (``.summarize(messages,
            target_tokens, counter=...)``, e.g. ``ExtractiveSummarizer()``) or a
            callable ``(messages, target_tokens) -> str``; its text stands for
            everything before the cut (the removed turns count as still visible
            through it).  It must be deterministic; results are memoised by the
            removed content, so it runs once per cut.  A summary longer than
            ``summary_tokens`` is cut to fit.
        summary_tokens: the room reserved for the summary or marker message.
        role: the role of that message (``"system"``: it joins the leading
            system messages, the stable part of the prefix).
        cut_history: ``False``: a :class:`~tokenbox_core.ContextCompiler` only
            assembles by volatility and leaves the history it is given uncut —
            for a history already planned in prefix-stable blocks (a
            :class:`~tokenbox_core.ContextSession`'s window); a second cut
            against another measure would cut that plan again.
    """

    low_water: float = 0.7
    summarizer: Any = None
    summary_tokens: int = 512
    role: str = "system"
    cut_history: bool = True
    _memo: dict[tuple[bytes, int], str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.low_water, bool) or not isinstance(self.low_water, int | float):
            raise SectionError(f"low_water must be a number between 0 and 1, got {self.low_water!r}")
        if not 0 < self.low_water < 1:
            raise SectionError(f"low_water must be between 0 and 1 (exclusive), got {self.low_water!r}; e.g. 0.7")
        if isinstance(self.summary_tokens, bool) or not isinstance(self.summary_tokens, int) or self.summary_tokens < 0:
            raise SectionError(f"summary_tokens must be an integer >= 0, got {self.summary_tokens!r}")
        if self.summarizer is not None and not (callable(self.summarizer) or hasattr(self.summarizer, "summarize")):
            raise SectionError(f"summarizer must be callable (messages, target_tokens) -> str, got {self.summarizer!r}")
        if self.role not in ("system", "developer", "user", "assistant"):
            raise SectionError(f"role must be 'system', 'developer', 'user' or 'assistant', got {self.role!r}")
        if not isinstance(self.cut_history, bool):
            raise SectionError(f"cut_history must be True or False, got {self.cut_history!r}")

    def summary(self, messages: Sequence[Mapping[str, Any]], counter: ChatCounter) -> str:
        """The summary of ``messages`` within ``summary_tokens`` (as a message of ``role``), memoised."""
        digest = hashlib.blake2b(canonical_json(list(messages)).encode("utf-8", "surrogatepass"), digest_size=20)
        key = (digest.digest(), self.summary_tokens)
        text = self._memo.get(key)
        if text is not None:
            return text
        tok = counter.text_counter(self.role)
        overhead = counter.size({"role": self.role, "content": ""})
        target = max(0, self.summary_tokens - overhead)
        if hasattr(self.summarizer, "summarize"):
            text = self.summarizer.summarize(messages, target, counter=tok)
        else:
            text = self.summarizer(messages, target)
        if not isinstance(text, str):
            raise SectionError(f"the summarizer must return a string, got {type(text).__name__}")
        limit = target
        while text and counter.size({"role": self.role, "content": text}) > self.summary_tokens:
            text = tok.truncate(text, limit)  # cut to the reserve: the rest of the window must not move
            limit -= 1
        if len(self._memo) >= 64:
            self._memo.pop(next(iter(self._memo)))
        self._memo[key] = text
        return text

    @classmethod
    def coerce(cls, value: bool | CacheWindow) -> CacheWindow:
        if isinstance(value, CacheWindow):
            return value
        if value is True:
            return cls()
        raise SectionError(f"cache_aware must be True, False or a CacheWindow, got {value!r}")


@dataclass
class CacheAwareFit(ConversationFit):
    """A :class:`~tokenbox_core.chat.ConversationFit` whose history was cut in blocks.

    Indices are the caller's; the summary or marker message, if any, is a
    :class:`~tokenbox_core.chat._sections.Marker` entry.  ``cut`` is the first
    history index kept by the block cut; ``summarized_ids`` the ids the summary
    stands for; ``stable_messages`` how many leading messages of ``messages``
    stay byte-identical until the cut moves.
    """

    precut: list[RemovedMessage] = field(default_factory=list)
    cut: int = 0
    summarized_ids: tuple[str, ...] = ()
    stable_messages: int = 0

    @property
    def entries(self) -> list[int | Marker]:
        return self.finished.entries

    @cached_property
    def messages(self) -> list[Mapping[str, Any]]:
        return [e.message() if isinstance(e, Marker) else self._output(e) for e in self.finished.entries]

    def _output(self, index: int) -> Mapping[str, Any]:
        m = self.finished.replaced.get(index, self._source[index])
        return {k: v for k, v in m.items() if k != "tokenbox"} if "tokenbox" in m else m

    @cached_property
    def removed(self) -> list[RemovedMessage]:
        return self._removed

    def kept_ids(self) -> list[str]:
        return [self._ids[i] for i in self.kept]

    def cache_report(self, rules: CacheRules | str = "openai") -> dict[str, Any]:
        """Where the cacheable prefix ends and whether it clears the provider's minimum.

        ``stable_tokens``: the leading system messages and summary, byte-identical until the cut moves;
        ``prompt_tokens``: the whole request, which the next turn extends while the cut stays (so all of it
        is read back from an automatic-prefix cache on the next turn).
        """
        resolved = cache_rules(rules) if isinstance(rules, str) else rules
        counter = self.conversation.counter
        sizes = [counter.size(m) for m in self.messages]
        stable = sum(sizes[: self.stable_messages])
        return {
            "provider": resolved.provider,
            "min_tokens": resolved.min_tokens,
            "stable_messages": self.stable_messages,
            "stable_tokens": stable,
            "stable_clears_minimum": stable >= resolved.min_tokens,
            "prompt_tokens": self.total_tokens,
            "prompt_clears_minimum": self.total_tokens >= resolved.min_tokens,
        }

    def report(self) -> dict[str, Any]:
        out = super().report()
        out["cache"] = {
            "cut": self.cut,
            "block_removed": len(self.precut),
            "summarized": len(self.summarized_ids),
            "stable_messages": self.stable_messages,
        }
        return out

    # set by fit_cache_aware
    _source: list[Mapping[str, Any]] = field(default_factory=list, repr=False)
    _ids: dict[int, str] = field(default_factory=dict, repr=False)
    _removed: list[RemovedMessage] = field(default_factory=list, repr=False)


def _units(conv: Any, history: list[int], start: Callable[[Mapping[str, Any]], bool]) -> list[list[int]]:
    """History indices split into turns (a unit opens at a start-on message), tool groups never split.

    After the last start-on message (the agent loop in flight) each tool group opens a unit too: there the
    "turn" is the whole loop, and a cut must be able to move inside it (issue 23)."""
    units: list[list[int]] = []
    msgs, groups = conv.messages, conv.groups
    loop = next((i for i in range(len(msgs) - 1, -1, -1) if start(msgs[i])), -1)
    open_group_end = -1
    for i in history:
        step = i > loop and groups.group_of.get(i) == i
        opens = (start(msgs[i]) or step) and i > open_group_end
        if not units or opens:
            units.append([])
        units[-1].append(i)
        a = groups.group_of.get(i)
        if a is not None:
            open_group_end = max(open_group_end, groups.members[a][-1])
    return units


@dataclass(frozen=True)
class BlockCut:
    """Where :func:`plan_history_cut` cuts a conversation's history.

    ``units``: the history's message indices split into turns (tool groups never split);
    ``kept_from``: the index of the first kept unit; ``dropped``: the message indices before the cut;
    ``cut``: the first kept message index (``len(messages)`` when every unit was cut).
    """

    units: tuple[tuple[int, ...], ...]
    kept_from: int
    dropped: tuple[int, ...]
    cut: int


def plan_history_cut(
    conv: Any,
    *,
    capacity: int,
    step: int,
    start_on: Any = "user",
    exclude: Iterable[int] = (),
) -> BlockCut:
    """The block cut of ``conv``'s flexible history (one planner for ``fit_conversation`` and the compiler).

    ``conv`` is a :class:`~tokenbox_core.chat.ConversationSections`; its critical messages (leading
    system messages, the current user turn) are never cut, nor are the indices in ``exclude``.  The
    rest is split into units (a user turn with its replies and tool calls; in the agent loop after the
    current user turn, each tool group) and
    :func:`~tokenbox_core.cache._eviction.plan_block_cut` chooses the first kept unit so the kept units
    fit ``capacity`` tokens, moving in steps of ``step`` tokens (issue 15).
    """
    skip = set(conv.critical) | set(exclude)
    history = [i for i in range(len(conv.messages)) if i not in skip]
    units = _units(conv, history, matcher(start_on or "user"))
    sizes = [sum(conv.sizes[j] for j in u) for u in units]
    k = plan_block_cut(sizes, max(0, capacity), step=max(1, step))
    dropped = tuple(j for u in units[:k] for j in u)
    cut = units[k][0] if k < len(units) else len(conv.messages)
    return BlockCut(tuple(tuple(u) for u in units), k, dropped, cut)


def _marker_text(template: str, ids: Sequence[str], counter: ChatCounter, role: str, limit: int) -> str:
    """The omission marker for a block cut, with the fields Section templates accept, at most ``limit`` tokens
    as a message of ``role``: ``{ids}`` names every removed id while that fits, else the first and the last
    (the cut removes a contiguous run), else the text is cut.  Bounded, so a growing cut cannot make the marker
    crowd out the loop it stands before (issue 32 defect 3)."""

    def text(names: str) -> str:
        return template.format(count=len(ids), ids=names, first=ids[0], last=ids[-1])

    out = text(", ".join(ids))
    if counter.size({"role": role, "content": out}) <= limit:
        return out
    out = text(f"{ids[0]} … {ids[-1]}" if len(ids) > 1 else ids[0])
    tok = counter.text_counter(role)
    cap = limit - counter.size({"role": role, "content": ""})
    while out and counter.size({"role": role, "content": out}) > limit:
        out = tok.truncate(out, max(0, cap))
        cap -= 1
    return out


def fit_cache_aware(
    messages: Iterable[Mapping[str, Any]],
    budget: int | ContextBudget,
    window: bool | CacheWindow,
    **options: Any,
) -> CacheAwareFit:
    """See the module docstring; ``options`` are :func:`~tokenbox_core.chat.fit_conversation`'s."""
    from tokenbox_core.chat._fit import fit_conversation

    spec = CacheWindow.coerce(window)
    if not spec.cut_history:
        raise SectionError(
            "fit_conversation(cache_aware=...) is the block cut itself: CacheWindow(cut_history=False) is for a "
            "ContextCompiler given a history already cut; pass cut_history=True, or cache_aware=False"
        )
    if options.get("strategy", "last") != "last":
        raise SectionError("cache_aware needs strategy='last': blocks are evicted from the oldest end")
    if options.get("allow_partial"):
        raise SectionError("cache_aware cannot be combined with allow_partial: a cut message changes every turn")
    source = [m for m in messages]
    counter = ChatCounter.of(options.get("counter", "gpt-4o"), media_tokens=options.get("media_tokens"))
    options = {**options, "counter": counter}
    resolved = ContextBudget.coerce(budget)
    core = shift_budget(resolved, PRIMING_TOKENS - counter.base)
    conv = conversation_sections(
        source,
        counter=counter,
        include_system=options.get("include_system", True),
        keep_last=options.get("keep_last", "user"),
        start_on=options.get("start_on", "user"),
        media_tokens=options.get("media_tokens"),
        step_room=core.room - PRIMING_TOKENS,
    )  # the newest step is critical (previewed when it must be): the cut never reaches it
    critical = sum(conv.sizes[i] for i in conv.critical)
    lead = sum(conv.sizes[i] for i in range(conv.system_end))
    marker = options.get("omission_marker")
    template = marker if isinstance(marker, str) else _DEFAULT_MARKER
    ids = {i: conv.item_id(i) for i in range(len(source))}
    allocation = max(1, core.effective(PRIMING_TOKENS + lead + spec.summary_tokens).target_tokens)
    step = max(1, int(allocation * (1 - spec.low_water)))
    marker_limit = allocation // 4  # the marker names every id while it takes at most a quarter of the room
    # the room the summary (or the marker, whose size grows with the cut) takes: a cut that is one more
    # step along only lengthens the marker, so this settles in a few rounds
    reserve = spec.summary_tokens if spec.summarizer is not None else 0
    while True:
        capacity = max(0, core.effective(PRIMING_TOKENS + critical + reserve).target_tokens)
        planned = plan_history_cut(conv, capacity=capacity, step=step, start_on=options.get("start_on"))
        if spec.summarizer is not None or not marker or not planned.dropped:
            break
        gone_ids = [ids[j] for j in planned.dropped]
        need = counter.size(
            {"role": spec.role, "content": _marker_text(template, gone_ids, counter, spec.role, marker_limit)}
        )
        if need <= reserve or capacity == 0:
            break
        reserve = need
    dropped, cut = list(planned.dropped), planned.cut
    if not dropped:
        plain = fit_conversation(source, budget, **options)
        return CacheAwareFit(
            conversation=plain.conversation,
            finished=plain.finished,
            layout=plain.layout,
            total_tokens=plain.total_tokens,
            max_tokens=plain.max_tokens,
            effective_max_tokens=plain.effective_max_tokens,
            stable_messages=sum(1 for e in plain.finished.entries if isinstance(e, int) and e < conv.system_end),
            _source=source,
            _ids={i: plain.conversation.item_id(i) for i in range(len(source))},
            _removed=plain.removed,
        )

    gone = set(dropped)
    keep_idx = [i for i in range(len(source)) if i not in gone]
    removed_ids = [ids[j] for j in dropped]
    note = None
    if spec.summarizer is not None:
        note = spec.summary([conv.messages[j] for j in dropped], counter)
    elif marker:
        note = _marker_text(template, removed_ids, counter, spec.role, marker_limit)
    head = [i for i in keep_idx if i < conv.system_end]
    sub_to_input: list[int | None] = [*head, *([None] if note is not None else []), *keep_idx[len(head) :]]
    summary_message = {"role": spec.role, "content": note, "tokenbox": {"critical": True}}
    sub = [summary_message if i is None else source[i] for i in sub_to_input]
    at_input = sub_to_input

    def sized(message: Mapping[str, Any], i: int | None) -> int:  # sub's messages sized by their input index
        return counter.size(message, None if i is None else at_input[i])

    inner_counter = ChatCounter(sized, base=counter.base, name=counter.name, text=counter.core)
    inner = fit_conversation(sub, budget, **{**options, "counter": inner_counter, "omission_marker": False})
    to_input = {at: i for at, i in enumerate(sub_to_input) if i is not None}
    entries: list[int | Marker] = []
    for e in inner.finished.entries:
        if isinstance(e, Marker):
            entries.append(e)
        elif e in to_input:
            entries.append(to_input[e])
        else:  # the summary or marker message
            entries.append(Marker(SUMMARY_SECTION, note or "", spec.role, tuple(removed_ids)))
    precut = [RemovedMessage(j, ids[j], "cache_block", conv.sizes[j]) for j in dropped]
    later = [RemovedMessage(to_input[r.index], r.id, r.reason, r.tokens) for r in inner.removed if r.index in to_input]
    finished = Finished(
        entries=entries,
        removed=sorted([*precut, *later], key=lambda r: r.index),
        evicted=[to_input[j] for j in inner.finished.evicted if j in to_input],
        partial=None,
        replaced={to_input[j]: m for j, m in inner.finished.replaced.items() if j in to_input},
        delta=inner.finished.delta,
    )
    stable = next(
        (n + 1 for n, e in enumerate(entries) if isinstance(e, Marker) and e.section == SUMMARY_SECTION), len(head)
    )
    return CacheAwareFit(
        conversation=inner.conversation,
        finished=finished,
        layout=inner.layout,
        total_tokens=inner.total_tokens,
        max_tokens=inner.max_tokens,
        effective_max_tokens=inner.effective_max_tokens,
        precut=precut,
        cut=cut,
        summarized_ids=tuple(removed_ids) if spec.summarizer is not None else (),
        stable_messages=stable,
        _source=source,
        _ids=ids,
        _removed=finished.removed,
    )
