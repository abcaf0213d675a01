"""How an archived message appears in a compiled context: verbatim, masked, or as an offload preview.

Nothing here writes to the archive: a view is built from the archived message
each compile.  Tool-call ids, tool calls and provider items (content parts such
as thinking, reasoning or compaction blocks) are never rewritten: a masked or
offloaded tool result keeps its ``tool_call_id`` and only its text changes; a
result whose content holds non-text parts is never masked or offloaded.

>>> from tokenbox_core.tokens import get_counter
>>> message = {"role": "tool", "tool_call_id": "c1", "content": "line one\\nline two", "id": "t_4"}
>>> masked_message(message, "grep", 12, MaskingConfig())["content"][:52]
'[tool result t_4 (grep, 12 tokens) masked to save ro'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from tokenbox_core.chat._messages import SYSTEM_ROLES, ToolGroups, tool_groups
from tokenbox_core.chat._validate import check_conversation
from tokenbox_core.compiler import CompiledContext
from tokenbox_core.session._archive import Archive
from tokenbox_core.session._options import MaskingConfig, OffloadConfig
from tokenbox_core.session._recalled import Recalled
from tokenbox_core.session._window import Unit, WindowPlan
from tokenbox_core.tokens import TokenCounter, content_text
from tokenbox_core.tokens._messages import message_token_count

__all__ = [
    "Rows",
    "View",
    "fitted_preview",
    "mask_tool_result",
    "masked_message",
    "offload_preview",
    "plain_text",
    "preview_line",
    "tool_names",
    "with_block",
]


def plain_text(message: Mapping[str, Any]) -> str | None:
    """The message's content when it is text only (a string, or text parts), else ``None`` (provider items,
    media: such a message is shown verbatim or not at all)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple) and all(
        isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content
    ):
        return "".join(str(p["text"]) for p in content)
    return None


