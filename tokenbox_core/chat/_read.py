"""A conversation read in one pass: messages checked, tool calls grouped, overrides read (chapter §6.2.4).

The conversation engine (:func:`tokenbox_core.chat.conversation_sections`) starts here.  Checking every
message, grouping the tool calls and reading the ``"tokenbox"`` options were three walks over a long history;
:func:`read_messages` is one, and with ``only`` an adapter lets the engine skip the plain messages altogether
(they are then made, converted and counted only when the engine reads them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenbox_core.chat._messages import OVERRIDE_KEY, ToolGroups, _Grouper
from tokenbox_core.chat._validate import FRAMEWORK_ROLES, conversation_problems
from tokenbox_core.errors import ConversationError, SectionError

__all__ = ["ReadMessages", "read_conversation", "read_messages"]

_OVERRIDE_KEYS = ("critical", "priority", "id")


def _invalid(i: int, m: Any) -> SectionError | None:
    """Why message ``i`` is not a message (a mapping with a non-empty string ``role`` and ``tool_calls`` a list
    or tuple, if any), or None."""
    if type(m) is not dict and not isinstance(m, Mapping):
        return SectionError(
            f"message {i} is a {type(m).__name__}; messages are dicts in the OpenAI chat shape, "
            f"e.g. {{'role': 'user', 'content': 'hi'}}"
        )
    role = m.get("role")
    if not role or not isinstance(role, str):
        return SectionError(f"message {i} has role {role!r}; a role is a non-empty string such as 'user'")
    calls = m.get("tool_calls")
    if calls is not None and type(calls) is not list and not isinstance(calls, list | tuple):
        return SectionError(
            f"message {i} has tool_calls of type {type(calls).__name__}; tool_calls is a list of "
            f"{{'id', 'type': 'function', 'function': {{'name', 'arguments'}}}}"
        )
    return None


def _bad_override(i: int, value: Any) -> SectionError | None:
    """Why the ``"tokenbox"`` options ``value`` of message ``i`` are not valid, or None."""
    if not isinstance(value, Mapping):
        return SectionError(
            f"message {i} has {OVERRIDE_KEY!r} = {value!r}; it must be a dict such as "
            f"{{'priority': 2}} or {{'critical': True}}"
        )
    unknown = sorted(str(k) for k in value if k not in _OVERRIDE_KEYS)
    if unknown:
        return SectionError(
            f"message {i}: unknown {OVERRIDE_KEY!r} override keys {unknown}; the keys are 'priority' (int), "
            f"'critical' (bool) and 'id' (str)"
        )
    prio = value.get("priority")
    if prio is not None and (isinstance(prio, bool) or not isinstance(prio, int)):
        return SectionError(f"message {i}: override 'priority' must be an int, got {prio!r}")
    own = value.get("id")
    if own is not None and not (isinstance(own, str) and own):
        return SectionError(f"message {i}: override 'id' must be a non-empty string, got {own!r}")
    crit = value.get("critical")
    if crit is not None and not isinstance(crit, bool):
        return SectionError(f"message {i}: override 'critical' must be True or False, got {crit!r}")
    return None


@dataclass(frozen=True)
class ReadMessages:
    """A conversation read in one pass (:func:`read_messages`): the messages (a list, or the sequence given
    with ``only``), their tool groups and the validated ``"tokenbox"`` options by index.  ``group_error``
    and ``override_error`` are what grouping and the first invalid option raised: :meth:`raise_deferred`
    raises them after the engine has checked its own arguments, so errors come in the order they always did
    (messages, options, counter, groups, overrides)."""

    messages: Sequence[Mapping[str, Any]]
    groups: ToolGroups
    overrides: dict[int, Mapping[str, Any]]
    group_error: Exception | None = None
    override_error: Exception | None = None
    _grouper: _Grouper | None = field(default=None, repr=False, compare=False)
    """The grouping state after the last message, kept by :func:`read_conversation` to continue from."""

    def raise_deferred(self) -> None:
        """Raise what grouping, then reading the overrides, found wrong (nothing when all is well)."""
        if self.group_error is not None:
            raise self.group_error
        if self.override_error is not None:
            raise self.override_error


def read_messages(messages: Iterable[Any], *, only: Iterable[int] | None = None) -> ReadMessages:
    """Validate a conversation, group its tool calls and read its overrides, in one pass (chapter §6.2.4).

    The same as checking each message (a mapping with a non-empty string
    ``role`` and a list ``tool_calls``; the first bad message raises a
    :class:`~tokenbox_core.errors.SectionError`), then :func:`tool_groups`,
    then collecting the ``"tokenbox"`` options up to the first invalid one —
    three walks over a long history made one (the three, kept as test
    references, are compared with this on generated conversations).

    ``only`` (the adapters' hook for long histories): ``messages`` is a
    sequence, possibly one that makes each message when it is first read, and
    only the messages at these indices (ascending) are read here; the caller
    vouches that every other one is a *plain* message — a dict with a
    non-empty string role other than ``"tool"``, no ``tool_calls`` and no
    ``"tokenbox"`` key — which ends a tool group and is otherwise not looked
    at.  The engine then reads only the messages it keeps or counts.
    """
    if only is None:
        out: Sequence[Any] = list(messages)
        pairs: Iterable[tuple[int, Any]] = enumerate(out)
    else:
        if not isinstance(messages, Sequence):
            raise SectionError(f"read_messages(only=...) needs a sequence of messages, got {type(messages).__name__}")
        out = messages
        pairs = ((i, out[i]) for i in only)
    grouper = _Grouper()
    add = grouper.add
    found: dict[int, Mapping[str, Any]] = {}
    group_error: Exception | None = None
    override_error: Exception | None = None
    key = OVERRIDE_KEY
    last = -1
    for i, m in pairs:
        if i != last + 1:  # plain messages in between (``only``): they end the group that results join
            grouper.current = None
        last = i
        if type(m) is dict:  # the common case in one look: a dict, a string role, no or a list of tool_calls
            role = m.get("role")
            calls = m.get("tool_calls")
            if not (type(role) is str and role and (calls is None or type(calls) is list)):
                invalid = _invalid(i, m)
                if invalid is not None:
                    raise invalid
        else:
            invalid = _invalid(i, m)
            if invalid is not None:
                raise invalid
            role = m.get("role")
            calls = m.get("tool_calls")
        value = m.get(key)
        if value is not None and override_error is None:
            try:
                override_error = _bad_override(i, value)
            except Exception as exc:  # a key whose str() raises: raised where the old overrides pass raised it
                override_error = exc
            if override_error is None:
                found[i] = value
        if group_error is not None:
            continue
        try:
            add(i, m, role, calls)
        except Exception as exc:  # a call object whose id raises: raised after validation, as tool_groups did
            group_error = exc
    return ReadMessages(out, grouper.groups(), found, group_error, override_error)


def _plain_shapes(messages: Sequence[Any]) -> bool:
    """True when every message is a dict with a non-empty string role, ``tool_calls`` a list or absent, and no
    ``"tokenbox"`` overrides (what :func:`read_messages` checks in its fast path)."""
    for m in messages:
        if type(m) is not dict:
            return False
        role = m.get("role")
        calls = m.get("tool_calls")
        if not (type(role) is str and role and (calls is None or type(calls) is list)) or OVERRIDE_KEY in m:
            return False
    return True


def read_conversation(messages: Sequence[Any], *, after: ReadMessages | None = None) -> ReadMessages | None:
    """A conversation a provider would accept, checked and grouped — reading only what ``after`` has not.

    The messages are checked with :func:`~tokenbox_core.chat.conversation_problems` (``complete=True``, the
    framework roles) and their tool calls grouped; the result is a :class:`ReadMessages` (its messages a tuple,
    no overrides) that :func:`~tokenbox_core.chat.fit_conversation` takes without checking it again.  ``None``
    when the messages have a problem, carry ``"tokenbox"`` overrides or are not plain dicts: give them to
    ``fit_conversation`` whole, which checks them and raises its own error.

    ``after``: a read this function returned for a prefix of ``messages`` (the caller vouches that the prefix
    is unchanged: an agent loop's request is the previous one plus a step).  Only the messages past it are
    checked, on their own, and grouping continues where it stopped.  The prefix was valid and complete, so each
    of its calls is answered already: a new result answering one of them is a duplicate, or stands apart from
    its call, and the added messages then have a problem on their own (``None``: the whole list goes to the
    engine).  A conversation that was valid and complete stays valid when the added messages pass that check, so
    the read is the same as reading the whole list — at a cost that does not grow with the loop.
    """
    start = 0
    grouper = _Grouper()
    if after is not None:
        if after._grouper is None or len(after.messages) > len(messages):
            raise ConversationError(
                f"read_conversation(after=...) takes a read read_conversation returned for a prefix of the "
                f"messages; got a {'read_messages read' if after._grouper is None else 'read of a longer list'} "
                f"({len(after.messages)} messages, {len(messages)} given): pass after=None to read them all"
            )
        start = len(after.messages)
        grouper = after._grouper.copy()
    new = messages[start:]
    if not _plain_shapes(new) or conversation_problems(new, roles=FRAMEWORK_ROLES):
        return None
    add = grouper.add
    for i in range(start, len(messages)):
        m = messages[i]
        add(i, m, m["role"], m.get("tool_calls"))
    return ReadMessages(tuple(messages), grouper.groups(), {}, _grouper=grouper)
