"""Fitting a LangChain conversation into a budget: messages → Sections/Items → one core layout → messages.

The mapping (adapters translate, the core decides):

- each message becomes an :class:`~tokenbox_core.Item` whose ``tokens`` is
  its exact size (:class:`~tokenbox_langchain.counting.MessageCounter`);
- an ``AIMessage`` with ``tool_calls`` and every ``ToolMessage`` answering one
  of its calls share an ``Item.group``: the core keeps or removes them together;
- critical messages (the leading system message(s), the anchor — the latest
  message of a given type —, per-message overrides) form critical Sections
  (``shrink=0``), and the runs of history between them flexible list Sections
  (``shrink=1``), so declaration order is the conversation's order and the
  core evicts oldest (or newest) first across all runs;
- the core lays them out once in ``mode="messages"``.

Afterwards the adapter only *post-validates*: it may cut the boundary message
at a text splitter's boundaries into the room the layout left (``partial``,
LangChain's ``allow_partial``), and it drops leading history messages, whole
tool groups at a time, until the conversation starts on a ``start_on`` type
(stopping at a critical message, and never emptying a history that holds no
message of that type).  Both only ever remove or shorten, so the result stays
within the budget.

**Omission markers** are messages the core counted (a message costs the same
wherever it stands), placed by :func:`place_markers` after the ``start_on``
fix-up so that the sequence stays one a provider accepts: a ``"system"`` marker
joins the leading system messages (after them, in conversation order) instead
of following a conversation message; a ``"human"`` or ``"ai"`` marker stands
at the head of its run's kept messages, but never before a leading system
message, and never opens the conversation when it is not of a ``start_on``
type (it then follows the first message and its tool group).

**Horizon.**  When history is evicted strictly oldest (or newest) first — no
per-message priorities, no omission marker — a message whose newer messages
alone already exceed the whole capacity can never be kept.  Such messages are
neither counted nor handed to the core (they are reported as
``beyond_horizon``); the core still sees every message that could fit plus the
boundary one, and decides.  ``test_horizon_is_invisible`` pins that the
output is the same with and without the horizon.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from tokenbox_core import ContextBudget, ContextCriticalOverflow, Item, Layout, Section, TokenBox
from tokenbox_core.errors import SectionError
from tokenbox_core.tokens import PRIMING_TOKENS
from tokenbox_langchain.counting import MessageCounter, content_text, message_key, openai_role

__all__ = [
    "MARKER_ID_PREFIX",
    "METADATA_KEY",
    "CriticalMessagesOverflow",
    "FitOptions",
    "FitResult",
    "MessageTypes",
    "RemovedMessage",
    "ToolGroups",
    "fit_messages",
    "matches",
    "omission_message",
    "place_markers",
    "start_on_fixup",
    "tool_groups",
]

METADATA_KEY = "tokenbox"
"""Per-message overrides live in ``message.additional_kwargs["tokenbox"]``:
``{"priority": int}`` (lower is evicted first among the history messages of its
run) and ``{"critical": bool}`` (never evicted / evictable like history)."""

MessageTypes = str | type[BaseMessage] | Sequence[str | type[BaseMessage]]
"""Message types as LangChain names them: ``"human"``, ``"ai"``, ``"tool"``, ... or classes, or a list of them."""

MarkerType = Literal["system", "human", "ai"]
MARKER_ID_PREFIX = "tokenbox-omitted-"
"""Omission markers get the id ``MARKER_ID_PREFIX + section id``."""
_MARKER_CLASSES: dict[str, type[BaseMessage]] = {"system": SystemMessage, "human": HumanMessage, "ai": AIMessage}
_MARKER_ROLES = {"system": "system", "human": "user", "ai": "assistant"}


class CriticalMessagesOverflow(ContextCriticalOverflow):
    """The messages that must be kept (system, anchor, overrides) alone exceed the budget."""

    def __init__(self, budget: int, required: int, section_ids: Sequence[str]) -> None:
        super().__init__(budget, required, section_ids)
        ids = ", ".join(repr(s) for s in self.section_ids) or "(none)"
        Exception.__init__(
            self,
            f"the messages that must be kept need {required:,} tokens but max_tokens is {budget:,} "
            f"(over by {required - budget:,}); they are: {ids}. Raise max_tokens, shorten them, or let them go: "
            f"keep_system=False / keep_last_human=False (TokenBoxMessages), include_system=False / start_on=None "
            f"(trim_messages), or additional_kwargs['{METADATA_KEY}'] = {{'critical': False}} on a message.",
        )


@dataclass(frozen=True)
class FitOptions:
    """How a conversation maps onto Sections (see the module docstring)."""

    system: Literal["none", "first", "leading"] = "leading"
    anchor: MessageTypes | None = "human"
    start_on: MessageTypes | None = "human"
    eviction: Literal["oldest", "newest"] = "oldest"
    omission_marker: bool | str = False
    marker_type: MarkerType = "system"
    partial: Callable[[str], list[str]] | None = None
    horizon: bool = True

    def __post_init__(self) -> None:
        if self.partial is not None and self.omission_marker:
            raise SectionError("a partial boundary message and an omission marker cannot be combined")


@dataclass(frozen=True)
class RemovedMessage:
    """A message left out, why (``budget``, ``start_on``, ``end_on``, ``beyond_horizon``) and its size if counted."""

    index: int
    id: str
    reason: str
    tokens: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "reason": self.reason, "tokens": self.tokens}


@dataclass
class FitResult:
    """The fitted conversation, the core's layout and what was left out.

    ``kept`` lists the original indices of the messages in ``messages`` (an
    omission marker has none); ``removed`` the messages the layout or the
    fix-ups left out; :meth:`all_removed` adds the ones beyond the horizon.
    ``max_tokens`` is the budget's max; ``effective_max_tokens`` the limit the
    messages were actually fitted to (the max less ``output_reserve``, the
    reserved slots and the estimation safety margin).
    """

    messages: list[BaseMessage]
    layout: Layout
    kept: list[int]
    kept_ids: list[str]
    removed: list[RemovedMessage]
    total_tokens: int
    max_tokens: int
    counter: str
    partial: int | None = None
    pruned: Callable[[], list[RemovedMessage]] = field(default=list, repr=False)
    effective_max_tokens: int | None = None
    output_reserve: int = 0
    reserved_tokens: int = 0

    def all_removed(self) -> list[RemovedMessage]:
        """Every message left out, beyond-horizon ones included, by index."""
        return sorted([*self.removed, *self.pruned()], key=lambda r: r.index)

    def report(self) -> dict[str, Any]:
        """A JSON-ready summary: totals, kept ids, removed messages, the core's section decisions."""
        removed = self.all_removed()
        return {
            "total_tokens": self.total_tokens,
            "max_tokens": self.max_tokens,
            "output_reserve": self.output_reserve,
            "reserved_tokens": self.reserved_tokens,
            "effective_max_tokens": self.max_tokens if self.effective_max_tokens is None else self.effective_max_tokens,
            "counter": self.counter,
            "fingerprint": self.layout.fingerprint,
            "kept": len(self.kept),
            "removed": len(removed),
            "kept_ids": list(self.kept_ids),
            "removed_messages": [r.to_dict() for r in removed],
            "partial": self.partial,
            "sections": [{k: v for k, v in s.decisions().items() if k != "removed"} for s in self.layout.sections],
        }


