"""What a conversation needs after its layout: whole tool groups, ``start_on``, marker places, a partial cut.

Each step only removes or moves messages (a partial cut only fills room the
layout left), so a fitted conversation stays within its budget.  The functions
work on *entries*: indices into the input messages in conversation order, or
omission markers (any other object), so the LangChain prompt layout can use
them on its own message lists too.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from typing import Any

from tokenbox_core.chat._messages import ChatCounter, ToolGroups

__all__ = ["partial_cut", "place_markers", "split_groups", "start_on_fixup"]


def split_groups(entries: list[Any], groups: ToolGroups) -> list[int]:
    """Remove the kept members of every tool group the layout kept only in part (a group whose members sat in
    different sections); returns the removed indices.  A group is kept or removed as a whole."""
    kept = {e for e in entries if isinstance(e, int)}
    gone: set[int] = set()
    for members in groups.members.values():
        present = [j for j in members if j in kept]
        if present and len(present) != len(members):
            gone.update(present)
    if gone:
        entries[:] = [e for e in entries if not (isinstance(e, int) and e in gone)]
    return sorted(gone)


def start_on_fixup(
    entries: list[Any],
    *,
    is_start: Callable[[int], bool],
    is_system: Callable[[int], bool],
    critical: Container[int],
    system_end: int,
    groups: ToolGroups,
) -> list[int]:
    """Drop leading messages, whole tool groups at a time, until one that ``is_start``; returns the dropped
    indices (and removes them from ``entries``).

    Indices below ``system_end`` (the leading system messages) and markers are
    passed over, and so are critical system messages.  Nothing is dropped when
    no kept message is a start (an agent loop is never emptied), nor when a
    critical message comes first (the history could not start on a start
    message whatever was removed).
    """
    dropped: list[int] = []
    gone: set[int] = set()
    for e in entries:
        if not isinstance(e, int) or e < system_end or e in gone:
            continue
        if is_start(e):
            break
        if e in critical:
            if is_system(e):
                continue
            return []
        unit = groups.unit(e)
        dropped.extend(unit)
        gone.update(unit)
    else:
        return []
    if not dropped:
        return []
    entries[:] = [e for e in entries if not (isinstance(e, int) and e in gone)]
    return sorted(gone)


def place_markers(
    entries: list[Any],
    *,
    is_system: Callable[[int], bool],
    is_start: Callable[[int], bool] | None,
    marker_is_system: Callable[[Any], bool],
    marker_is_start: Callable[[Any], bool],
    groups: ToolGroups,
) -> None:
    """Move the omission markers in ``entries`` to where a provider accepts them, in place.

    Each marker stands at the head of its run's kept messages unless that
    position is invalid: a system marker after a conversation message moves up
    to the end of the leading system messages (several keep their order);
    another marker before a system message moves down after the leading system
    messages and, when it would then open the conversation without being a
    start while the first message is one, after that message and its tool
    group.  A marker costs the same wherever it stands.
    """
    rest = [e for e in entries if isinstance(e, int)]
    if len(rest) == len(entries):
        return
    lead = 0
    while lead < len(rest) and is_system(rest[lead]):
        lead += 1
    placed: list[tuple[int, int, Any]] = []  # (position in rest, order, marker)
    position = 0
    for e in entries:
        if isinstance(e, int):
            position += 1
            continue
        at = position
        if marker_is_system(e):
            at = min(at, lead)
        else:
            at = max(at, lead)
            if at == lead and is_start is not None and at < len(rest) and not marker_is_start(e):
                first = rest[at]
                if is_start(first):
                    unit = set(groups.unit(first))
                    while at < len(rest) and rest[at] in unit:
                        at += 1
        placed.append((at, len(placed), e))
    placed.sort(key=lambda p: (p[0], p[1]))
    out: list[Any] = []
    k = 0
    for i, e in enumerate(rest):
        while k < len(placed) and placed[k][0] == i:
            out.append(placed[k][2])
            k += 1
        out.append(e)
    out.extend(p[2] for p in placed[k:])
    entries[:] = out


def partial_cut(
    message: Mapping[str, Any],
    index: int,
    room: int,
    counter: ChatCounter,
    splitter: Callable[[str], list[str]],
    *,
    keep_tail: bool,
) -> dict[str, Any] | None:
    """The boundary message cut to fit ``room`` (LangChain's ``allow_partial``): the fewest content parts
    dropped, else the most text splits kept (from the end with ``keep_tail``); ``None`` when nothing fits.
    Each candidate is sized as sent (:meth:`ChatCounter.size`) and kept when it is at most ``room``."""
    content = message.get("content")
    if isinstance(content, list | tuple) and len(content) > 1:
        for keep in range(len(content) - 1, 0, -1):
            parts = content[len(content) - keep :] if keep_tail else content[:keep]
            candidate = {**message, "content": list(parts)}
            if counter.size(candidate, index) <= room:
                return candidate
    text: str | None = None
    if isinstance(content, str):
        text = content
    elif isinstance(content, list | tuple):
        for part in content:
            if isinstance(part, str):
                text = part
                break
            if isinstance(part, Mapping) and part.get("type") == "text":
                text = part.get("text")
                break
    if not text:
        return None
    splits = list(splitter(text))
    if keep_tail:
        splits.reverse()
    lo, hi = 0, len(splits)
    best: dict[str, Any] | None = None
    while lo < hi:  # the most splits that fit, assuming more text never costs less
        mid = (lo + hi + 1) // 2
        chosen = splits[:mid]
        if keep_tail:
            chosen = chosen[::-1]
        candidate = {**message, "content": "".join(chosen)}
        if counter.size(candidate, index) <= room:
            lo = mid
            best = candidate
        else:
            hi = mid - 1
    return best if lo > 0 else None
