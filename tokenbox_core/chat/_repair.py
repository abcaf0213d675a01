"""``on_invalid="repair"``: a conversation a provider rejects made one it accepts, deterministically and with
every change named (:func:`repair_conversation`, called by :func:`~tokenbox_core.chat.check_conversation`).

What each problem of :func:`~tokenbox_core.chat._validate.conversation_problems` becomes:

- ``separated_result`` (a tool result with other messages between it and its call, or arriving after a later
  turn): **moved**, unchanged, to directly after its call's other results — lossless;
- ``duplicate_result`` (a second result for the same call): **dropped**, the first kept; the change says whether
  the dropped one was an exact copy or differed;
- ``orphan_result``, ``unknown_role``, ``no_content``, ``bad_content``: the message is **dropped** (nothing can
  send it);
- ``unanswered_call``: the call is **removed** from its message (a copy; the message is dropped when nothing
  else is left in it).

Consecutive user messages are no problem and are kept as they are: OpenAI accepts them, Anthropic combines
consecutive turns of one role itself, and merging would rewrite content and ids the archive and the
omission markers refer to.  Repair never rewrites a message's content or a tool-call id.

>>> call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
>>> fixed = repair_conversation(*_problems([{"role": "user", "content": "q"},
...     {"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "user", "content": "and?"},
...     {"role": "tool", "tool_call_id": "c1", "content": "42"}]))
>>> [m["role"] for m in fixed.messages], fixed.sources
(['user', 'assistant', 'tool', 'user'], [0, 1, 3, 2])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokenbox_core.chat._messages import tool_groups
from tokenbox_core.chat._validate import Problem, Repaired, _field, conversation_problems

__all__ = ["repair_conversation"]

_DROPPED = {
    "orphan_result": "dropped the tool result at {i} (it answers no call{ref})",
    "unknown_role": "dropped message {i} (role {role!r})",
    "no_content": "dropped message {i} ({role}, no content)",
    "bad_content": "dropped message {i} ({role}, content that cannot be sent)",
}


def _problems(messages: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[Problem]]:
    """``messages`` and their problems (the doctest's shorthand)."""
    msgs = list(messages)
    return msgs, conversation_problems(msgs)


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two results are copies: equal but for their own ``id``."""
    return {k: v for k, v in a.items() if k != "id"} == {k: v for k, v in b.items() if k != "id"}


def repair_conversation(messages: Sequence[Mapping[str, Any]], problems: Sequence[Problem]) -> Repaired:
    """``messages`` with ``problems`` (theirs, from ``conversation_problems``) repaired as the module docstring
    says; the portable ordering rules are reported only and left as they are."""
    msgs = list(messages)
    changes: list[str] = []
    drop: set[int] = set()
    moved: set[int] = set()
    unanswered: dict[int, set[str]] = {}
    first_result: dict[str, int] = {}
    for i, m in enumerate(msgs):
        if isinstance(m, Mapping) and m.get("role") == "tool" and m.get("tool_call_id") is not None:
            first_result.setdefault(str(m.get("tool_call_id")), i)
    for p in problems:
        m = msgs[p.index]
        if p.kind in _DROPPED:
            drop.add(p.index)
            ref = f", tool_call_id {p.call_id!r}" if p.call_id else ""
            changes.append(_DROPPED[p.kind].format(i=p.index, ref=ref, role=m.get("role")))
        elif p.kind == "duplicate_result":
            drop.add(p.index)
            first = first_result.get(str(p.call_id), p.index)
            how = "an exact copy of" if _same(m, msgs[first]) else "differing from"
            changes.append(
                f"dropped the second result for tool call {p.call_id!r} at {p.index} ({how} the one at "
                f"{first}, which is kept)"
            )
        elif p.kind == "separated_result":
            moved.add(p.index)
        elif p.kind == "unanswered_call" and p.call_id is not None:
            unanswered.setdefault(p.index, set()).add(p.call_id)
    order = [i for i in range(len(msgs)) if i not in drop and i not in moved]
    if moved:
        kept = [i for i in range(len(msgs)) if i not in drop]
        groups = tool_groups([msgs[i] for i in kept])
        call_of = {kept[n]: kept[a] for n, a in groups.group_of.items()}
        for i in sorted(moved):
            a = call_of[i]
            at = order.index(a) + 1
            while at < len(order) and call_of.get(order[at]) == a:
                at += 1
            order.insert(at, i)
            changes.append(
                f"moved the tool result at {i} (tool_call_id {msgs[i].get('tool_call_id')!r}) next to its call at {a}"
            )
    out: list[Mapping[str, Any]] = []
    sources: list[int] = []
    for i in order:
        m = msgs[i]
        gone = unanswered.get(i)
        if gone:
            left = [c for c in m.get("tool_calls") or () if str(_field(c, "id")) not in gone]
            changes.append(
                f"removed unanswered tool call{'s' if len(gone) > 1 else ''} {', '.join(sorted(gone))} from message {i}"
            )
            if not left and not m.get("content"):
                continue
            m = {k: v for k, v in m.items() if k != "tool_calls"} | ({"tool_calls": left} if left else {})
        out.append(m)
        sources.append(i)
    return Repaired(out, sources, changes)