def matches(message: BaseMessage, types: MessageTypes) -> bool:
    """LangChain's rule: the type name is listed, or the message is an instance of a listed class."""
    if isinstance(types, str | type):
        types = [types]
    for t in types:
        if isinstance(t, str):
            if message.type == t:
                return True
        elif isinstance(message, t):
            return True
    return False


@dataclass(frozen=True)
class ToolGroups:
    """The tool-call groups of a message list: an ``AIMessage`` with ``tool_calls`` and every ``ToolMessage``
    answering one of its calls (matched by ``tool_call_id``, later in the list).

    ``group_of`` maps each grouped index to the index of its AI message,
    ``members`` an AI message's index to all the indices of its group in list
    order; ``contiguous`` is False when some result does not directly follow
    the previous member of its group.  A tool message answering no earlier
    call belongs to no group.
    """

    group_of: dict[int, int]
    members: dict[int, list[int]]
    contiguous: bool = True

    def unit(self, index: int) -> list[int]:
        """The indices kept or removed together with ``index`` (itself alone when it is in no group)."""
        a = self.group_of.get(index)
        return self.members[a] if a is not None else [index]


def tool_groups(messages: Sequence[BaseMessage]) -> ToolGroups:
    """Group each AI tool call with its results (see :class:`ToolGroups`); the one rule every adapter uses."""
    owner: dict[str, int] = {}
    group_of: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    contiguous = True
    for i, m in enumerate(messages):
        kind = m.type
        if kind == "ai":
            calls = getattr(m, "tool_calls", None)
            if calls:
                for call in calls:
                    call_id = call.get("id")
                    if call_id:
                        owner[call_id] = i
                members[i] = [i]
                group_of[i] = i
        elif kind == "tool":
            a = owner.get(getattr(m, "tool_call_id", None) or "")
            if a is not None:
                group = members[a]
                if group[-1] != i - 1:
                    contiguous = False
                group.append(i)
                group_of[i] = a
    return ToolGroups(group_of, members, contiguous)


