"""The conversation engine's three whole-list passes before they were merged into ``read_messages`` (fb91a8a):
test references only (``test_read_messages.py`` compares the one pass with them on generated conversations)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tokenbox_core.chat.messages import OVERRIDE_KEY, ToolGroups, _field
from tokenbox_core.errors import SectionError

_OVERRIDE_KEYS = ("critical", "priority", "id")


def validate_messages(messages: Iterable[Any]) -> list[Mapping[str, Any]]:
    """The messages as a list, each checked: a mapping with a string ``role`` and a list ``tool_calls``."""
    out = list(messages)
    for i, m in enumerate(out):
        if type(m) is dict:  # the common case in one look: a dict, a string role, no or a list of tool_calls
            role = m.get("role")
            calls = m.get("tool_calls")
            if type(role) is str and role and (calls is None or type(calls) is list):
                continue
        if type(m) is not dict and not isinstance(m, Mapping):
            raise SectionError(
                f"message {i} is a {type(m).__name__}; messages are dicts in the OpenAI chat shape, "
                f"e.g. {{'role': 'user', 'content': 'hi'}}"
            )
        role = m.get("role")
        if not role or not isinstance(role, str):
            raise SectionError(f"message {i} has role {role!r}; a role is a non-empty string such as 'user'")
        calls = m.get("tool_calls")
        if calls is not None and type(calls) is not list and not isinstance(calls, list | tuple):
            raise SectionError(
                f"message {i} has tool_calls of type {type(calls).__name__}; tool_calls is a list of "
                f"{{'id', 'type': 'function', 'function': {{'name', 'arguments'}}}}"
            )
    return out


def overrides(messages: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """The validated ``"tokenbox"`` options of each message that has them, by index."""
    found: dict[int, Mapping[str, Any]] = {}
    for i, m in enumerate(messages):
        value = m.get(OVERRIDE_KEY)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise SectionError(
                f"message {i} has {OVERRIDE_KEY!r} = {value!r}; it must be a dict such as "
                f"{{'priority': 2}} or {{'critical': True}}"
            )
        unknown = sorted(str(k) for k in value if k not in _OVERRIDE_KEYS)
        if unknown:
            raise SectionError(
                f"message {i}: unknown {OVERRIDE_KEY!r} override keys {unknown}; the keys are 'priority' (int), "
                f"'critical' (bool) and 'id' (str)"
            )
        prio = value.get("priority")
        if prio is not None and (isinstance(prio, bool) or not isinstance(prio, int)):
            raise SectionError(f"message {i}: override 'priority' must be an int, got {prio!r}")
        own = value.get("id")
        if own is not None and not (isinstance(own, str) and own):
            raise SectionError(f"message {i}: override 'id' must be a non-empty string, got {own!r}")
        crit = value.get("critical")
        if crit is not None and not isinstance(crit, bool):
            raise SectionError(f"message {i}: override 'critical' must be True or False, got {crit!r}")
        found[i] = value
    return found


def tool_groups(messages: Sequence[Mapping[str, Any]]) -> ToolGroups:
    """Group each tool call with its results: a result joins the call whose ``id`` it names (earlier in the
    list); a result without a matching id joins the call it directly follows (after other results)."""
    owner: dict[str, int] = {}
    group_of: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    contiguous = True
    current: int | None = None  # the call that directly following results join
    for i, m in enumerate(messages):
        role = m.get("role")
        calls = m.get("tool_calls") if role != "tool" else None
        if calls:
            for call in calls:
                call_id = _field(call, "id")
                if call_id:
                    owner[str(call_id)] = i
            members[i] = [i]
            group_of[i] = i
            current = i
        elif role == "tool":
            call_id = m.get("tool_call_id")
            a = owner.get(str(call_id)) if call_id else None
            if a is None:
                a = current
            if a is not None:
                group = members[a]
                if group[-1] != i - 1:
                    contiguous = False
                group.append(i)
                group_of[i] = a
        else:
            current = None
    return ToolGroups(group_of, members, contiguous)
