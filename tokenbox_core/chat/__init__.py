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
  translation as Sections, for a caller laying them out with its own sections.
"""

from tokenbox_core.chat.fit import ConversationFit, ConversationOverflow, fit_conversation, shift_budget
from tokenbox_core.chat.fixups import partial_cut, place_markers, split_groups, start_on_fixup
from tokenbox_core.chat.messages import (
    OVERRIDE_KEY,
    SYSTEM_ROLES,
    ChatCounter,
    Roles,
    ToolGroups,
    matcher,
    tool_groups,
)
from tokenbox_core.chat.read import ReadMessages, read_messages
from tokenbox_core.chat.sections import (
    MARKER_ID_PREFIX,
    ConversationSections,
    Marker,
    RemovedMessage,
    SystemRule,
    conversation_sections,
)
from tokenbox_core.chat.validate import (
    MESSAGE_ROLES,
    Problem,
    check_conversation,
    conversation_problems,
    sequence_problems,
)

__all__ = [
    "MARKER_ID_PREFIX",
    "MESSAGE_ROLES",
    "OVERRIDE_KEY",
    "SYSTEM_ROLES",
    "ChatCounter",
    "ConversationFit",
    "ConversationOverflow",
    "ConversationSections",
    "Marker",
    "Problem",
    "ReadMessages",
    "RemovedMessage",
    "Roles",
    "SystemRule",
    "ToolGroups",
    "check_conversation",
    "conversation_problems",
    "conversation_sections",
    "fit_conversation",
    "matcher",
    "partial_cut",
    "place_markers",
    "read_messages",
    "sequence_problems",
    "shift_budget",
    "split_groups",
    "start_on_fixup",
    "tool_groups",
]