def omission_message(text: str, section_id: str, marker_type: MarkerType) -> BaseMessage:
    """The omission marker the core counted for ``section_id``, as a message of ``marker_type``."""
    return _MARKER_CLASSES[marker_type](content=text, id=f"{MARKER_ID_PREFIX}{section_id}")


def _item_id(message: BaseMessage, index: int) -> str:
    return message.id or f"msg-{index}"


class ItemCache:
    """A bounded, thread-safe memo of Items by key; the oldest entries go first.

    Items are frozen, so the same message at the same place is the same Item.
    Building one validates its fields (and may render text), so a warm history
    re-uses them instead.
    """

    def __init__(self, maxsize: int = 100_000) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Item] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Item]) -> Item:
        item = self._data.get(key)
        if item is None:
            item = make()
            with self._lock:
                self._data[key] = item
                if len(self._data) > self.maxsize:
                    self._data.popitem(last=False)
        return item


_ITEMS = ItemCache()


def _item(message: BaseMessage, item_id: str, group: str | None, priority: int | None, tokens: int) -> Item:
    return _ITEMS.get(
        (message_key(message), item_id, group, priority, tokens),
        lambda: Item(
            id=item_id,
            content=content_text(message.content),
            role=openai_role(message),
            kind="Message",
            priority=priority,
            group=group,
            tokens=tokens,
        ),
    )


def _override(message: BaseMessage, index: int) -> Mapping[str, Any] | None:
    value = message.additional_kwargs.get(METADATA_KEY)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise SectionError(
            f"message {index} has additional_kwargs[{METADATA_KEY!r}] = {value!r}; it must be a dict such as "
            f"{{'priority': 2}} or {{'critical': True}}"
        )
    unknown = sorted(set(value) - {"priority", "critical"})
    if unknown:
        raise SectionError(
            f"message {index}: unknown {METADATA_KEY!r} override keys {unknown}; the keys are 'priority' (int) "
            f"and 'critical' (bool)"
        )
    prio = value.get("priority")
    if prio is not None and (isinstance(prio, bool) or not isinstance(prio, int)):
        raise SectionError(f"message {index}: override 'priority' must be an int, got {prio!r}")
    crit = value.get("critical")
    if crit is not None and not isinstance(crit, bool):
        raise SectionError(f"message {index}: override 'critical' must be True or False, got {crit!r}")
    return value


def shift_budget(budget: ContextBudget, delta: int) -> ContextBudget:
    """The same budget in core units: ``delta`` (core priming minus the counter's own empty-list cost) added
    to max and target.

    A budget below what an empty list costs keeps room for the priming only, so
    nothing flexible fits (LangChain returns ``[]`` there too) and critical
    messages overflow.
    """
    if delta == 0 and budget.max_tokens >= PRIMING_TOKENS:
        return budget
    target = budget.target_tokens
    return ContextBudget(
        max_tokens=max(PRIMING_TOKENS, budget.max_tokens + delta),
        target_tokens=None if target is None else max(PRIMING_TOKENS, target + delta),
        output_reserve=min(budget.output_reserve, max(0, budget.max_tokens + delta - PRIMING_TOKENS)),
        reserved_slots=budget.reserved_slots,
        estimation_safety_margin_percent=budget.estimation_safety_margin_percent,
    )


