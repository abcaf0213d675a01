"""Stage 5, Assemble: canonical order, structural headers and the instruction hierarchy (chapter §6.4.1, §6.5.4).

The laid-out sections are emitted in :data:`~tokenbox_core.compiler.build.CANONICAL_ORDER`:

- the system policy first (with §6.5.5's precedence statement);
- developer instructions next, labelled subordinate to the policy;
- task state and tool affordances (tools labelled as data);
- evidence and memory in their own labelled sections with no directive
  authority (chat role ``user``, never ``system``);
- the conversation, one chat message per turn (tool calls and results as the
  provider expects them);
- the user's current message inside the user message, prefaced as subject to
  the system and developer instructions;
- the agent loop in flight after it.

``"messages"`` output is a list of chat dicts; ``"text"`` output joins the
sections with blank lines and, with headers on, starts each with
``## HEADER`` (the chapter's ``SectionHeader``).  A conversation trimmed by
the layout restarts on a user message: assistant or tool turns left at its
head are dropped (and reported).

:func:`scaffold_reserve` tells Compress how many tokens the headers, labels
and chat overhead will cost, so that the bodies are laid out into what is
left.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenbox_core.compiler.build import SectionPlan
from tokenbox_core.compiler.config import CompilerConfig
from tokenbox_core.compiler.filter import Exclusion
from tokenbox_core.layout import Layout
from tokenbox_core.sections import Item
from tokenbox_core.tokens import PRIMING_TOKENS, TOKENS_PER_MESSAGE, TokenCounter, content_text

__all__ = ["Assembled", "assemble", "scaffold_reserve"]

_TEXT_JOIN = "\n\n"


@dataclass(frozen=True)
class Assembled:
    """The emitted context: messages and text, and which items each emitted section holds."""

    messages: tuple[Mapping[str, Any], ...]
    text: str
    emitted: dict[str, tuple[Item, ...] | str]  # section id -> kept items (lists) or text
    excluded: tuple[Exclusion, ...]


def _prefix(plan: SectionPlan, config: CompilerConfig) -> str:
    parts = []
    if config.output == "text" and config.use_headers:
        parts.append(f"## {plan.header}")
    if plan.label and not plan.per_item_messages:
        parts.append(plan.label)
    return "\n".join(parts)


def scaffold_reserve(plans: tuple[SectionPlan, ...], config: CompilerConfig, counter: TokenCounter) -> int:
    """Tokens the assembly adds around the laid-out bodies (headers, labels, chat overhead)."""
    total = PRIMING_TOKENS if config.output == "messages" else 0
    for plan in plans:
        prefix = _prefix(plan, config)
        if config.output == "messages":
            if plan.per_item_messages:
                continue  # history items vouch for their whole chat cost
            total += TOKENS_PER_MESSAGE + counter.count(plan.role)
            total += counter.count(prefix + "\n\n") if prefix else 0
        elif prefix:
            total += counter.count(prefix + "\n") + 1
    return total


def _kept_items(plan: SectionPlan, layout: Layout) -> tuple[Item, ...]:
    laid = layout[plan.id]
    if laid.status == "dropped" or not isinstance(laid.content, tuple):
        return ()
    return laid.content


def _start_on_user(
    plan: SectionPlan, items: tuple[Item, ...], trimmed: bool
) -> tuple[tuple[Item, ...], list[Exclusion]]:
    if plan.id != "history" or not trimmed:
        return items, []
    start = 0
    while start < len(items) and items[start].role != "user":
        start += 1
    if start == len(items):
        start = 0  # no user turn left: keep what there is rather than nothing
    dropped = [Exclusion(i.id, plan.id, "start_on_user", i.score) for i in items[:start]]
    return items[start:], dropped


def _message(plan: SectionPlan, item: Item) -> dict[str, Any]:
    original = plan.payload.get(item.id)
    if not isinstance(original, Mapping):
        return {"role": item.role or plan.role, "content": item.content}
    message = {k: v for k, v in original.items() if k not in ("tokenbox", "id")}
    if item.content != content_text(original.get("content")):
        message["content"] = item.content  # rewritten (reference pointer or cascade lens)
    return message


def assemble(layout: Layout, plans: tuple[SectionPlan, ...], config: CompilerConfig) -> Assembled:
    """Emit the laid-out sections in canonical order as messages and as text."""
    messages: list[Mapping[str, Any]] = []
    blocks: list[str] = []
    emitted: dict[str, tuple[Item, ...] | str] = {}
    excluded: list[Exclusion] = []
    for plan in plans:
        laid = layout[plan.id]
        if laid.status == "dropped":
            continue
        prefix = _prefix(plan, config)
        if plan.section.is_list:
            items, dropped = _start_on_user(plan, _kept_items(plan, layout), bool(laid.removed))
            excluded += dropped
            if not items:
                continue
            emitted[plan.id] = items
            body = plan.section.item_separator.join(i.content for i in items)
            if laid.marker:
                body = f"{laid.marker}{plan.section.item_separator}{body}"
        else:
            body = laid.text
            if not body and plan.id != "user":
                continue
            emitted[plan.id] = body
        if config.output == "messages" and plan.per_item_messages:
            messages.extend(_message(plan, i) for i in items)
        else:
            content = f"{prefix}\n\n{body}" if prefix else body
            messages.append({"role": plan.role, "content": content})
        blocks.append(f"{prefix}\n{body}" if prefix else body)
    return Assembled(tuple(messages), _TEXT_JOIN.join(blocks), emitted, tuple(excluded))
