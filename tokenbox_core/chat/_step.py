"""The newest agent step: kept whole when it fits, previewed head/tail when it does not, never dropped.

The rule (``docs/request-path.md``; the session's planner applies it too), decided here once for every fit path
(``fit_conversation``, the cache-aware cut, and through them the LangChain middleware, ``TokenBoxMessages`` and
``trim_messages``): the newest agent step — the last assistant message with tool calls and all its results, when the
conversation ends on them (the loop in flight) — outranks older history, omission markers and a layout's target. It
is critical; when it does not fit the window beside the other critical messages, each result too large for its share
of the room is shown as its head and tail with a note naming the result and the characters cut
(:func:`preview_result`), the tool call itself untouched. Only when even the call with the shortest previews cannot
fit is the step left to the layout as ordinary history.

>>> from tokenbox_core.chat._messages import ChatCounter
>>> result = {"role": "tool", "tool_call_id": "c1", "id": "t1", "content": " ".join(f"w{i}" for i in range(100))}
>>> print(preview_result(result, 1, 40, ChatCounter.of("whitespace"), 104)["content"])
w0 w1 w2 w3 w4 w5 w6 w7
[… tool result t1 (104 tokens, 389 characters) cut to fit the window: characters 23–362 are not shown …]
w93 w94 w95 w96 w97 w98 w99
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokenbox_core.chat._messages import ChatCounter, ToolGroups

__all__ = ["critical_step", "newest_step", "preview_result", "preview_step"]


def newest_step(messages: Sequence[Mapping[str, Any]], groups: ToolGroups, start: int) -> list[int]:
    """The indices of the newest agent step (the call first, then its results) when the conversation ends on it
    (the loop in flight, waiting for the model to act on the results), else ``[]``: after a user message or a
    final answer the step is history.  Steps before ``start`` (the leading system messages) are not one."""
    if not messages:
        return []
    anchor = groups.group_of.get(len(messages) - 1)
    if anchor is None:
        return []
    members = list(groups.members[anchor])
    return members if members[0] >= start and members[-1] == len(messages) - 1 else []


def _text(message: Mapping[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple) and all(
        isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content
    ):
        return "".join(str(p["text"]) for p in content)
    return None  # media or provider items: never rewritten


def preview_result(
    message: Mapping[str, Any], index: int, room: int, counter: ChatCounter, tokens: int
) -> dict[str, Any] | None:
    """``message`` (of ``tokens``) as its head and tail with a note naming what was cut, sized as sent to at
    most ``room``; ``None`` when its content is not text or not even the note fits."""
    text = _text(message)
    if text is None or room <= 0:
        return None
    name = message.get("id") or message.get("tool_call_id") or f"m{index}"
    tok = counter.text_counter(str(message.get("role") or "tool"))

    def made(k: int) -> dict[str, Any]:
        head = tok.truncate(text, (k + 1) // 2, keep="head") if k > 0 else ""
        tail = tok.truncate(text, k // 2, keep="tail") if k > 1 else ""
        if len(head) + len(tail) > len(text):  # overlapping ends of a short text: the head only
            tail = ""
        start = len(text) - len(tail)
        note = (
            f"\n[… tool result {name} ({tokens:,} tokens, {len(text):,} characters) cut to fit the window: "
            f"characters {len(head):,}–{start:,} are not shown …]\n"
        )
        return {**message, "content": head + note + tail}

    bare = counter.size(made(0), index)
    k = room - bare
    if k < 0:
        return None
    while True:
        candidate = made(k)
        size = counter.size(candidate, index)
        if size <= room:
            return candidate
        if k == 0:
            return None
        k = max(0, k - max(1, size - room))


def preview_step(
    messages: Sequence[Mapping[str, Any]],
    step: Sequence[int],
    room: int,
    counter: ChatCounter,
    sizes: Mapping[int, int],
) -> dict[int, dict[str, Any]] | None:
    """Previews of the step's results so the whole step costs at most ``room`` (``{}``: it fits whole): the
    room after the call is shared among the results, small ones kept whole and their unused share passed on
    (largest last); ``None`` when it cannot fit."""
    if sum(sizes[j] for j in step) <= room:
        return {}
    left = room - sizes[step[0]]
    pending = sorted(step[1:], key=lambda j: (sizes[j], j))
    while pending and sizes[pending[0]] <= left // len(pending):
        left -= sizes[pending.pop(0)]
    out: dict[int, dict[str, Any]] = {}
    for n, j in enumerate(pending):
        shown = preview_result(messages[j], j, left // (len(pending) - n), counter, sizes[j])
        if shown is None:
            return None
        out[j] = shown
        left -= counter.size(shown, j)
    return out


def critical_step(
    messages: Sequence[Mapping[str, Any]],
    groups: ToolGroups,
    start: int,
    overrides: Mapping[int, Mapping[str, Any]],
    critical: set[int],
    counter: ChatCounter,
    room: int | None,
    newest_kept: bool,
) -> tuple[dict[int, int], dict[int, dict[str, Any]]]:
    """The sizes of the ``critical`` messages and the previews of the newest step, which joins ``critical`` (in
    place) when ``room`` is given and ``newest_kept`` (history evicted oldest first), unless an override says
    ``{"critical": False}`` on one of its messages or not even its shortest previews fit ``room`` beside the
    other critical messages."""
    step: list[int] = []
    if room is not None and newest_kept:
        step = newest_step(messages, groups, start)
        if any(overrides.get(j, {}).get("critical") is False for j in step) or critical.issuperset(step):
            step = []
    added = [j for j in step if j not in critical]
    critical.update(step)
    sizes = counter.sizes(messages, sorted(critical))
    if not step:
        return sizes, {}
    assert room is not None
    others = sum(v for j, v in sizes.items() if j not in step)
    previews = preview_step(messages, step, room - others, counter, sizes)
    if previews is None:  # the step is history again
        critical.difference_update(added)
        for j in added:
            del sizes[j]
        return sizes, {}
    sizes.update({j: counter.size(p, j) for j, p in previews.items()})
    return sizes, previews
