"""Conversations: framework-neutral chat messages fitted into a token budget (chapter §6.2.4, multi-turn).

One implementation of what a chat conversation may lose and how, for every
adapter (the conversation rules): leading system messages and the latest
user message are critical; history is evicted oldest first, an assistant tool
call and all its results as one atomic group (parallel calls too, across
sections); the trimmed history starts on a user message without ever emptying
an agent loop; omission markers stand where providers accept them;
per-message overrides (the reserved ``"tokenbox"`` key); messages that can
never fit are not even counted (the horizon); an optional partial cut of the
boundary message.

- :func:`fit_conversation` → :class:`ConversationFit`: one call, one layout;
- :func:`conversation_sections` → :class:`ConversationSections`: the same
  translation as Sections, for a caller laying them out with its own sections;
- :func:`read_conversation`: a conversation checked and grouped, an agent
  loop's request read only past the previous one;
- :func:`start_on_fixup` and :func:`place_markers`: the ``start_on`` and
  marker rules over a laid-out message list (*entries*: input indices and
  markers), for an adapter that lays out messages among its own sections;
- :data:`MARKER_ID_PREFIX` (what an omission marker's id starts with),
  :data:`FRAMEWORK_ROLES` (the roles the engine accepts) and
  :func:`check_on_invalid` (an ``on_invalid`` option checked where it is given);
- :func:`checked_conversation` → :class:`Repaired`: :func:`check_conversation` with where each kept message
  came from, for an adapter that maps a repaired list back to its own message objects.
"""

from tokenbox_core._arguments import check_keywords as _check_keywords
from tokenbox_core.chat._fit import ConversationFit, ConversationOverflow
from tokenbox_core.chat._fit import fit_conversation as _fit_conversation
from tokenbox_core.chat._fixups import place_markers, start_on_fixup
from tokenbox_core.chat._messages import OVERRIDE_KEY, ChatCounter, ToolGroups, tool_groups
from tokenbox_core.chat._read import ReadMessages, read_conversation, read_messages
from tokenbox_core.chat._sections import (
    MARKER_ID_PREFIX,
    ConversationSections,
    Marker,
    RemovedMessage,
    conversation_sections,
)
from tokenbox_core.chat._validate import (
    FRAMEWORK_ROLES,
    Repaired,
    check_conversation,
    check_on_invalid,
    checked_conversation,
    conversation_problems,
)

fit_conversation = _check_keywords(_fit_conversation)  # a misspelt keyword fails with a did-you-mean

__all__ = [
    "ChatCounter",
    "ConversationFit",
    "ConversationOverflow",
    "ConversationSections",
    "FRAMEWORK_ROLES",
    "MARKER_ID_PREFIX",
    "Marker",
    "OVERRIDE_KEY",
    "ReadMessages",
    "RemovedMessage",
    "Repaired",
    "ToolGroups",
    "check_conversation",
    "check_on_invalid",
    "checked_conversation",
    "conversation_problems",
    "conversation_sections",
    "fit_conversation",
    "place_markers",
    "read_conversation",
    "read_messages",
    "start_on_fixup",
    "tool_groups",
]