def preview_line(text: str, limit: int) -> str:
    """The first non-empty line of ``text``, whitespace collapsed, at most ``limit`` characters (``…`` if cut)."""
    line = next((" ".join(ln.split()) for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: max(0, limit - 1)].rstrip() + "…"


def tool_names(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Tool-call id → the called tool's name, over the assistant messages given."""
    names: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or ():
            if isinstance(call, Mapping) and call.get("id"):
                fn = call.get("function", call)
                names[str(call["id"])] = str(fn.get("name", "?") if isinstance(fn, Mapping) else "?")
    return names


def _with_content(message: Mapping[str, Any], text: str) -> dict[str, Any]:
    return {**message, "content": text}


def masked_message(message: Mapping[str, Any], tool: str, tokens: int, config: MaskingConfig) -> dict[str, Any]:
    """The placeholder a masked tool result is shown as (same role, ``tool_call_id`` and id)."""
    text = plain_text(message) or ""
    preview = preview_line(text, config.preview_chars)
    return _with_content(
        message, config.placeholder.format(id=message.get("id", "?"), tool=tool, tokens=tokens, preview=preview)
    )


def mask_tool_result(
    message: Mapping[str, Any], tool: str, tokens: int, masking: MaskingConfig
) -> dict[str, Any] | None:
    """The placeholder a tool result is shown as when ``masking`` masks it, as a session's compile shows it
    (same role, ``tool_call_id`` and id; ``tokens`` is the result's size); ``None`` when ``masking`` never
    masks it: the ``tool`` is in ``masking.exclude_tools``, or the content is not text only (media, provider
    items).  For a framework's own in-place masking (LangChain's ``ContextEdit``).

    >>> result = {"role": "tool", "content": "x", "id": "t_1"}
    >>> mask_tool_result(result, "grep", 1, MaskingConfig(exclude_tools=("grep",))) is None
    True
    """
    if tool in masking.exclude_tools or plain_text(message) is None:
        return None
    return masked_message(message, tool, tokens, masking)


def offload_preview(
    message: Mapping[str, Any], tokens: int, counter: TokenCounter, config: OffloadConfig
) -> dict[str, Any]:
    """The head and tail of an oversized tool result with its archived id and how to read the rest."""
    text = plain_text(message) or ""
    head = counter.truncate(text, config.head, keep="head") if config.head else ""
    tail = counter.truncate(text, config.tail, keep="tail") if config.tail else ""
    if len(head) + len(tail) > len(text):  # overlapping ends of a text with few tokens: show the head only
        tail = ""
    doc_id = message.get("id", "?")
    start = len(text) - len(tail)
    note = (
        f"\n[… offloaded: {doc_id} holds the whole result ({tokens:,} tokens, {len(text):,} characters); shown are "
        f"characters 0–{len(head):,}" + (f" and {start:,}–{len(text):,}" if tail else "") + ". "
        f'rehydrate("{doc_id}", offset={len(head)}, limit=4000) reads on …]\n'
    )
    return _with_content(message, head + note + tail)


def fitted_preview(
    message: Mapping[str, Any], tokens: int, counter: TokenCounter, limit: int
) -> tuple[dict[str, Any], int]:
    """``message`` (a tool result of ``tokens`` tokens) as its head and tail in at most ``limit`` tokens where
    that is possible, with its archived id and how to read the rest (:func:`offload_preview`), and its size.

    The newest agent step's results are shown this way when the step does not fit the window whole: the
    model sees what the tool returned and where the rest is, and does not call the tool again.  Below the
    note's own size only the note is shown (the result is never left out: an over-full request is the
    compile's to report)."""
    _, note = _preview(message, tokens, counter, 0)
    text_room = max(0, limit - note)
    preview, size = _preview(message, tokens, counter, text_room)
    for _ in range(3):  # the ends' tokens count a little otherwise inside the message: shrink by the excess
        if size <= limit or text_room == 0:
            break
        text_room = max(0, text_room - (size - limit))
        preview, size = _preview(message, tokens, counter, text_room)
    return preview, size


def _preview(message: Mapping[str, Any], tokens: int, counter: TokenCounter, room: int) -> tuple[dict[str, Any], int]:
    head = room * 3 // 5
    ends = OffloadConfig(threshold_tokens=room + 1, head=head, tail=room - head)
    preview = offload_preview(message, tokens, counter, ends)
    return preview, message_token_count(preview, counter)


class Rows:
    """Each archived message as a compile shows it: verbatim or as an offload preview, its size, and its masking
    placeholder with that one's size (results that may be masked).

    Owned by one :class:`~tokenbox_core.ContextSession` and kept from one compile to the next, because a long
    session would otherwise derive every row again at every turn (the CPU of a 500-turn agent loop's compile):
    archived messages never change and a session's options are fixed, so :meth:`extend` derives the rows of the
    messages added since only.  Keyed by the archived ids (it starts over when they are not the ones it holds);
    its size is a few references per archived message, released with the session.
    """

    def __init__(self, masking: MaskingConfig | None, offload: OffloadConfig | None) -> None:
        self.masking = masking
        self.offload = offload
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self.messages: list[Mapping[str, Any]] = []  # the archive's own message objects the rows were derived from
        self.names: dict[str, str] = {}
        self.shown: list[Mapping[str, Any]] = []
        self.sizes: list[int] = []
        self.offloaded: set[int] = set()
        self.masked_views: dict[int, Mapping[str, Any]] = {}
        self.masked_sizes: dict[int, int] = {}
        self._units_from, self._units_to = -1, -1
        self._units: list[Unit] = []
        self._unit_groups: list[list[int]] = []

    def extend(self, archive: Archive, messages: Sequence[Mapping[str, Any]], ids: Sequence[str]) -> None:
        """Derive the rows of ``messages`` (with their archived ``ids``) not derived yet (the archive hands out the
        same message objects until it reads the session again from the start; other objects: start over)."""
        with self._lock:
            held = len(self.messages)
            if held > len(messages) or (held and messages[held - 1] is not self.messages[-1]):
                self._clear()
                held = 0
            for p in range(held, len(messages)):
                self._add(archive, p, messages[p], ids[p])

    def units_before(
        self, lead: int, anchor: int, build: Callable[[int, int], tuple[list[Unit], list[list[int]]]]
    ) -> tuple[list[Unit], list[list[int]]]:
        """The history units (and maskable results per tool group) of positions ``lead``..``anchor``: those
        before the current user message, which no later message changes — kept, and extended when the current
        user message moves on (``build(start, end)`` makes the units of a range)."""
        with self._lock:
            if self._units_from != lead or self._units_to > anchor:
                self._units_from, self._units_to, self._units, self._unit_groups = lead, lead, [], []
            if self._units_to < anchor:
                units, unit_groups = build(self._units_to, anchor)
                self._units, self._unit_groups = self._units + units, self._unit_groups + unit_groups
                self._units_to = anchor
            return list(self._units), list(self._unit_groups)

    def _add(self, archive: Archive, p: int, m: Mapping[str, Any], doc_id: str) -> None:
        masking, offload = self.masking, self.offload
        self.names.update(tool_names([m]))
        self.messages.append(m)
        size = archive.size(doc_id, "verbatim", m)
        shown: Mapping[str, Any] = m
        text = plain_text(m) if m.get("role") == "tool" else None
        shown_size = size
        if text is not None and offload is not None and size > offload.threshold_tokens:
            preview = partial(offload_preview, m, size, archive.counter, offload)
            shown, shown_size = archive.view(doc_id, "preview", preview)
            self.offloaded.add(p)
        self.shown.append(shown)
        self.sizes.append(shown_size)
        if text is None or masking is None:
            return
        tool = self.names.get(str(m.get("tool_call_id")), "?")
        if tool not in masking.exclude_tools:
            masked, masked_size = archive.view(doc_id, "masked", partial(masked_message, m, tool, size, masking))
            if masked_size < shown_size:
                self.masked_views[p], self.masked_sizes[p] = masked, masked_size


class View:
    """One compile's view of the archive: each message as shown, its size, the history's units and groups.

    ``messages`` are the archived messages (ids set to their archived ids) after the compile-time check
    (``on_invalid``); ``lead`` the leading system messages; ``anchor`` the current user message's position
    (``None`` when the compile's ``user=`` is the current message, or there is none).
    """

    def __init__(
        self,
        archive: Archive,
        masking: MaskingConfig | None,
        offload: OffloadConfig | None,
        on_invalid: str,
        *,
        has_user: bool,
        rows: Rows | None = None,
    ) -> None:
        archived, groups, valid = archive.messages()
        if not valid:  # what cannot be sent is raised or repaired here (in the view only)
            archived = [dict(m) for m in check_conversation(archived, on_invalid=on_invalid, complete=True)]
            groups = tool_groups(archived)
        self.messages: list[dict[str, Any]] = archived
        self.ids = [str(m["id"]) for m in self.messages]
        self.archive = archive
        n = len(self.messages)
        self.lead = next((p for p, m in enumerate(self.messages) if m.get("role") not in SYSTEM_ROLES), n)
        last_user = next((p for p in range(n - 1, self.lead - 1, -1) if self.messages[p].get("role") == "user"), None)
        self.anchor: int | None = None if has_user else last_user
        self.has_user = has_user
        self._call = groups.group_of
        # a valid archive is shown as archived: its rows are the session's, derived once per message
        table = rows if valid and rows is not None else Rows(masking, offload)
        table.extend(archive, self.messages, self.ids)
        self.shown: Sequence[Mapping[str, Any]] = table.shown
        self.sizes: Sequence[int] = table.sizes
        self.offloaded: set[int] = table.offloaded
        self.masked_views: Mapping[int, Mapping[str, Any]] = table.masked_views
        self.masked_sizes: Mapping[int, int] = table.masked_sizes
        if self.anchor is None:
            self.units, self.groups = self._units(groups, self.lead, n, after=False)
        else:  # the units before the current user message are final: the session's table keeps them
            before, before_groups = table.units_before(self.lead, self.anchor, lambda a, b: self._units(groups, a, b))
            later, later_groups = self._units(groups, self.anchor + 1, n, after=True)
            self.units, self.groups = before + later, before_groups + later_groups

    def _units(
        self, groups: ToolGroups, start: int, end: int, *, after: bool = False
    ) -> tuple[list[Unit], list[list[int]]]:
        """The history units of positions ``start``..``end`` (the current user message is not among them) and
        each tool group's results that may be masked; ``after``: agent steps after the current user message."""
        units: list[Unit] = []
        maskable: list[list[int]] = []
        placed: set[int] = set()
        for p in range(start, end):
            if p in placed:
                continue
            head = groups.group_of.get(p)
            members = [q for q in groups.members[head] if start <= q < end] if head == p else [p]
            placed.update(members)
            units.append(Unit(tuple(members), self.messages[p].get("role") == "user", after))
            if head == p:
                maskable.append([q for q in members if q in self.masked_sizes])
        return units, maskable

    def newest_step(self) -> tuple[int, ...]:
        """The positions of the newest agent step — the last unit when it is an assistant's tool call with its
        results after the current user message, the end of the conversation (what the model reads next) —
        else ``()``."""
        if not self.units:
            return ()
        last = self.units[-1]
        head = self.messages[last.members[0]]
        answered = len(last.members) > 1 and bool(head.get("tool_calls"))
        if (
            not answered
            or last.members[-1] != len(self.messages) - 1
            or not (last.after_anchor or (self.anchor is None and not self.has_user))
        ):
            return ()
        return last.members

    def call_of(self, position: int) -> int | None:
        """The position of the call a tool result answers (``None`` for any other message)."""
        head = self._call.get(position)
        return head if head is not None and head != position else None

    def anchor_text(self) -> str:
        """The current user message's text (the default recall query)."""
        return content_text(self.messages[self.anchor].get("content")) if self.anchor is not None else ""

    def size_of(self, message: Mapping[str, Any] | None) -> int:
        """What a message the compile writes costs (0 for none)."""
        return message_token_count(message, self.archive.counter) if message is not None else 0

    def omitted_ids(self, omitted: Sequence[int]) -> tuple[list[str], list[int]]:
        """The ids of omitted positions and the positions (for :func:`~.recalled.pointer_line`)."""
        return [self.ids[p] for p in omitted], list(omitted)

    def fixed_messages(self) -> list[dict[str, Any]]:
        """What every compile shows: the leading system messages and the current user message."""
        fixed = self.messages[: self.lead] + ([self.messages[self.anchor]] if self.anchor is not None else [])
        return [dict(m) for m in fixed]

    def history_messages(
        self,
        plan: WindowPlan,
        block: Mapping[str, Any] | None,
        *,
        user: str | None = None,
        block_source: str | None = None,
    ) -> list[dict[str, Any]]:
        """The compile's conversation: system messages, the kept history (masked and previewed as planned), the
        current user message with the session block as its first content part (:func:`with_block`), the agent
        steps after it.

        ``user``: the compile's own current message (not archived); it is added here, after the history, when
        there is a block to merge into it (else the compiler appends it).  With neither, the block is the last
        message (the history then ends on an assistant or tool message, so roles still alternate).
        """
        masked = set(plan.masked)
        shown = [dict(plan.shown.get(p) or (self.masked_views[p] if p in masked else self.shown[p])) for p in plan.kept]
        before = [m for p, m in zip(plan.kept, shown, strict=True) if self.anchor is None or p < self.anchor]
        after = shown[len(before) :]
        lead = [dict(m) for m in self.messages[: self.lead]]
        if self.anchor is not None:
            anchor = dict(self.messages[self.anchor])
            current = with_block(anchor, block, source=block_source) if block is not None else anchor
            return [*lead, *before, current, *after]
        if block is None:
            return [*lead, *before]
        if user is not None:
            return [*lead, *before, with_block({"role": "user", "content": user}, block, source=block_source)]
        return [*lead, *before, dict(block)]

    def annotate(
        self, compiled: CompiledContext, plan: WindowPlan, recalled: Recalled | None, *, block: Mapping[str, Any] | None
    ) -> CompiledContext:
        """``compiled`` with what the session did: recalled, masked, offloaded ids and each message's source."""
        sources: list[str | None] = []
        block_at: int | None = None
        turns = self.archive.turns()
        by_id = {t.turn_id: t.message for t in turns} if len(turns) == len(self.ids) else {}
        if not by_id:  # the archive moved on meanwhile: look the ids up
            by_id = {t.turn_id: t.message for t in self.archive.store.get_turns(self.archive.session_id, self.ids)}
        for n, m in enumerate(compiled.messages):
            doc_id = m.get("id")
            original = by_id.get(str(doc_id)) if isinstance(doc_id, str) else None
            same = original is not None and all(
                m.get(k) == original.get(k) for k in ("role", "content", "tool_calls", "tool_call_id", "name")
            )
            sources.append(str(doc_id) if same else None)
            if block is not None and block_at is None and _holds_block(m, block):
                block_at = n
        shown = {m.get("id") for m in compiled.messages}
        kept = {p for p in plan.kept if self.ids[p] in shown}
        masked = tuple(self.ids[p] for p in plan.masked if p in kept)
        previewed = (self.offloaded | plan.shown.keys()) & kept
        offloaded = tuple(self.ids[p] for p in sorted(previewed) if p not in set(plan.masked))
        recalled_ids = tuple(self.ids[p] for p in recalled.positions) if recalled is not None else ()
        omitted = tuple(self.ids[p] for p in sorted({*plan.omitted, *(set(plan.kept) - kept)}))
        summarized = recalled.summaries if recalled is not None else ()
        session = {
            "omitted": omitted,
            "recalled": recalled_ids,
            "summarized": summarized,
            "masked": masked,
            "offloaded": offloaded,
        }
        stable = block_at if block_at is not None else compiled.stable_messages
        return replace(
            compiled,
            trace=replace(compiled.trace, session=session),
            recalled=recalled_ids,
            masked=masked,
            offloaded=offloaded,
            message_sources=tuple(sources),
            stable_messages=stable,
        )


def with_block(message: Mapping[str, Any], block: Mapping[str, Any], *, source: str | None = None) -> dict[str, Any]:
    """``message`` (the current user message) with the session block as its first content part.

    The block (pointer, recalled messages, summaries) is its own delimited text part and the message's own
    content follows unchanged (a string becomes one text part; parts stay as they are), so a request never has
    two user messages in a row (Bedrock's Converse API rejects that; some chat templates merge them).
    ``source`` (set under a :class:`~tokenbox_core.defense.DefensePolicy`) tells the defence to screen the
    block as that source's material (``"memory"``: untrusted, spotlighted) rather than as the user's words;
    the defence removes the key.

    >>> with_block({"role": "user", "content": "and now?", "id": "t_9"}, {"role": "user", "content": "[OMITTED]"})
    {'role': 'user', 'content': [{'type': 'text', 'text': '[OMITTED]'}, {'type': 'text', 'text': 'and now?'}], \
'id': 't_9'}
    """
    content = message.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(p) for p in content or ()]
    first: dict[str, Any] = {"type": "text", "text": str(block["content"])}
    if source is not None:
        first["source"] = source
    return {**message, "content": [first, *parts]}


def _holds_block(message: Mapping[str, Any], block: Mapping[str, Any]) -> bool:
    """True for the compiled message that carries the session block: the block on its own, or a user message
    whose first content part is it (its text as written, or wrapped by the defence)."""
    content = message.get("content")
    if content == block["content"] and message.get("id") is None:
        return True
    if message.get("role") != "user" or not isinstance(content, list) or len(content) < 2:
        return False
    first = content[0]
    return isinstance(first, Mapping) and str(block["content"]).split("\n", 1)[0] in str(first.get("text", ""))
