"""A conversation as core Sections and Items, and the way back from a layout (chapter §6.2.4, multi-turn).

The mapping (the conversation rules):

- each message is an :class:`~tokenbox_core.Item` whose ``tokens`` is its
  exact size (:class:`~tokenbox_core.chat._messages.ChatCounter`);
- a tool call and all its results share an ``Item.group`` — the same id in
  whichever sections its members stand — so they are kept or removed together;
- critical messages (leading system messages, the latest message of
  ``keep_last``'s roles, ``{"critical": True}`` overrides, and every member of
  a tool group one of them belongs to) form critical Sections (``shrink=0``);
  the runs of history between them are flexible list Sections evicted oldest
  (``strategy="last"``) or newest first, so declaration order is the
  conversation's order.

**Horizon.**  With a ``horizon`` (the most tokens the conversation can get)
and history evicted strictly in order (no per-message priorities, no marker,
tool groups contiguous), a message whose newer messages alone exceed what is
left after the critical ones can never be kept: it is neither counted nor
turned into an Item, and is reported as ``beyond_horizon``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tokenbox_core._sections import Item, Section
from tokenbox_core.chat._fixups import partial_cut, place_markers, split_groups, start_on_fixup
from tokenbox_core.chat._messages import (
    OVERRIDE_KEY,
    SYSTEM_ROLES,
    ChatCounter,
    Roles,
    ToolGroups,
    matcher,
)
from tokenbox_core.chat._read import ReadMessages, read_messages
from tokenbox_core.chat._step import critical_step
from tokenbox_core.layout import Layout
from tokenbox_core.tokens import content_text

__all__ = [
    "MARKER_ID_PREFIX",
    "ConversationSections",
    "Marker",
    "RemovedMessage",
    "SystemRule",
    "conversation_sections",
]

SystemRule = Literal["leading", "first", "all", "none"]
"""Which system (and developer) messages are critical: the leading run, the first message only, all, none."""

MARKER_ID_PREFIX = "tokenbox-omitted-"
"""An omission marker's id is ``MARKER_ID_PREFIX + section id``."""


@dataclass(frozen=True)
class RemovedMessage:
    """A message left out: its input index, item id, why (``budget``/the layout's reason, ``group``,
    ``start_on``, ``beyond_horizon``) and its size when it was counted."""

    index: int
    id: str
    reason: str
    tokens: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "reason": self.reason, "tokens": self.tokens}


@dataclass(frozen=True)
class Marker:
    """An omission marker the core counted for history section ``section``: its text, role and the ids it
    stands for.  ``id`` is ``MARKER_ID_PREFIX + section``."""

    section: str
    text: str
    role: str
    removed: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{MARKER_ID_PREFIX}{self.section}"

    def message(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.text}


@dataclass
class Finished:
    """A layout mapped back: entries (indices or markers), removals, the partial cut and the tokens the
    post-layout steps changed (negative: removed)."""

    entries: list[int | Marker]
    removed: list[RemovedMessage]
    evicted: list[int]
    partial: int | None = None
    replaced: dict[int, dict[str, Any]] = field(default_factory=dict)
    delta: int = 0


def _system_end(messages: Sequence[Mapping[str, Any]], rule: SystemRule) -> int:
    n = next((i for i, m in enumerate(messages) if m["role"] not in SYSTEM_ROLES), len(messages))
    return min(n, 1) if rule == "first" else n if rule in ("leading", "all") else 0


