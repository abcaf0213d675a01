"""The newest agent step in a session's window, and the room recall gives back (the planner's two rules of
issue 32; :meth:`tokenbox_core.ContextSession.compile` calls them).

The newest agent step — the assistant's tool call with all its results, which the model reads next — is
planned first (:func:`~tokenbox_core.session._window.plan_window` with ``pinned``): recall, the pointer and
older history get what it leaves.  When it does not fit whole, its results are shown by head and tail with
their archived ids (:func:`fit_step`), never left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokenbox_core.session._model import Summary
from tokenbox_core.session._recalled import SUMMARY_HEADER, Recalled, block_message, pointer_line, summary_line
from tokenbox_core.session._view import View, fitted_preview, plain_text
from tokenbox_core.session._window import WindowPlan

__all__ = ["fit_step", "given_back", "summaries_for"]

_MIN_SUMMARY_ROOM = 64  # tokens below which no summary is looked for


def given_back(
    view: View,
    window: Callable[[int], WindowPlan],
    plan: WindowPlan,
    recalled: Recalled | None,
    summaries: Sequence[Summary],
    room: int,
) -> tuple[WindowPlan, dict[str, Any] | None, Recalled | None]:
    """The plan with the block; when recall found nothing to show and the window is down to the newest agent
    step, the room recall was given goes back to the history: the window planned again in what the pointer
    leaves (the narrower plan when that does not fit).

    Only then: otherwise recalled messages and summaries fill recall's share of the budget, a function of the
    cut, so the block — before the agent's steps, in the task's message — stays byte-identical while the cut
    stays (a window that grew into that room would hold its cut past the block's next change, and every
    cached prefix would break twice per move instead of once: ``test_a_cache_aware_agent_loop_...``)."""
    pointer = pointer_line(*view.omitted_ids(plan.omitted)) if plan.omitted else None
    block = block_message(pointer, recalled, summaries)
    newest = set(view.newest_step())
    if summaries or (recalled is not None and recalled.lines) or not set(plan.kept) <= newest:
        return plan, block, recalled
    wider = window(room - view.size_of(block))
    if len(wider.kept) <= len(plan.kept):
        return plan, block, recalled
    shown = {view.ids[p] for p in wider.kept}
    kept_summaries = [s for s in summaries if not shown & set(s.source_turn_ids)]
    narrowed = recalled
    if recalled is not None:
        kept = [
            (p, line) for p, line in zip(recalled.positions, recalled.lines, strict=True) if view.ids[p] not in shown
        ]
        narrowed = Recalled(
            tuple(p for p, _ in kept), tuple(line for _, line in kept), tuple(s.summary_id for s in kept_summaries)
        )
    wider_pointer = pointer_line(*view.omitted_ids(wider.omitted)) if wider.omitted else None
    wider_block = block_message(wider_pointer, narrowed, kept_summaries)
    if wider.tokens + view.size_of(wider_block) > room:
        return plan, block, recalled
    return wider, wider_block, narrowed


def fit_step(view: View, step: Sequence[int], room: int) -> tuple[Sequence[int], dict[int, Mapping[str, Any]]]:
    """The sizes of the view with the newest agent step fitted to ``room``: verbatim when it fits, else each text
    result over an equal share of what the call leaves shown as its head and tail (:func:`fitted_preview`), and
    those previews by position.  A step that cannot be made to fit is left as it is (the compile reports it)."""
    if sum(view.sizes[p] for p in step) <= room:
        return view.sizes, {}
    results = [p for p in step if view.messages[p].get("role") == "tool" and plain_text(view.messages[p]) is not None]
    left = room - sum(view.sizes[p] for p in step if p not in results)
    if not results or left <= 0:
        return view.sizes, {}
    sizes = list(view.sizes)
    shown: dict[int, Mapping[str, Any]] = {}
    small = [p for p in results if view.sizes[p] <= left // len(results)]
    share = (left - sum(view.sizes[p] for p in small)) // max(1, len(results) - len(small))
    for p in results:
        if p in small:
            continue
        message = {**view.messages[p], "id": view.ids[p]}
        shown[p], sizes[p] = fitted_preview(
            message, view.archive.size(view.ids[p], "verbatim", message), view.archive.counter, share
        )
    return sizes, shown


def summaries_for(
    view: View,
    plan: WindowPlan,
    recalled: Recalled,
    cover: Callable[[], Sequence[Summary]],
    room: int,
    pointer: str | None,
    *,
    min_coverage: float,
) -> list[Summary]:
    """The checkpoint summaries (of ``cover()``, asked only when there is room) the block holds in the ``room``
    recall left (cache-aware windows, which cannot grow into it): newest first, each covering at least
    ``min_coverage`` times its size in omitted turns none of which is recalled."""
    counter = view.archive.counter
    used = view.size_of(block_message(pointer, recalled))
    first = min(plan.kept, default=len(view.ids))
    if first == 0 or room - used < _MIN_SUMMARY_ROOM:
        return []
    taken = set(recalled.positions)
    omitted = {view.ids[p]: view.sizes[p] for p in plan.omitted if p not in taken}
    chosen: list[Summary] = []
    used += counter.count("\n" + SUMMARY_HEADER)
    for summary in reversed(cover()):
        covered = summary.source_turn_ids
        if not set(covered) <= omitted.keys():
            continue
        if sum(omitted[i] for i in covered) < min_coverage * summary.tokens:
            continue  # verbatim turns in its tokens would show a good share of what it covers
        cost = counter.count("\n" + summary_line(summary))  # each line counted alone (a block counted whole at
        if used + cost <= room:  # every trial cost a tenth of a 500-turn compile); the whole is checked below
            chosen.append(summary)
            used += cost
    while chosen and view.size_of(block_message(pointer, recalled, chosen)) > room:
        chosen.pop()  # lines counted alone may undercount the block by a token at a line boundary
    return chosen
