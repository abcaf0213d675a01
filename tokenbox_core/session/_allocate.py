"""Recall's room in a compile: it follows the evidence, not a fixed share of the budget.

The room a session's window and its recall share (what is left once the other
tiers and the newest agent step are placed) goes to recall only as far as the
current question's hits need it: the ranked hits among the messages the window
leaves out (with the relevance gate of :class:`RecallConfig`), each with its
neighbours, in rank order, until ``share`` of the room is reached.  A strong match
(many relevant hits) may take up to ``share`` of it; a question that matches
nothing takes none; what the hits do not need stays with the history.

>>> from tokenbox_core.session._recall import RecallIndex
>>> index = RecallIndex()
>>> index.extend([("t_1", "the deploy key lives in vault"), ("t_2", "noted"), ("t_3", "lunch at noon")])
>>> cfg = RecallConfig(share=0.5, neighbours=1)
>>> from tokenbox_core import get_counter
>>> turns = [{"role": "user", "content": "the deploy key lives in vault"}, {"role": "assistant", "content": "noted"},
...          {"role": "user", "content": "lunch at noon"}]
>>> room = dict(config=cfg, room=100, ids=["t_1", "t_2", "t_3"], messages=turns, omitted=[0, 1, 2],
...             counter=get_counter("whitespace"))
>>> recall_room(index, "where is the deploy key?", **room)  # the hit t_1 and its neighbour t_2, and the header
32
>>> recall_room(index, "what about the weather?", **room)  # nothing matches: no room
0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokenbox_core.session._options import RecallConfig
from tokenbox_core.session._recall import RecallIndex, StoreIndex
from tokenbox_core.session._recalled import RECALL_HEADER, RecallLines
from tokenbox_core.tokens import TokenCounter

__all__ = ["recall_room"]


def recall_room(
    index: RecallIndex | StoreIndex,
    query: str,
    *,
    config: RecallConfig,
    room: int,
    ids: Sequence[str],
    messages: Sequence[Mapping[str, Any]],
    omitted: Sequence[int],
    counter: TokenCounter,
    call_of: Callable[[int], int | None] = lambda p: None,
    then: Callable[[int], Sequence[int]] | None = None,
    lines: RecallLines | None = None,
) -> int:
    """The tokens recall may use of ``room``: what its ranked hits among ``omitted`` (and their ``neighbours``)
    need, in rank order (a tool result with its call: ``call_of``), with the block's header, counted by
    ``counter`` as the block's lines; at most ``config.share`` of ``room``; 0 when nothing passes the relevance
    gate or less than ``config.min_share`` of ``room`` would be left for it.

    ``then(r)``: the positions recall may bring back once it takes ``r`` tokens (the window shrinks, so it leaves
    out more): the hits are ranked once more among those, and their need is the answer.  ``lines``: the session's
    line cache (:class:`~tokenbox_core.session._recalled.RecallLines`)."""
    lines = lines if lines is not None else RecallLines(counter)
    need = _need(
        index,
        query,
        config=config,
        room=room,
        ids=ids,
        messages=messages,
        omitted=omitted,
        counter=counter,
        call_of=call_of,
        lines=lines,
    )
    if then is None or not need:
        return need
    return _need(
        index,
        query,
        config=config,
        room=room,
        ids=ids,
        messages=messages,
        omitted=then(need),
        counter=counter,
        call_of=call_of,
        lines=lines,
    )


def _need(
    index: RecallIndex | StoreIndex,
    query: str,
    *,
    config: RecallConfig,
    room: int,
    ids: Sequence[str],
    messages: Sequence[Mapping[str, Any]],
    omitted: Sequence[int],
    counter: TokenCounter,
    call_of: Callable[[int], int | None],
    lines: RecallLines,
) -> int:
    cap = int(config.share * max(0, room))
    if cap < config.min_share * room or not omitted or not query.strip():
        return 0
    allowed = {ids[p]: p for p in omitted}
    found = index.search(
        query,
        limit=config.limit,
        allowed=allowed,
        min_relevance=config.min_relevance,
        min_terms=config.min_terms,
        max_term_share=config.max_term_share,
    )
    taken: set[int] = set()
    need = counter.count("\n" + RECALL_HEADER) if found else 0  # the block's header
    for hit in found:
        position = allowed[hit.id]
        call = call_of(position)
        for near in (*([call] if call is not None else []), position, *_around(position, config.neighbours)):
            if not 0 <= near < len(ids) or near in taken or ids[near] not in allowed:
                continue
            taken.add(near)
            line, cost = lines.get(ids[near], messages[near])
            if len(line) > 64 * (cap + 1):  # cut before counting, as recall shows it
                cost = counter.count("\n" + line[: 64 * (cap + 1)])
            need += cost
        if need >= cap:
            return cap
    return need


def _around(position: int, distance: int) -> list[int]:
    return [p for d in range(1, distance + 1) for p in (position - d, position + d)]