def fit_messages(
    messages: Sequence[BaseMessage],
    counter: MessageCounter,
    budget: ContextBudget,
    options: FitOptions,
) -> FitResult:
    """Fit ``messages`` into ``budget`` (in ``counter``'s units) with one core layout."""
    n = len(messages)
    delta = PRIMING_TOKENS - counter.base
    core_budget = shift_budget(budget, delta)

    # ---- tool-call groups, per-message overrides, critical messages
    groups = tool_groups(messages)
    group_of, members, contiguous, unit = groups.group_of, groups.members, groups.contiguous, groups.unit
    overrides: dict[int, Mapping[str, Any]] = {}
    for i, m in enumerate(messages):
        kwargs = m.additional_kwargs
        if kwargs and METADATA_KEY in kwargs:
            found = _override(m, i)
            if found is not None:
                overrides[i] = found
    critical: set[int] = set()
    system_end = 0
    if options.system == "first":
        system_end = 1 if n and messages[0].type == "system" else 0
    elif options.system == "leading":
        while system_end < n and messages[system_end].type == "system":
            system_end += 1
    critical.update(range(system_end))
    anchor = None
    if options.anchor is not None:
        for i in range(n - 1, system_end - 1, -1):
            if matches(messages[i], options.anchor):
                anchor = i
                break
        if anchor is not None:
            critical.add(anchor)
    for i, o in overrides.items():
        if o.get("critical") is True:
            critical.add(i)
        elif o.get("critical") is False:
            critical.discard(i)

    # ---- a tool-call group is critical as a whole
    for i in list(critical):
        a = group_of.get(i)
        if a is not None:
            critical.update(members[a])

    # ---- sizes: critical messages always; history lazily within the horizon
    size = counter.size
    sizes: dict[int, int] = {i: size(messages[i]) for i in sorted(critical)}
    prioritised = any("priority" in o for i, o in overrides.items() if i not in critical)
    use_horizon = options.horizon and not options.omission_marker and not prioritised and contiguous
    window: set[int] = set()
    stop: int | None = None  # first index (walking from the kept end) beyond the horizon
    if use_horizon:
        fixed = PRIMING_TOKENS + sum(sizes.values())
        cap = core_budget.max_tokens - core_budget.output_reserve - core_budget.reserved_tokens - fixed
        acc = 0
        newest_first = options.eviction == "oldest"
        i = n - 1 if newest_first else 0
        while 0 <= i < n:
            if i in critical:
                i += -1 if newest_first else 1
                continue
            if acc > cap:
                stop = i
                break
            members_i = unit(i)
            for j in members_i:
                s = sizes.get(j)
                if s is None:
                    s = sizes[j] = size(messages[j])
                acc += s
                window.add(j)
            i = (members_i[0] - 1) if newest_first else (members_i[-1] + 1)
    else:
        for i in range(n):
            if i not in critical:
                sizes[i] = size(messages[i])
                window.add(i)

    # ---- sections: critical runs and history runs, in conversation order
    ids: dict[int, str] = {}
    seen: set[str] = set()
    for i in sorted(critical | window):
        item_id = _item_id(messages[i], i)
        if item_id in seen:
            item_id = f"{item_id}#{i}"
        seen.add(item_id)
        ids[i] = item_id
    index_of = {v: k for k, v in ids.items()}
    sections: list[Section] = []
    run: list[int] = []
    run_critical: bool | None = None
    history_runs = 0

    def flush() -> None:
        nonlocal history_runs
        if not run:
            return
        items = []
        for j in run:
            a = group_of.get(j)
            prio = overrides[j].get("priority") if j in overrides else None
            items.append(_item(messages[j], ids[j], f"tools:{ids[a]}" if a is not None else None, prio, sizes[j]))
        if run_critical:
            if run[-1] < system_end:
                sid = "system"
            elif len(run) == 1 and run[0] == anchor:
                sid = f"latest-{messages[run[0]].type}"
            else:
                sid = f"pinned-{run[0]}"
            sections.append(Section(sid, items, shrink=0))
        else:
            history_runs += 1
            sections.append(
                Section(
                    "history" if history_runs == 1 else f"history-{history_runs}",
                    items,
                    shrink=1,
                    priority=0 if options.eviction == "oldest" else -history_runs,
                    eviction=options.eviction,
                    omission_marker=options.omission_marker,
                    role=_MARKER_ROLES[options.marker_type],
                )
            )
        run.clear()

    for i in sorted(critical | window):
        is_critical = i in critical
        if run_critical is not None and (is_critical != run_critical or (is_critical and i != run[-1] + 1)):
            flush()
        run_critical = is_critical
        run.append(i)
    flush()
    if not sections:  # nothing to lay out (an empty conversation): an empty history keeps the core happy
        sections.append(Section("history", (), shrink=1))

    # ---- one layout
    core_counter = counter.text_counter() if options.omission_marker else (counter.core or "approximate")
    box = TokenBox(core_budget, counter=core_counter, mode="messages")
    try:
        layout = box.layout(sections)
    except ContextCriticalOverflow as exc:
        raise CriticalMessagesOverflow(
            max(0, exc.budget - delta), max(0, exc.required - delta), exc.section_ids
        ) from exc

    # ---- back to messages
    entries: list[int | BaseMessage] = []  # original indices, or a marker message
    removed: list[RemovedMessage] = []
    evicted: list[int] = []
    for laid in layout.sections:
        if laid.marker:
            entries.append(omission_message(laid.marker, laid.id, options.marker_type))
        if isinstance(laid.content, tuple):
            entries.extend(index_of[it.id] for it in laid.content)
        for r in laid.removed:
            j = index_of[r.id]
            evicted.append(j)
            removed.append(RemovedMessage(j, r.id, r.reason, sizes[j]))
    total = layout.total_tokens - delta

    # ---- partial boundary message (LangChain's allow_partial)
    partial_index: int | None = None
    replaced: dict[int, BaseMessage] = {}
    if options.partial is not None and evicted:
        boundary = max(evicted) if options.eviction == "oldest" else min(evicted)
        room = layout.target_tokens - layout.total_tokens
        if boundary not in group_of and room > 0:
            cut = _partial(messages[boundary], room, counter, options.partial, keep_tail=options.eviction == "oldest")
            if cut is not None:
                partial_index = boundary
                replaced[boundary] = cut
                total += counter.size(cut)
                removed = [r for r in removed if r.index != boundary]
                ints = cast(list[int], entries)  # no omission marker with partial: only indices
                bisect.insort(ints, boundary)

    # ---- start_on fix-up
    if options.start_on is not None:
        dropped = start_on_fixup(entries, messages, options.start_on, critical, system_end, groups)
        for j in dropped:
            tokens = counter.size(replaced[j]) if j in replaced else sizes[j]
            total -= tokens
            removed.append(RemovedMessage(j, ids[j], "start_on", tokens))
            if j == partial_index:
                partial_index = None

    # ---- omission markers where a provider accepts them (moving a message does not change its cost)
    if options.omission_marker:
        place_markers(entries, messages, options.start_on, groups)

    out: list[BaseMessage] = []
    kept: list[int] = []
    kept_ids: list[str] = []
    for e in entries:
        if isinstance(e, int):
            out.append(replaced.get(e, messages[e]))
            kept.append(e)
            kept_ids.append(ids[e])
        else:
            out.append(e)

    def pruned() -> list[RemovedMessage]:
        if stop is None:
            return []
        rng = range(stop, -1, -1) if options.eviction == "oldest" else range(stop, n)
        return [
            RemovedMessage(j, _item_id(messages[j], j), "beyond_horizon", None)
            for j in rng
            if j not in critical and j not in window
        ]

    return FitResult(
        messages=out,
        layout=layout,
        kept=kept,
        kept_ids=kept_ids,
        removed=sorted(removed, key=lambda r: r.index),
        total_tokens=total,
        max_tokens=budget.max_tokens,
        counter=counter.name,
        partial=partial_index,
        pruned=pruned,
        effective_max_tokens=max(0, layout.max_tokens - delta),
        output_reserve=budget.output_reserve,
        reserved_tokens=budget.reserved_tokens,
    )


