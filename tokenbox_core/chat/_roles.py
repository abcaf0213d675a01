"""The chat roles: those of the neutral shape, the aliases frameworks pass through, and the error text for a role
that is neither (with a did-you-mean); :func:`check_section_roles` for a messages-mode layout's sections."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

from tokenbox_core.errors import ConversationError

__all__ = ["FRAMEWORK_ROLES", "MESSAGE_ROLES", "check_section_roles", "role_problem"]

MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")
"""The roles of the neutral chat shape."""
FRAMEWORK_ROLES = (*MESSAGE_ROLES, "function", "chatbot", "model")
"""The roles the conversation engine accepts: the neutral ones and the aliases frameworks pass through
(OpenAI's legacy ``function``, LlamaIndex's ``chatbot`` and ``model``)."""


def role_problem(role: object, where: str, roles: Sequence[str] = MESSAGE_ROLES) -> str | None:
    """The error text for a role that is not one of ``roles`` (``where`` names the message), or None."""
    if isinstance(role, str) and role in roles:
        return None
    close = difflib.get_close_matches(role, MESSAGE_ROLES, n=1) if isinstance(role, str) else []
    hint = f"did you mean {close[0]!r}? " if close else ""
    known = ", ".join(MESSAGE_ROLES)
    if role is None:
        return f"{where} has no role; give it one of {known}"
    return f"{where} has role {role!r}, which is not one of {known}; {hint}give it one of those roles"


def check_section_roles(sections: Iterable[Any]) -> None:
    """A :class:`ConversationError` for the first Section (or item of a list Section) of a messages-mode layout
    whose ``role`` is not a chat role (``Section("s", "...", role="sytem")``: did you mean 'system'?)."""
    for section in sections:
        items = section.items if getattr(section, "is_list", False) else ()
        for owner, role in (
            (f"section {section.id!r}", section.role),
            *((f"item {i.id!r} of section {section.id!r}", i.role) for i in items),
        ):
            if role is not None:
                wrong = role_problem(role, owner, FRAMEWORK_ROLES)
                if wrong is not None:
                    raise ConversationError(f"{wrong} (a messages-mode layout emits each section as a chat message)")