@dataclass
class ConversationSections:
    """The Sections of one conversation and the mapping back (see :func:`conversation_sections`).

    Put :attr:`sections` into a layout (with other sections, in any order
    around them), then :meth:`messages_from` (or :meth:`finish`) gives the
    kept messages in order.
    """

    messages: Sequence[Mapping[str, Any]]
    sections: list[Section]
    counter: ChatCounter
    ids: dict[int, str]
    sizes: dict[int, int]
    critical: frozenset[int]
    system_end: int
    groups: ToolGroups
    strategy: Literal["last", "first"]
    start_on: Roles | None
    start_on_if_trimmed: bool
    marker_role: str
    splitter: Callable[[str], list[str]] | None
    stop: int | None
    window: frozenset[int]
    previews: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index_of = {v: k for k, v in self.ids.items()}
        self.section_ids = frozenset(s.id for s in self.sections)

    def beyond_horizon(self) -> list[RemovedMessage]:
        """The messages never counted because they could not fit (``reason="beyond_horizon"``)."""
        if self.stop is None:
            return []
        n = len(self.messages)
        rng = range(self.stop, -1, -1) if self.strategy == "last" else range(self.stop, n)
        out = [
            RemovedMessage(j, self.item_id(j), "beyond_horizon", None)
            for j in rng
            if j not in self.critical and j not in self.window
        ]
        return sorted(out, key=lambda r: r.index)

    def item_id(self, index: int) -> str:
        known = self.ids.get(index)
        if known is not None:
            return known
        m = self.messages[index]
        options = m.get(OVERRIDE_KEY)
        own = options.get("id", m.get("id")) if isinstance(options, Mapping) else m.get("id")
        return own if isinstance(own, str) and own else f"m{index}"

    def _is_system(self, index: int) -> bool:
        return self.messages[index]["role"] in SYSTEM_ROLES

    def finish(self, layout: Layout) -> Finished:
        """Map ``layout`` back to entries, then: whole tool groups, the partial cut, ``start_on``, markers."""
        entries: list[int | Marker] = []
        removed: list[RemovedMessage] = []
        evicted: list[int] = []
        for laid in layout.sections:
            if laid.id not in self.section_ids:
                continue
            if laid.marker:
                gone = tuple(r.id for r in laid.removed)
                entries.append(Marker(laid.id, laid.marker, self.marker_role, gone))
            if isinstance(laid.content, tuple):
                entries.extend(self.index_of[it.id] for it in laid.content)
            for r in laid.removed:
                j = self.index_of[r.id]
                evicted.append(j)
                removed.append(RemovedMessage(j, r.id, r.reason, self.sizes[j]))
        done = Finished(entries, removed, evicted, replaced={j: p for j, p in self.previews.items() if j in entries})
        for j in split_groups(entries, self.groups):
            done.delta -= self.sizes[j]
            removed.append(RemovedMessage(j, self.ids[j], "group", self.sizes[j]))
        if self.splitter is not None and evicted:
            self._partial(done, layout)
        trimmed = bool(removed) or self.stop is not None
        if self.start_on is not None and (trimmed or not self.start_on_if_trimmed):
            starts = matcher(self.start_on)
            messages = self.messages
            dropped = start_on_fixup(
                entries,
                is_start=lambda i: starts(messages[i]),
                is_system=self._is_system,
                critical=self.critical,
                system_end=self.system_end,
                groups=self.groups,
            )
            for j in dropped:
                cut = done.replaced.get(j)
                tokens = self.sizes[j] if cut is None else self.counter.size(cut, j)
                done.delta -= tokens
                removed.append(RemovedMessage(j, self.ids[j], "start_on", tokens))
                if j == done.partial:
                    done.partial = None
                    del done.replaced[j]
        if any(isinstance(e, Marker) for e in entries):
            starts_or_none = matcher(self.start_on) if self.start_on is not None else None
            messages = self.messages
            place_markers(
                entries,
                is_system=self._is_system,
                is_start=None if starts_or_none is None else (lambda i: starts_or_none(messages[i])),
                marker_is_system=lambda m: m.role in SYSTEM_ROLES,
                marker_is_start=lambda m: starts_or_none is not None and starts_or_none(m.message()),
                groups=self.groups,
            )
        done.removed = sorted(removed, key=lambda r: r.index)
        return done

    def _partial(self, done: Finished, layout: Layout) -> None:
        assert self.splitter is not None
        boundary = max(done.evicted) if self.strategy == "last" else min(done.evicted)
        room = layout.target_tokens - layout.total_tokens + done.delta
        if boundary in self.groups.group_of or room <= 0 or any(isinstance(e, Marker) for e in done.entries):
            return
        cut = partial_cut(
            self.messages[boundary], boundary, room, self.counter, self.splitter, keep_tail=self.strategy == "last"
        )
        if cut is None:
            return
        done.partial = boundary
        done.replaced[boundary] = cut
        done.delta += self.counter.size(cut, boundary)
        done.removed = [r for r in done.removed if r.index != boundary]
        ints = [e for e in done.entries if isinstance(e, int)]
        ints.append(boundary)
        done.entries[:] = sorted(ints)

    def messages_from(self, layout: Layout) -> list[Mapping[str, Any]]:
        """The kept messages of ``layout`` in order (markers as ``{"role", "content"}``, the reserved
        ``"tokenbox"`` key stripped)."""
        done = self.finish(layout)
        return [self.output(e, done) for e in done.entries]

    def render(self, layout: Layout) -> list[Mapping[str, Any]]:
        """Every message of ``layout``: this conversation as the engine keeps it, the other sections as
        ``Layout.messages`` renders them (:func:`tokenbox_core.chat._render.render_layout`)."""
        from tokenbox_core.chat._render import render_layout

        return render_layout(self, layout)

    def output(self, entry: int | Marker, done: Finished) -> Mapping[str, Any]:
        """One entry as an output message."""
        if isinstance(entry, Marker):
            return entry.message()
        m = done.replaced.get(entry, self.messages[entry])
        if "tokenbox" in m:
            return {k: v for k, v in m.items() if k != "tokenbox"}
        return m