def _partial(
    message: BaseMessage,
    room: int,
    counter: MessageCounter,
    splitter: Callable[[str], list[str]],
    *,
    keep_tail: bool,
) -> BaseMessage | None:
    """LangChain's partial message: fewest content blocks dropped, else most text splits kept, within ``room``."""
    content = message.content
    if isinstance(content, list) and len(content) > 1:
        for keep in range(len(content) - 1, 0, -1):
            blocks = content[len(content) - keep :] if keep_tail else content[:keep]
            candidate = message.model_copy(update={"content": list(blocks)})
            if counter.size(candidate) <= room:
                return candidate
    text: str | None = None
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                text = block
                break
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                break
    if not text:
        return None
    splits = list(splitter(text))
    if keep_tail:
        splits.reverse()
    lo, hi = 0, len(splits)
    best: BaseMessage | None = None
    while lo < hi:  # most splits that fit, assuming more text never costs less
        mid = (lo + hi + 1) // 2
        chosen = splits[:mid]
        if keep_tail:
            chosen = chosen[::-1]
        candidate = message.model_copy(update={"content": "".join(chosen)})
        if counter.size(candidate) <= room:
            lo = mid
            best = candidate
        else:
            hi = mid - 1
    return best if lo > 0 else None


def start_on_fixup(
    entries: list[int | BaseMessage],
    messages: Sequence[BaseMessage],
    start_on: MessageTypes,
    critical: Set[int],
    system_end: int,
    groups: ToolGroups,
) -> list[int]:
    """Drop leading history messages (whole tool groups) until one of ``start_on``'s types; see the module doc.

    ``entries`` are indices into ``messages`` in order, or marker messages
    (left in place); indices below ``system_end`` (the leading system
    messages) are skipped, a ``critical`` index stops the drop, and when no
    kept message is of a ``start_on`` type nothing is dropped (an agent loop
    is never emptied).  Returns the dropped indices (and removes them from
    ``entries``)."""
    dropped: list[int] = []
    for e in entries:
        if not isinstance(e, int):
            continue  # an omission marker stays where it is
        if e < system_end:
            continue
        if e in critical or matches(messages[e], start_on):
            break
        if e in dropped:
            continue
        dropped.extend(groups.unit(e))
    else:
        return []  # no message to start on: emptying the history would help no provider
    if not dropped:
        return []
    gone = set(dropped)
    entries[:] = [e for e in entries if not (isinstance(e, int) and e in gone)]
    return sorted(gone)


