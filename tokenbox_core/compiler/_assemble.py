"""Stage 5, Assemble: canonical order, structural headers and the instruction hierarchy (chapter §6.4.1, §6.5.4).

The laid-out sections are emitted in :data:`~tokenbox_core.compiler._build.CANONICAL_ORDER`
(with ``CompilerConfig(cache_aware=...)``, in volatility order instead: static →
session → turn, see :mod:`tokenbox_core.compiler._stable`):

- the system policy first (with §6.5.5's precedence statement);
- developer instructions next, labelled subordinate to the policy;
- task state and tool affordances (tools labelled as data), or, with
  ``CompilerConfig(tools_as="schemas")``, the tools only as :attr:`Assembled.tools`
  (the request's ``tools`` parameter), counted as their canonical JSON;
- evidence and memory in their own labelled sections with no directive
  authority (chat role ``user``, never ``system``);
- the conversation as the core conversation engine keeps it (one chat message
  per turn; tool calls and their results together; a trimmed history restarts
  on a user message), ending with the user's current message as the user
  wrote it, and any agent loop in flight after it.  The instruction hierarchy
  is stated in the system tier (§6.5.5's precedence statement, and the
  defence's hierarchy statement), not written into the user's message: the
  chapter's §6.5.4 preface there would make the model, the archive and the
  framework's history disagree on what the user said.

``"messages"`` output is a list of chat dicts; ``"text"`` output joins the
sections with blank lines and, with headers on, starts each with
``## HEADER`` (the chapter's ``SectionHeader``); the conversation is one
``## CONVERSATION`` block of ``role: content`` lines.

:func:`scaffold_reserve` tells Compress how many tokens the headers, labels
and chat overhead will cost, so that the bodies are laid out into what is
left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core._sections import Item
from tokenbox_core.chat import ConversationSections
from tokenbox_core.compiler._build import SectionPlan
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._filter import Exclusion
from tokenbox_core.compiler._history import message_text
from tokenbox_core.compiler._inputs import Evidence
from tokenbox_core.compiler._render import evidence_tag
from tokenbox_core.compiler._stable import TURN_SECTIONS, anchor_index, segment_of, volatility_slots
from tokenbox_core.layout import Layout
from tokenbox_core.media._evidence import with_media_parts
from tokenbox_core.tokens import PRIMING_TOKENS, TokenCounter, content_text
from tokenbox_core.tokens._messages import TOKENS_PER_MESSAGE, message_token_count

__all__ = ["Assembled", "assemble", "scaffold_reserve"]

_TEXT_JOIN = "\n\n"


@dataclass(frozen=True)
class Assembled:
    """The emitted context: messages and text, and which items each emitted section holds."""

    messages: tuple[Mapping[str, Any], ...]
    text: str
    emitted: dict[str, tuple[Item, ...] | str]  # section id -> kept items (lists) or text
    excluded: tuple[Exclusion, ...]
    parts: tuple[tuple[str, ...] | None, ...] = ()  # per message: the pieces its content joins (None: a turn)
    text_parts: tuple[str, ...] = ()  # the pieces ``text`` joins
    turn_start: int | None = None  # cache-aware: index of the first message of the turn part
    tools: tuple[Mapping[str, Any], ...] = ()  # tools_as="schemas": the kept tools as OpenAI tool dicts
    tool_texts: tuple[str, ...] = ()  # ... and their canonical JSON, as counted

    def count(self, counter: TokenCounter, output: str) -> int:
        """The exact size of the output as sent (and of the tool schemas sent beside it, as their canonical
        JSON)."""
        return self._count(counter, output) + sum(counter.count(t) for t in self.tool_texts)

    def _count(self, counter: TokenCounter, output: str) -> int:

        def joined(pieces: Sequence[str]) -> int:
            return counter.count("".join(pieces))

        if output == "text":
            return joined(self.text_parts) if self.text_parts else counter.count(self.text)
        total = PRIMING_TOKENS
        for message, pieces in zip(self.messages, self.parts or (None,) * len(self.messages), strict=True):
            if pieces is None:
                total += message_token_count(message, counter)
            else:
                total += TOKENS_PER_MESSAGE + counter.count(str(message["role"])) + joined(pieces)
        return total


def _prefix(plan: SectionPlan, config: CompilerConfig) -> str:
    parts = []
    if config.output == "text" and config.use_headers:
        parts.append(f"## {plan.header}")
    if plan.label and plan.conversation is None:
        parts.append(plan.label)
    return "\n".join(parts)


def scaffold_reserve(plans: tuple[SectionPlan, ...], config: CompilerConfig, counter: TokenCounter) -> int:
    """Tokens the assembly adds around the laid-out bodies (headers, labels, chat overhead)."""
    total = PRIMING_TOKENS if config.output == "messages" else 0
    conversation_seen = False
    for plan in plans:
        if plan.id == "tools" and config.tools_as == "schemas":
            continue  # no message: the schemas are counted as their canonical JSON (the section's items)
        prefix = _prefix(plan, config)
        if plan.conversation is not None:
            if config.output == "text" and not conversation_seen and prefix:
                total += counter.count(prefix + "\n") + 1
            conversation_seen = True
            continue  # conversation items vouch for their whole chat cost
        if config.output == "messages":
            total += TOKENS_PER_MESSAGE + counter.count(plan.role)
            total += counter.count(prefix + "\n\n") if prefix else 0
        elif prefix:
            total += counter.count(prefix + "\n") + 1
    return total


def _conversation(
    layout: Layout, plans: tuple[SectionPlan, ...], conv: ConversationSections
) -> tuple[list[Mapping[str, Any]], dict[str, tuple[Item, ...]], list[Exclusion], list[Any]]:
    """The engine's kept messages (start-on and group fix-ups applied), rewritten items substituted."""
    done = conv.finish(layout)
    items = {i.id: (p.id, i) for p in plans if p.conversation is conv for i in p.section.items}
    messages: list[Mapping[str, Any]] = []
    emitted: dict[str, list[Item]] = {}
    for entry in done.entries:
        message = dict(conv.output(entry, done))
        if isinstance(entry, int):
            found = items.get(conv.ids[entry])
            if found is not None:
                sid, item = found
                if entry not in done.replaced and item.content != content_text(message.get("content")):
                    message["content"] = item.content  # rewritten: a reference pointer or a cascade lens
                emitted.setdefault(sid, []).append(item)
        messages.append(message)
    excluded = [Exclusion(r.id, "history", r.reason, None) for r in done.removed if r.reason in ("group", "start_on")]
    return messages, {k: tuple(v) for k, v in emitted.items()}, excluded, list(done.entries)