def conversation_sections(
    messages: Iterable[Mapping[str, Any]] | ReadMessages,
    *,
    counter: Any = "gpt-4o",
    include_system: bool | SystemRule = True,
    keep_last: Roles | None = "user",
    start_on: Roles | None = "user",
    start_on_if_trimmed: bool = False,
    strategy: Literal["last", "first"] = "last",
    omission_marker: bool | str = False,
    marker_role: str = "system",
    text_splitter: Callable[[str], list[str]] | None = None,
    horizon: int | None = None,
    history_priority: int = 0,
    media_tokens: int | None = None,
    prefix: str = "",
    step_room: int | None = None,
) -> ConversationSections:
    """Translate a conversation into core Sections (see the module docstring and :func:`fit_conversation`
    for the options); ``prefix`` starts every section id and group, so several conversations can share a
    layout; ``horizon`` is the most tokens the conversation can be given (``None``: count everything).
    ``messages`` may be a :class:`~tokenbox_core.chat._read.ReadMessages` already read
    (:func:`~tokenbox_core.chat._read.read_messages` with ``only``: the messages are then read only as
    far as the engine needs them).  ``step_room`` (the most tokens the conversation can get, with
    ``strategy="last"``): the newest agent step is critical and previewed to fit (:mod:`tokenbox_core.chat._step`)."""
    from tokenbox_core.errors import SectionError

    read = messages if isinstance(messages, ReadMessages) else read_messages(messages)
    msgs = read.messages
    if strategy not in ("last", "first"):
        raise SectionError(f"strategy must be 'last' or 'first', got {strategy!r}")
    rule: SystemRule = ("leading" if include_system else "none") if isinstance(include_system, bool) else include_system
    if rule not in ("leading", "first", "all", "none"):
        raise SectionError(f"include_system must be True, False, 'leading', 'first', 'all' or 'none', got {rule!r}")
    chat = ChatCounter.of(counter, media_tokens=media_tokens)
    n = len(msgs)
    read.raise_deferred()
    groups = read.groups
    found = read.overrides
    system_end = _system_end(msgs, rule)
    critical: set[int] = set(range(system_end))
    if rule == "all":
        critical.update(i for i, m in enumerate(msgs) if m["role"] in SYSTEM_ROLES)
    anchor: int | None = None
    if keep_last is not None:
        last = matcher(keep_last)
        anchor = next((i for i in range(n - 1, system_end - 1, -1) if last(msgs[i])), None)
        if anchor is not None:
            critical.add(anchor)
    for i, o in found.items():
        if o.get("critical") is True:
            critical.add(i)
        elif o.get("critical") is False:
            critical.discard(i)
    for i in list(critical):  # a tool group is critical as a whole
        a = groups.group_of.get(i)
        if a is not None:
            critical.update(groups.members[a])

    sizes, previews = critical_step(msgs, groups, system_end, found, critical, chat, step_room, strategy == "last")
    prioritised = any("priority" in o for i, o in found.items() if i not in critical)
    window: set[int] = set()
    stop: int | None = None
    if horizon is not None and not omission_marker and not prioritised and groups.contiguous:
        cap = horizon - sum(sizes.values())
        acc = 0
        newest_first = strategy == "last"
        group_of, members, size_of = groups.group_of, groups.members, chat.size_of
        i = n - 1 if newest_first else 0
        while 0 <= i < n:
            if i in critical:
                i += -1 if newest_first else 1
                continue
            if acc > cap:
                stop = i
                break
            a = group_of.get(i)
            if a is None:  # a message in no tool group: its own unit
                s = sizes.get(i)
                if s is None:
                    s = sizes[i] = size_of(msgs, i)
                acc += s
                window.add(i)
                i += -1 if newest_first else 1
                continue
            unit = members[a]
            for j in unit:
                s = sizes.get(j)
                if s is None:
                    s = sizes[j] = size_of(msgs, j)
                acc += s
                window.add(j)
            i = (unit[0] - 1) if newest_first else (unit[-1] + 1)
    else:
        rest = [i for i in range(n) if i not in critical]
        sizes.update(chat.sizes(msgs, rest))  # the plain texts counted in one batch
        window.update(rest)

    ids: dict[int, str] = {}
    seen: set[str] = set()
    sections: list[Section] = []
    run: list[int] = []
    run_messages: list[Mapping[str, Any]] = []
    history_runs = 0
    group_of = groups.group_of

    def flush(is_critical: bool) -> None:
        nonlocal history_runs
        items = []
        for j, m in zip(run, run_messages, strict=True):
            m = previews.get(j, m)
            a = group_of.get(j)
            role = m["role"]
            content = m.get("content")
            items.append(
                Item(
                    id=ids[j],
                    content=content if type(content) is str else content_text(content),
                    role=role,
                    kind="ToolOutput" if role == "tool" else "Message",
                    priority=found[j].get("priority") if j in found else None,
                    group=f"{prefix}tools-{a}" if a is not None else None,
                    tokens=sizes[j],
                )
            )
        if is_critical:
            if run[-1] < system_end:
                sid = "system"
            elif len(run) == 1 and run[0] == anchor:
                sid = f"latest-{msgs[run[0]]['role']}"
            else:
                sid = f"pinned-{run[0]}"
            sections.append(Section(prefix + sid, items, shrink=0))
        else:
            history_runs += 1
            sections.append(
                Section(
                    prefix + ("history" if history_runs == 1 else f"history-{history_runs}"),
                    items,
                    shrink=1,
                    priority=history_priority if strategy == "last" else history_priority - history_runs,
                    eviction="oldest" if strategy == "last" else "newest",
                    omission_marker=omission_marker,
                    role=marker_role,
                )
            )
        run.clear()
        run_messages.clear()

    run_critical: bool | None = None
    for i in sorted(critical | window):
        m = msgs[i]
        own = found[i].get("id", m.get("id")) if i in found else m.get("id")  # the override's, else the message's
        # the item id: that id, unless missing or taken
        item_id = own if isinstance(own, str) and own and own not in seen else f"m{i}"
        if item_id in seen:
            item_id = f"m{i}#{len(seen)}"
        seen.add(item_id)
        ids[i] = item_id
        is_critical = i in critical
        if run_critical is not None and (is_critical != run_critical or (is_critical and i != run[-1] + 1)):
            flush(run_critical)
        run_critical = is_critical
        run.append(i)
        run_messages.append(m)
    if run_critical is not None:
        flush(run_critical)
    if not sections:  # an empty conversation: an empty history keeps the core happy
        sections.append(Section(prefix + "history", (), shrink=1))
    return ConversationSections(
        messages=msgs,
        sections=sections,
        counter=chat,
        ids=ids,
        sizes=sizes,
        critical=frozenset(critical),
        system_end=system_end,
        groups=groups,
        strategy=strategy,
        start_on=start_on,
        start_on_if_trimmed=start_on_if_trimmed,
        marker_role=marker_role,
        splitter=text_splitter,
        stop=stop,
        window=frozenset(window),
        previews=previews,
    )
