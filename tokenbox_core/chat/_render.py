"""A layout that holds a conversation among other sections, as the chat messages to send (issue 26).

:attr:`~tokenbox_core.layout.Layout.messages` renders sections item by item and refuses what it cannot render
validly (tool results, a cuttable conversation); the conversation engine keeps a conversation valid after a cut
(:meth:`~tokenbox_core.chat.ConversationSections.finish`).  :func:`render_layout` puts the two together: the
conversation's sections as the engine keeps them, every other section as ``Layout.messages`` renders it, in
declaration order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tokenbox_core.layout import Layout, check_plain_messages, section_messages

if TYPE_CHECKING:
    from tokenbox_core.chat._sections import ConversationSections, Marker

__all__ = ["render_layout"]


def render_layout(conversation: ConversationSections, layout: Layout) -> list[Mapping[str, Any]]:
    """Every message of ``layout``, in declaration order: ``conversation`` as the engine keeps it (tool calls
    structured and whole, a cut history restarted on a start message, markers where providers take them;
    :meth:`~tokenbox_core.chat.ConversationSections.messages_from`) and every other section as
    ``Layout.messages`` renders it.  Raises :class:`~tokenbox_core.errors.OutputFormError` where
    ``Layout.messages`` would for the other sections, or for a system message they place after the conversation
    started."""
    done = conversation.finish(layout)
    section_of = {item.id: s.id for s in conversation.sections for item in s.items}
    by_section: dict[str, list[Mapping[str, Any]]] = {}
    waiting: list[Marker] = []  # a marker goes with the section of the message after it
    for entry in done.entries:
        if not isinstance(entry, int):
            waiting.append(entry)
            continue
        sid = section_of[conversation.ids[entry]]
        by_section.setdefault(sid, []).extend(m.message() for m in waiting)
        waiting.clear()
        by_section[sid].append(conversation.output(entry, done))
    for marker in waiting:
        by_section.setdefault(marker.section, []).append(marker.message())
    placed: list[tuple[Any, Mapping[str, Any]]] = []
    for laid in layout.sections:
        if laid.id in conversation.section_ids:
            placed += [(None, m) for m in by_section.get(laid.id, ())]
        else:
            placed += [(laid, m) for m in section_messages(laid)]
    check_plain_messages(placed)
    return [m for _, m in placed]
