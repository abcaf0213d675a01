"""LlamaIndex memory blocks in a TokenBox memory: read, fitted by the core, formatted and inserted.

The semantics are LlamaIndex ``Memory``'s: blocks are read in priority order
(larger numbers first) with the chat history plus the current input; a block
returns text, content blocks, or chat messages; text and content blocks are
rendered with ``memory_blocks_template`` into one message inserted into the
first system message (``insert_method="system"``) or the latest user message
(``"user"``); chat messages join the conversation.  When the blocks do not fit
their share, priority 0 is never touched, and the core's Token Box decides how
many tokens each other block gives up (larger priority numbers first — the
order LlamaIndex documents, run-llama/llama_index#23090); each block that
must give some up is asked to (``atruncate(content, tokens_to_truncate)``) and
is dropped when its answer still does not fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ContentBlock, TextBlock
from llama_index.core.memory.memory import BaseMemoryBlock, InsertMethod
from llama_index.core.prompts import RichPromptTemplate

from tokenbox_core import ContextCriticalOverflow, Section, TokenBox
from tokenbox_core.chat import ChatCounter
from tokenbox_llamaindex._messages import neutral

__all__ = [
    "block_contents",
    "fit_blocks",
    "format_blocks",
    "insert_blocks",
    "place_blocks",
    "rendered_size",
    "restored_values",
]


async def block_contents(
    blocks: Sequence[BaseMemoryBlock[Any]],
    history: list[ChatMessage],
    input: str | ChatMessage | None,
    session_id: str,
    **block_kwargs: Any,
) -> dict[str, Any]:
    """Each block's content by name, read in priority order (larger numbers first); empty content is left out.

    The blocks see ``history`` plus ``input`` as a user message (a new list: ``history`` is not changed).
    """
    seen = list(history)
    if isinstance(input, str):
        seen.append(ChatMessage(role="user", content=input))
    elif isinstance(input, ChatMessage):
        seen.append(input)
    out: dict[str, Any] = {}
    for block in sorted(blocks, key=lambda b: -b.priority):
        content = await block.aget(seen, session_id=session_id, **block_kwargs)
        if not content:
            continue
        if not isinstance(content, str | list):
            raise ValueError(
                f"memory block {block.name!r} returned {type(content).__name__}; a memory block returns text, a "
                f"list of content blocks or a list of ChatMessage"
            )
        out[block.name] = content
    return out


def _is_messages(content: Any) -> bool:
    return isinstance(content, list) and bool(content) and isinstance(content[0], ChatMessage)


def format_blocks(
    blocks: Sequence[BaseMemoryBlock[Any]], contents: Mapping[str, Any]
) -> tuple[list[tuple[str, list[ContentBlock]]], list[ChatMessage]]:
    """(template data: ``(name, content blocks)`` per text/content block, chat messages), in declaration order."""
    data: list[tuple[str, list[ContentBlock]]] = []
    messages: list[ChatMessage] = []
    for block in blocks:
        content = contents.get(block.name)
        if not content:
            continue
        if _is_messages(content):
            messages.extend(content)
        elif isinstance(content, str):
            data.append((block.name, [TextBlock(text=content)]))
        else:
            data.append((block.name, list(content)))
    return data, messages


def _rendered(template: RichPromptTemplate, data: list[tuple[str, list[ContentBlock]]]) -> list[ContentBlock]:
    if not data:
        return []
    messages = template.format_messages(memory_blocks=data)
    return list(messages[0].blocks) if messages else []


def rendered_size(
    template: RichPromptTemplate, data: list[tuple[str, list[ContentBlock]]], chat: ChatCounter, estimates: Any
) -> int:
    """What the rendered blocks cost as a message of their own (an upper bound of their cost once inserted)."""
    blocks = _rendered(template, data)
    if not blocks:
        return 0
    return chat.size(neutral([ChatMessage(role="system", blocks=blocks)], estimates=estimates)[0])


def _size(
    block: BaseMemoryBlock[Any], content: Any, template: RichPromptTemplate, chat: ChatCounter, estimates: Any
) -> int:
    if _is_messages(content):
        return sum(chat.size(m) for m in neutral(content, estimates=estimates))
    data, _ = format_blocks([block], {block.name: content})
    return rendered_size(template, data, chat, estimates)


async def fit_blocks(
    blocks: Sequence[BaseMemoryBlock[Any]],
    contents: dict[str, Any],
    budget: int,
    *,
    limit: int,
    template: RichPromptTemplate,
    chat: ChatCounter,
    estimates: Any,
) -> dict[str, Any]:
    """``contents`` fitted into ``budget`` tokens (the rules in the module docstring); priority-0 blocks take
    more when they need it, up to ``limit``.

    Raises ``ContextCriticalOverflow`` when the priority-0 blocks alone exceed ``limit``.
    """
    out = dict(contents)
    for final in (False, True):
        sizes = {b.name: _size(b, out[b.name], template, chat, estimates) for b in blocks if b.name in out}
        critical = sum(sizes[b.name] for b in blocks if b.name in sizes and not b.priority)
        if critical > limit:
            raise ContextCriticalOverflow(
                limit, critical, [b.name for b in blocks if b.name in sizes and not b.priority]
            )
        budget = max(budget, critical)
        if sum(sizes.values()) <= budget:
            return out
        sections = [
            Section(
                block.name,
                "x" * sizes[block.name],  # one token per character with the "bytes" counter: a section of that size
                priority=-block.priority if block.priority else 0,
                shrink=1.0 if block.priority else 0.0,
            )
            for block in blocks
            if block.name in sizes
        ]
        layout = TokenBox(budget, counter="bytes", separator="").layout(sections)
        cuts = {s.id: sizes[s.id] - s.final_tokens for s in layout.sections if s.final_tokens < sizes[s.id]}
        for block in blocks:
            cut = cuts.get(block.name)
            if cut is None:
                continue
            shorter = None if final else await block.atruncate(out[block.name], cut)
            if shorter:
                out[block.name] = shorter
            else:
                del out[block.name]
    return out


async def place_blocks(
    blocks: Sequence[BaseMemoryBlock[Any]],
    contents: dict[str, Any],
    budget: int,
    *,
    limit: int,
    template: RichPromptTemplate,
    chat: ChatCounter,
    estimates: Any,
) -> tuple[list[tuple[str, list[ContentBlock]]], list[ChatMessage], int]:
    """(template data, chat messages, what they cost) for ``contents`` fitted into ``budget`` (up to ``limit``
    for priority 0, see :func:`fit_blocks`)."""
    if not contents:
        return [], [], 0
    contents = await fit_blocks(
        blocks, contents, budget, limit=limit, template=template, chat=chat, estimates=estimates
    )
    data, messages = format_blocks(blocks, contents)
    used = rendered_size(template, data, chat, estimates) + sum(
        chat.size(m) for m in neutral(messages, estimates=estimates)
    )
    return data, messages, used


def insert_blocks(
    conversation: list[ChatMessage],
    template: RichPromptTemplate,
    data: list[tuple[str, list[ContentBlock]]],
    messages: list[ChatMessage],
    insert_method: InsertMethod,
) -> list[ChatMessage]:
    """The conversation with the blocks' chat messages after its leading system messages and the rendered blocks
    prepended to the first system message or the latest user message (a new message when there is none).

    The messages changed are copies: the conversation's messages are never modified.
    """
    lead = next((i for i, m in enumerate(conversation) if m.role != "system"), len(conversation))
    out = [*conversation[:lead], *messages, *conversation[lead:]]
    rendered = _rendered(template, data)
    if not rendered:
        return out
    role = "system" if InsertMethod(insert_method) == InsertMethod.SYSTEM else "user"
    indices = [i for i, m in enumerate(out) if m.role == role]
    if not indices:
        memory = ChatMessage(role=role, blocks=rendered)
        return [memory, *out] if role == "system" else [*out, memory]
    at = indices[0] if role == "system" else indices[-1]
    target = out[at]
    out[at] = target.model_copy(update={"blocks": [*rendered, *target.blocks]})
    return out


def restored_values(owner: str, data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A memory's ``to_dict`` data with ``from_dict``'s overrides, its bookkeeping keys dropped.

    Memory blocks are objects a dict does not hold (``to_dict`` lists their names): a memory that had some raises
    ``ValueError`` until they are passed again.
    """
    values = {**data, **overrides}
    values.pop("class_name", None)
    names = values.pop("memory_block_names", None) or []
    if names and "memory_blocks" not in overrides:
        raise ValueError(
            f"the memory had memory blocks {names}; pass them again: {owner}.from_dict(data, memory_blocks=[...])"
        )
    return values