def place_markers(
    entries: list[int | BaseMessage],
    messages: Sequence[BaseMessage],
    start_on: MessageTypes | None,
    groups: ToolGroups,
) -> None:
    """Move the omission markers in ``entries`` (indices into ``messages``, or marker messages) to where a
    provider accepts them, in place; everything else keeps its order.

    Each marker stands at the head of its run's kept messages unless that
    position is invalid: a system marker after a conversation message moves up
    to the end of the leading system messages (several keep their order); a
    human or ai marker before a system message moves down to after the leading
    system messages and, when it would then open the conversation without being
    of a ``start_on`` type while the first message is, after that message and
    its tool group.  A marker's cost does not depend on where it stands, so the
    total the core counted is unchanged.
    """
    rest = [e for e in entries if isinstance(e, int)]
    if len(rest) == len(entries):
        return
    lead = 0
    while lead < len(rest) and messages[rest[lead]].type == "system":
        lead += 1
    placed: list[tuple[int, int, BaseMessage]] = []  # (position in rest, order, marker)
    position = 0
    for e in entries:
        if isinstance(e, int):
            position += 1
            continue
        at = position
        if e.type == "system":
            at = min(at, lead)
        else:
            at = max(at, lead)
            if at == lead and start_on is not None and at < len(rest) and not matches(e, start_on):
                first = rest[at]
                if matches(messages[first], start_on):
                    unit = set(groups.unit(first))
                    while at < len(rest) and rest[at] in unit:
                        at += 1
        placed.append((at, len(placed), e))
    placed.sort(key=lambda p: (p[0], p[1]))
    out: list[int | BaseMessage] = []
    k = 0
    for i, e in enumerate(rest):
        while k < len(placed) and placed[k][0] == i:
            out.append(placed[k][2])
            k += 1
        out.append(e)
    out.extend(p[2] for p in placed[k:])
    entries[:] = out