def _whole_tags(plan: SectionPlan, content: Any) -> tuple[tuple[Item, ...], list[Exclusion]]:
    """Kept items, less evidence passages cut into their provenance tag (never emitted without provenance)."""
    if not isinstance(content, tuple):
        return (), []
    kept: list[Item] = []
    cut: list[Exclusion] = []
    for item in content:
        payload = plan.payload.get(item.id)
        if isinstance(payload, Evidence) and not item.content.startswith(evidence_tag(payload)):
            cut.append(Exclusion(item.id, plan.id, "compress:cut_into_provenance", item.score))
        else:
            kept.append(item)
    return tuple(kept), cut


def assemble(layout: Layout, plans: tuple[SectionPlan, ...], config: CompilerConfig) -> Assembled:
    """Emit the laid-out sections in canonical order as messages and as text."""
    messages: list[Mapping[str, Any]] = []
    parts: list[tuple[str, ...] | None] = []
    blocks: list[list[str]] = []
    emitted: dict[str, tuple[Item, ...] | str] = {}
    excluded: list[Exclusion] = []
    done: dict[int, tuple[list[Mapping[str, Any]], list[Any]]] = {}
    headed: set[int] = set()
    window = config.cache_window
    slots = volatility_slots(plans, window.role) if window is not None else [(p, None) for p in plans]
    turn_start: int | None = None
    tools: list[Mapping[str, Any]] = []
    tool_texts: list[str] = []
    for plan, segment in slots:
        if window is not None and turn_start is None and (segment == "tail" or plan.id in TURN_SECTIONS):
            turn_start = len(messages)
        laid = layout[plan.id]
        if plan.id == "tools" and config.tools_as == "schemas":
            kept = laid.content if isinstance(laid.content, tuple) and laid.status != "dropped" else ()
            if kept:
                emitted[plan.id] = kept
                tools += [plan.payload[item.id].param() for item in kept]
                tool_texts += [plan.payload[item.id].text for item in kept]
            continue
        prefix = _prefix(plan, config)
        conv = plan.conversation
        if conv is not None:
            if id(conv) in done and segment is None:
                continue
            if id(conv) not in done:
                turns, items, dropped, entries = _conversation(layout, plans, conv)
                emitted.update(items)
                excluded += dropped
                done[id(conv)] = (turns, entries)
            turns, entries = done[id(conv)]
            if segment is not None:  # cache-aware: one segment of the conversation (stable.volatility_slots)
                anchor = anchor_index(conv)
                turns = [m for m, e in zip(turns, entries, strict=True) if segment_of(e, conv, anchor) == segment]
                prefix = "" if id(conv) in headed else prefix
            if turns:
                headed.add(id(conv))
                messages.extend(turns)
                parts.extend([None] * len(turns))
                lines = _joined([message_text(m) for m in turns], "\n")
                blocks.append([prefix, "\n", *lines] if prefix else lines)
            continue
        if laid.status == "dropped":
            continue
        if plan.section.is_list:
            kept, cut = _whole_tags(plan, laid.content)
            excluded += cut
            if not kept:
                continue
            emitted[plan.id] = kept
            body = _joined(
                [*([laid.marker] if laid.marker else []), *(i.content for i in kept)], plan.section.item_separator
            )
        else:
            if not laid.text:
                continue
            emitted[plan.id] = laid.text
            body = [laid.text]
        content = [prefix, "\n\n", *body] if prefix else body
        text = "".join(content)
        sent: Any = text
        if plan.section.is_list:  # issue 14 hook: media evidence carries its image/audio parts into the messages
            sent = with_media_parts(text, emitted[plan.id], plan.payload)
        messages.append({"role": plan.role, "content": sent})
        parts.append(tuple(content) if sent is text else None)  # a message with media parts is counted whole
        blocks.append([prefix, "\n", *body] if prefix else body)
    ordered: dict[str, tuple[Item, ...] | str] = {}
    for p in [*(p for p, _ in slots), *plans]:
        if p.id in emitted and p.id not in ordered:
            ordered[p.id] = emitted[p.id]
    flat: list[str] = []
    for index, block in enumerate(blocks):
        if index:
            flat.append(_TEXT_JOIN)
        flat.extend(block)
    if window is not None and turn_start is None:
        turn_start = len(messages)
    return Assembled(
        tuple(messages),
        "".join(flat),
        ordered,
        tuple(excluded),
        tuple(parts),
        tuple(flat),
        turn_start,
        tuple(tools),
        tuple(tool_texts),
    )


def _joined(pieces: list[str], separator: str) -> list[str]:
    """``pieces`` with ``separator`` between them, as a list of pieces (``"".join`` gives the joined text)."""
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index and separator:
            out.append(separator)
        out.append(piece)
    return out
