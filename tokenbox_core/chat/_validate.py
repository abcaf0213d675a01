"""Conversations a provider accepts: the one checker (issue 26 item 2).

:func:`conversation_problems` lists what a chat provider would reject in a list
of neutral (OpenAI-shaped) messages, each :class:`Problem` with the message's
index and the fix:

- ``unknown_role``: a role that is not ``system``, ``developer``, ``user``,
  ``assistant`` or ``tool`` (``"robot"``, ``"sytem"`` — with a did-you-mean);
- ``no_content``: a message without ``content`` (an assistant message may carry
  ``tool_calls`` instead);
- ``bad_content``: content that is not text, ``None`` or a flat list of parts each with a ``type``;
- ``orphan_result``: a tool result whose ``tool_call_id`` names no earlier call;
- ``separated_result``: a result with other messages between it and its call's message and other results
  (another turn in between, or a result arriving after a later turn);
- ``duplicate_result``: a second result for a call already answered;
- ``unanswered_call``: an assistant tool call no later tool message answers —
  only when the conversation is ``complete`` (about to be sent), since an agent
  appends the results after the call.

With ``portable=True`` it adds the rules of the strictest providers, reported and never repaired:
``late_system`` (a system message after the conversation started: OpenAI accepts it, Anthropic and Gemini take
a system prompt only at the top), ``starts_on_reply`` and ``repeated_call_id``.  Consecutive user messages are
no problem (see ``docs/conversations.md``).

:func:`check_conversation` raises :class:`~tokenbox_core.errors.ConversationError`
for the first problem (``on_invalid="raise"``) or returns the conversation
repaired (``on_invalid="repair"``, :mod:`tokenbox_core.chat._repair`: a separated
result moved next to its call, a duplicate and what cannot be sent dropped, an
unanswered call removed), every change named by one
:class:`~tokenbox_core.errors.ConversationRepairWarning`.  Repair never rewrites a
message's content or a tool-call id.  Every path taking a conversation runs it.

:func:`sequence_problems`: the same as strings, with the portable rules.

>>> check_conversation([{"role": "robot", "content": "beep"}])
Traceback (most recent call last):
...
tokenbox_core.errors.ConversationError: message 0 has role 'robot', which is not one of system, developer, \
user, assistant, tool; give it one of those roles (or drop it, or pass on_invalid='repair')
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     check_conversation([{"role": "tool", "content": "42", "tool_call_id": "c1"}, {"role": "user", "content": "hi"}],
...                        on_invalid="repair")
[{'role': 'user', 'content': 'hi'}]
>>> str(caught[0].message)
"on_invalid='repair' changed the conversation (1 change): dropped the tool result at 0 (it answers no call, \
tool_call_id 'c1')"
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenbox_core.chat._messages import SYSTEM_ROLES, tool_groups
from tokenbox_core.chat._roles import FRAMEWORK_ROLES, MESSAGE_ROLES, check_section_roles, role_problem
from tokenbox_core.errors import ConversationError, ConversationRepairWarning

__all__ = [
    "FRAMEWORK_ROLES",
    "MESSAGE_ROLES",
    "ON_INVALID",
    "OnInvalid",
    "Problem",
    "Repaired",
    "check_conversation",
    "check_on_invalid",
    "check_section_roles",
    "checked_conversation",
    "conversation_problems",
    "role_problem",
    "sequence_problems",
]

ON_INVALID = ("raise", "repair")
OnInvalid = Literal["raise", "repair"]


@dataclass(frozen=True)
class Repaired:
    """A conversation after :func:`check_conversation`: the ``messages`` kept (in the order they are sent), the
    index in the given list each came from (``sources``) and what a repair changed, in order (``changes``; empty:
    ``messages`` are the given ones, unchanged)."""

    messages: list[Mapping[str, Any]]
    sources: list[int]
    changes: list[str]


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


def _field(call: Any, key: str) -> Any:
    return call.get(key) if isinstance(call, Mapping) else getattr(call, key, None)


def _call_name(call: Any) -> str:
    fn = _field(call, "function")
    name = _field(fn, "name") if fn is not None else _field(call, "name")
    return str(name) if name else "?"


def _has_content(message: Mapping[str, Any]) -> bool:
    return message.get("content") is not None or bool(message.get("tool_calls"))


def _content_problem(content: Any) -> str | None:
    """What makes ``content`` unsendable (not text, ``None`` or a flat list of parts each with a ``type``), or None."""
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, list | tuple):
        return f"'content' is a {type(content).__name__}"
    for k, part in enumerate(content):
        if isinstance(part, list | tuple):
            return f"'content[{k}]' is a nested {type(part).__name__} (content parts are not nested)"
        if isinstance(part, Mapping):
            if not isinstance(part.get("type"), str):
                return f"'content[{k}]' has no 'type' (keys {sorted(str(key) for key in part)})"
        elif not isinstance(part, str):
            return f"'content[{k}]' is a {type(part).__name__}"
    return None


def _message_problem(i: int, m: Mapping[str, Any], roles: Sequence[str]) -> Problem | None:
    """The problem of message ``i`` on its own (its role, its content), or None."""
    role = m["role"]
    if role not in roles:
        wrong = role_problem(role, f"message {i}", roles) or ""
        detail, _, fix = wrong.rpartition("; ")
        return Problem(i, "unknown_role", detail, f"{fix} (or drop it, or pass on_invalid='repair')")
    if not _has_content(m):
        return Problem(
            i,
            "no_content",
            f"message {i} ({role}) has no 'content'",
            "give it a 'content' string or list of parts (an assistant message may carry 'tool_calls' "
            "instead), or pass on_invalid='repair' to drop it",
        )
    bad = _content_problem(m.get("content"))
    if bad is not None:
        return Problem(
            i,
            "bad_content",
            f"message {i} ({role}): {bad}",
            "content is a string or a flat list of parts such as {'type': 'text', 'text': '...'}; fix the message "
            "or pass on_invalid='repair' to drop it",
        )
    return None


def _result_problems(messages: Sequence[Mapping[str, Any]], checked: list[int], known: set[str]) -> list[Problem]:
    """Tool results a provider rejects: answering no call, standing apart from their call's results, or answering
    a call another result answered already."""
    sub = [messages[i] for i in checked]
    groups = tool_groups(sub)
    problems: list[Problem] = []
    answered: set[str] = set()
    in_place: set[int] = set()  # sub positions of calls and of results directly after them
    for n, i in enumerate(checked):
        m = messages[i]
        if m["role"] != "tool":
            if n in groups.members:
                in_place.add(n)
            continue
        call_id = m.get("tool_call_id")
        named = f" (id {m['id']!r})" if m.get("id") else ""
        a = groups.group_of.get(n)
        if a is not None and call_id and str(call_id) not in {str(_field(c, "id")) for c in sub[a]["tool_calls"]}:
            a = None  # joined a call by adjacency, but it names a call that call message did not make
        if a is None:
            if str(call_id) not in known:
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
            continue
        key = f"{a}:{call_id}" if call_id else None
        if key is not None and key in answered:
            if n - 1 in in_place and groups.group_of.get(n - 1) == a:
                in_place.add(n)  # dropped by a repair, it leaves the results after it in place
            problems.append(
                Problem(
                    i,
                    "duplicate_result",
                    f"tool message{named} at {i} answers tool call {call_id!r} a second time",
                    "send one result per call (drop this one), or pass on_invalid='repair' to drop it",
                    str(call_id),
                )
            )
            continue
        if key is not None:
            answered.add(key)
        if n - 1 in in_place and groups.group_of.get(n - 1) == a:
            in_place.add(n)
            continue
        at = checked[a]
        problems.append(
            Problem(
                i,
                "separated_result",
                f"tool message{named} at {i} answers tool call {call_id!r} of message {at}, but other messages "
                f"stand between them",
                "put every result directly after its call (results first, then the next message), or pass "
                "on_invalid='repair' to move it there",
                str(call_id) if call_id else None,
            )
        )
    return problems


def _unanswered(messages: Sequence[Mapping[str, Any]], checked: list[int]) -> list[Problem]:
    sub = [messages[i] for i in checked]
    groups = tool_groups(sub)
    problems: list[Problem] = []
    for a, members in groups.members.items():
        calls = [c for c in sub[a].get("tool_calls") or ()]
        results = [sub[j] for j in members[1:]]
        ids = {str(r.get("tool_call_id")) for r in results}
        loose = sum(1 for r in results if not r.get("tool_call_id"))  # a result naming another call is an orphan
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
    return problems


def _ordering(messages: Sequence[Mapping[str, Any]], checked: list[int], start_on_user: bool) -> list[Problem]:
    """The portable rules (Anthropic and Gemini take the system text only at the top, and a history cut by a
    budget should not open on a reply): no system message after the conversation started; with
    ``start_on_user``, the conversation opens on a user message; no tool-call id twice."""
    problems: list[Problem] = []
    started: int | None = None
    seen: dict[str, int] = {}
    for i in checked:
        m = messages[i]
        role = m["role"]
        if role in SYSTEM_ROLES:
            if started is not None:
                problems.append(
                    Problem(
                        i,
                        "late_system",
                        f"message {i} ({role}) stands after the conversation started (message {started})",
                        "move it to the leading system messages (Anthropic and Gemini take a system prompt only "
                        "at the top)",
                    )
                )
            continue
        if started is None:
            started = i
            if start_on_user and role != "user" and any(messages[j]["role"] == "user" for j in checked):
                problems.append(
                    Problem(
                        i,
                        "starts_on_reply",
                        f"the conversation starts on {role} (message {i}), not on a user message",
                        "start the history on the user message the reply answers",
                    )
                )
        for call in m.get("tool_calls") or ():
            call_id = _field(call, "id")
            if call_id is None:
                continue
            if str(call_id) in seen:
                problems.append(
                    Problem(
                        i,
                        "repeated_call_id",
                        f"message {i} ({role}) repeats tool call id {str(call_id)!r} (first at {seen[str(call_id)]})",
                        "give every tool call its own id",
                        str(call_id),
                    )
                )
            else:
                seen[str(call_id)] = i
    return problems


def conversation_problems(
    messages: Sequence[Mapping[str, Any]],
    *,
    complete: bool = True,
    known_calls: Iterable[str] = (),
    roles: Sequence[str] = MESSAGE_ROLES,
    portable: bool = False,
    start_on_user: bool = True,
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
        portable: add the rules of the strictest providers, which OpenAI itself does not enforce: a system
            message only leads (``late_system``), no tool-call id twice (``repeated_call_id``) and, with
            ``start_on_user``, the conversation opens on a user message (``starts_on_reply``).  These are
            reported, never repaired.
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
        problem = _message_problem(i, m, roles)
        if problem is None:
            checked.append(i)
        else:
            problems.append(problem)
    problems += _result_problems(messages, checked, {str(c) for c in known_calls})
    if complete:
        problems += _unanswered(messages, checked)
    if portable:
        problems += _ordering(messages, checked, start_on_user)
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
    """``messages`` if valid; else :class:`ConversationError` (``"raise"``) or the repaired list (``"repair"``,
    :func:`~tokenbox_core.chat._repair.repair_conversation`, each change named by a
    :class:`~tokenbox_core.errors.ConversationRepairWarning`)."""
    return checked_conversation(
        messages, on_invalid=on_invalid, complete=complete, known_calls=known_calls, roles=roles
    ).messages


def checked_conversation(
    messages: Sequence[Mapping[str, Any]],
    *,
    on_invalid: OnInvalid | str = "raise",
    complete: bool = True,
    known_calls: Iterable[str] = (),
    roles: Sequence[str] = MESSAGE_ROLES,
    warn: bool = True,
) -> Repaired:
    """:func:`check_conversation` with where each kept message came from (an adapter maps the repaired list
    back to its own messages); ``warn=False`` for a repair the caller makes on its own behalf (no warning)."""
    from tokenbox_core.chat._repair import repair_conversation

    mode = check_on_invalid(on_invalid)
    msgs = list(messages)
    problems = conversation_problems(msgs, complete=complete, known_calls=known_calls, roles=roles)
    if not problems:
        return Repaired(msgs, list(range(len(msgs))), [])
    if mode == "raise":
        first = problems[0]
        more = f" ({len(problems) - 1} more problem{'s' if len(problems) > 2 else ''} after it)" if problems[1:] else ""
        raise ConversationError(f"{first}{more}", index=first.index, kind=first.kind, problems=problems)
    repaired = repair_conversation(msgs, problems)
    if warn and repaired.changes:
        warnings.warn(
            f"on_invalid='repair' changed the conversation ({len(repaired.changes)} change"
            f"{'s' if len(repaired.changes) > 1 else ''}): " + "; ".join(repaired.changes),
            ConversationRepairWarning,
            stacklevel=3,
        )
    return repaired


def sequence_problems(messages: Sequence[Mapping[str, Any]], *, start_on_user: bool = True) -> list[str]:
    """Everything a chat provider would reject in ``messages`` as strings (an empty list means valid):
    :func:`conversation_problems` with the ``portable`` rules (a system message after the conversation started,
    a repeated tool-call id and, with ``start_on_user``, a history that does not start on a user message)."""
    return [str(p) for p in conversation_problems(messages, portable=True, start_on_user=start_on_user)]
