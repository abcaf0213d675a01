"""Conversations a provider accepts: the one checker (issue 26 item 2).

:func:`conversation_problems` lists what a chat provider would reject in a list
of neutral (OpenAI-shaped) messages, each :class:`Problem` with the message's
index and the fix:

- ``unknown_role``: a role that is not ``system``, ``developer``, ``user``,
  ``assistant`` or ``tool`` (``"robot"``, ``"sytem"`` — with a did-you-mean);
- ``no_content``: a message without ``content`` (an assistant message may carry
  ``tool_calls`` instead);
- ``orphan_result``: a tool result whose ``tool_call_id`` names no earlier call;
- ``unanswered_call``: an assistant tool call no later tool message answers —
  only when the conversation is ``complete`` (about to be sent), since an agent
  appends the results after the call.

:func:`check_conversation` raises :class:`~tokenbox_core.errors.ConversationError`
for the first problem (``on_invalid="raise"``) or returns the conversation
repaired (``on_invalid="repair"``): messages with an unknown role, without
content, or answering no call are dropped; an unanswered call is removed from
its message (the message is dropped when nothing else is left in it).  Repair
never rewrites a message's content or a tool-call id.

:func:`sequence_problems` is the same check as strings, plus the ordering rules
a test of a trimmer wants (no system message after the conversation started, the
history starts on a user message).

>>> check_conversation([{"role": "robot", "content": "beep"}])
Traceback (most recent call last):
...
tokenbox_core.errors.ConversationError: message 0 has role 'robot', which is not one of system, developer, \
user, assistant, tool; give it one of those roles (or drop it, or pass on_invalid='repair')
>>> check_conversation([{"role": "tool", "content": "42", "tool_call_id": "c1"}, {"role": "user", "content": "hi"}],
...                    on_invalid="repair")
[{'role': 'user', 'content': 'hi'}]
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenbox_core.chat.messages import tool_groups
from tokenbox_core.errors import ConversationError

__all__ = [
    "FRAMEWORK_ROLES",
    "MESSAGE_ROLES",
    "ON_INVALID",
    "OnInvalid",
    "Problem",
    "check_conversation",
    "check_on_invalid",
    "check_section_roles",
    "conversation_problems",
    "role_problem",
    "sequence_problems",
]

MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")
"""The roles of the neutral chat shape."""
FRAMEWORK_ROLES = (*MESSAGE_ROLES, "function", "chatbot", "model")
"""The roles the conversation engine accepts: the neutral ones and the aliases frameworks pass through
(OpenAI's legacy ``function``, LlamaIndex's ``chatbot`` and ``model``)."""
ON_INVALID = ("raise", "repair")
OnInvalid = Literal["raise", "repair"]


@dataclass(frozen=True)
class Problem:
    """One thing a provider would reject: the message's ``index``, the ``kind``, what is wrong and the fix.

    ``call_id`` names the tool call of an ``orphan_result`` or ``unanswered_call``.
    """

    index: int
    kind: str
    detail: str
    fix: str
    call_id: str | None = None

    def __str__(self) -> str:
        return f"{self.detail}; {self.fix}"


def check_on_invalid(value: object) -> OnInvalid:
    """``value`` if it is ``"raise"`` or ``"repair"``, else a :class:`ConversationError` with a did-you-mean."""
    if value == "raise" or value == "repair":
        return value
    close = difflib.get_close_matches(str(value), ON_INVALID, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConversationError(f"on_invalid must be 'raise' or 'repair', got {value!r}{hint}")


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


def _field(call: Any, key: str) -> Any:
    return call.get(key) if isinstance(call, Mapping) else getattr(call, key, None)


def _call_name(call: Any) -> str:
    fn = _field(call, "function")
    name = _field(fn, "name") if fn is not None else _field(call, "name")
    return str(name) if name else "?"


def _has_content(message: Mapping[str, Any]) -> bool:
    return message.get("content") is not None or bool(message.get("tool_calls"))


def conversation_problems(
    messages: Sequence[Mapping[str, Any]],
    *,
    complete: bool = True,
    known_calls: Iterable[str] = (),
    roles: Sequence[str] = MESSAGE_ROLES,
) -> list[Problem]:
    """Everything a provider would reject in ``messages``, in message order (empty: valid); what is not a
    message at all (not a dict, no role) is left to the reader (:func:`~tokenbox_core.chat.read_messages`).

    Tool results pair with calls as the conversation engine groups them (:func:`~tokenbox_core.chat.tool_groups`):
    by ``tool_call_id``, and a result without a known id joins the call it directly follows.

    Args:
        complete: the list is about to be sent, so every tool call needs a result (``False`` while an agent
            is between a call and its results: appending to an archive).
        known_calls: tool-call ids of calls made before ``messages[0]`` (an archive's), which results may answer.
        roles: the roles accepted (the engine also accepts the framework aliases of :data:`FRAMEWORK_ROLES`).
    """
    problems: list[Problem] = []
    checked: list[int] = []
    for i, m in enumerate(messages):
        if (
            not isinstance(m, Mapping)
            or not m.get("role")
            or not isinstance(m.get("role"), str)
            or not isinstance(m.get("tool_calls") or [], list | tuple)
        ):
            continue  # not a message at all: the reader's error (a SectionError naming the shape)
        role = m["role"]
        if role not in roles:
            wrong = role_problem(role, f"message {i}", roles) or ""
            detail, _, fix = wrong.rpartition("; ")
            problems.append(Problem(i, "unknown_role", detail, f"{fix} (or drop it, or pass on_invalid='repair')"))
        elif not _has_content(m):
            problems.append(
                Problem(
                    i,
                    "no_content",
                    f"message {i} ({role}) has no 'content'",
                    "give it a 'content' string or list of parts (an assistant message may carry 'tool_calls' "
                    "instead), or pass on_invalid='repair' to drop it",
                )
            )
        else:
            checked.append(i)
    sub = [messages[i] for i in checked]
    groups = tool_groups(sub)
    known = {str(c) for c in known_calls}
    for n, i in enumerate(checked):
        m = messages[i]
        if m["role"] == "tool" and n not in groups.group_of and str(m.get("tool_call_id")) not in known:
            call_id = m.get("tool_call_id")
            named = f" (id {m['id']!r})" if m.get("id") else ""
            problems.append(
                Problem(
                    i,
                    "orphan_result",
                    f"tool message{named} at {i} answers no earlier tool call (tool_call_id {call_id!r})",
                    "keep the assistant message with that call before it, set 'tool_call_id' to the call's id, "
                    "or pass on_invalid='repair' to drop the result",
                    str(call_id) if call_id else None,
                )
            )
    if complete:
        for a, members in groups.members.items():
            calls = [c for c in sub[a].get("tool_calls") or ()]
            results = [sub[j] for j in members[1:]]
            ids = {str(r.get("tool_call_id")) for r in results}
            loose = sum(1 for r in results if str(r.get("tool_call_id")) not in {str(_field(c, "id")) for c in calls})
            for call in calls:
                call_id = str(_field(call, "id"))
                if call_id in ids:
                    continue
                if loose:  # a result without a known id answers the next call left unanswered
                    loose -= 1
                    continue
                at = checked[a]
                problems.append(
                    Problem(
                        at,
                        "unanswered_call",
                        f"tool call {call_id} ({_call_name(call)!r}) at {at} has no result",
                        f"append its result ({{'role': 'tool', 'tool_call_id': {call_id!r}, 'content': ...}}) "
                        f"before compiling, or pass on_invalid='repair' to drop the call",
                        call_id,
                    )
                )
    problems.sort(key=lambda p: p.index)
    return problems


def check_conversation(
    messages: Sequence[Mapping[str, Any]],
    *,
    on_invalid: OnInvalid | str = "raise",
    complete: bool = True,
    known_calls: Iterable[str] = (),
    roles: Sequence[str] = MESSAGE_ROLES,
) -> list[Mapping[str, Any]]:
    """``messages`` if valid; else :class:`ConversationError` (``"raise"``) or the repaired list (``"repair"``).

    Repair drops messages with an unknown role, without content or answering no call, and removes unanswered
    calls from their message (dropping the message when it has no content left).  The messages kept are the
    caller's own objects except an assistant message that lost a call (a copy without it).
    """
    mode = check_on_invalid(on_invalid)
    msgs = list(messages)
    problems = conversation_problems(msgs, complete=complete, known_calls=known_calls, roles=roles)
    if not problems:
        return msgs
    if mode == "raise":
        first = problems[0]
        more = f" ({len(problems) - 1} more problem{'s' if len(problems) > 2 else ''} after it)" if problems[1:] else ""
        raise ConversationError(f"{first}{more}", index=first.index, kind=first.kind, problems=problems)
    drop = {p.index for p in problems if p.kind != "unanswered_call"}
    unanswered: dict[int, set[str]] = {}
    for p in problems:
        if p.kind == "unanswered_call" and p.call_id is not None:
            unanswered.setdefault(p.index, set()).add(p.call_id)
    out: list[Mapping[str, Any]] = []
    for i, m in enumerate(msgs):
        if i in drop:
            continue
        gone = unanswered.get(i)
        if gone:
            left = [c for c in m.get("tool_calls") or () if str(_field(c, "id")) not in gone]
            if not left and not m.get("content"):
                continue
            m = {k: v for k, v in m.items() if k != "tool_calls"} | ({"tool_calls": left} if left else {})
        out.append(m)
    return out


def sequence_problems(messages: Sequence[Mapping[str, Any]], *, start_on_user: bool = True) -> list[str]:
    """Everything a chat provider would reject in ``messages`` as strings (an empty list means valid):
    :func:`conversation_problems`, plus a system message after the conversation started and, with
    ``start_on_user``, a history (after the leading system messages) that does not start on a user message."""
    problems = [str(p) for p in conversation_problems(messages)]
    first_other: Mapping[str, Any] | None = None
    for i, m in enumerate(messages):
        if m.get("role") in ("system", "developer"):
            if first_other is not None:
                problems.append(f"system message at {i} after the conversation started")
        elif first_other is None:
            first_other = m
    has_user = any(m.get("role") == "user" for m in messages)
    if start_on_user and has_user and first_other is not None and first_other.get("role") != "user":
        problems.append(f"history starts on {first_other.get('role')}, not user")
    return problems
