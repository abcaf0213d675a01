"""Reference compression: pointer-based deduplication across sections (chapter §6.7.3).

Segments are the items of the elastic sections: evidence, memory and the
conversation's history (never the current turn or pinned system messages).
Two segments are duplicates when their normalised texts are equal, or the
Jaccard similarity of their word shingles (``shingle_size`` words) reaches
``dedupe_threshold``, or — with an ``embedder`` configured — the cosine of
their embeddings reaches ``embedding_threshold``.

In each cluster of duplicates the **canonical** instance is the one with the
highest authority (evidence authority; memory authority, 0.5 when unknown;
conversation turns 0.0), ties going to the earliest in canonical order.
Every duplicate that comes *after* the canonical is replaced by a pointer
``[REF: id — "first words…"]`` (an evidence id; ``section:id`` for a memory or a
turn, whose ids are only unique within their section; an evidence pointer keeps its
provenance tag); duplicates placed before the canonical stay verbatim, since
a pointer must never precede what it points to (referential integrity, which
Validate checks on the emitted context).

Finding the duplicates (words, shingles, sketches, candidate pairs) lives in
:mod:`tokenbox_core.compiler._shingles`; with ``CompilerConfig(near_duplicates=False)``
only exact duplicates are looked for (a signature pass, no shingles).

>>> a = shingles("Quarterly revenue grew 12% year over year.", 3)
>>> jaccard(a, shingles("quarterly revenue  grew 12% year over year", 3))
1.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from tokenbox_core._sections import Item
from tokenbox_core.compiler._build import SectionPlan
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._inputs import Evidence, Memory
from tokenbox_core.compiler._render import evidence_tag
from tokenbox_core.compiler._shingles import (
    find_duplicates,
    find_exact_duplicates,
    jaccard,
    normalise,
    shingles,
)
from tokenbox_core.compiler._turn_cache import TurnCache
from tokenbox_core.tokens import TokenCounter, content_text

if TYPE_CHECKING:
    from tokenbox_core.compiler._assemble import Assembled

__all__ = [
    "Deduplication",
    "Reference",
    "compress_references",
    "dangling_references",
    "find_duplicates",
    "find_exact_duplicates",
    "jaccard",
    "normalise",
    "pointer_text",
    "restore_references",
    "shingles",
]

_SNIPPET_WORDS = 8


@dataclass(frozen=True)
class Reference:
    """One pointer: which item was replaced, by a pointer to which canonical item, and what it saved."""

    section: str
    item_id: str
    canonical_section: str
    canonical_id: str
    similarity: float
    saved_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "item_id": self.item_id,
            "canonical_section": self.canonical_section,
            "canonical_id": self.canonical_id,
            "similarity": round(self.similarity, 6),
            "saved_tokens": self.saved_tokens,
        }


def _cosine(u: Sequence[float], v: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(u, v, strict=False))
    nu = math.sqrt(sum(x * x for x in u))
    nv = math.sqrt(sum(y * y for y in v))
    return 0.0 if nu == 0 or nv == 0 else dot / (nu * nv)


def pointer_text(canonical_id: str, canonical_text: str) -> str:
    """``[REF: id — "first words…"]``: the pointer that replaces a duplicate."""
    words = canonical_text.split()
    snippet = " ".join(words[:_SNIPPET_WORDS]) + ("…" if len(words) > _SNIPPET_WORDS else "")
    return f'[REF: {canonical_id} — "{snippet}"]'


class _Segment(NamedTuple):  # a tuple: built for every elastic item on every compile, so cheap to make
    order: int
    plan_index: int
    item_index: int
    section: str
    item: Item
    text: str
    authority: float


def _segments(plans: Sequence[SectionPlan]) -> list[_Segment]:
    out: list[_Segment] = []
    for p_index, plan in enumerate(plans):
        if plan.elastic_tier is None:
            continue  # the current turn, pinned system messages and fixed tiers are never replaced
        get = plan.payload.get
        for i_index, item in enumerate(plan.section.items):
            payload = get(item.id)
            if payload is None:  # a conversation turn (its plan keeps no payloads): the item's own text
                text, authority = item.content, 0.0
            elif type(payload) is dict:  # a message
                text, authority = content_text(payload.get("content")), 0.0
            elif isinstance(payload, Evidence):
                text, authority = payload.text, payload.authority
            elif isinstance(payload, Memory):
                text, authority = payload.text, 0.5 if payload.authority is None else payload.authority
            elif isinstance(payload, Mapping):
                text, authority = content_text(payload.get("content")), 0.0
            else:
                text, authority = item.content, 0.0
            if text.strip():
                out.append(_Segment(len(out), p_index, i_index, plan.id, item, text, authority))
    return out


def _clusters(
    segments: list[_Segment], config: CompilerConfig, cache: TurnCache | None
) -> list[tuple[int, int, float]]:
    texts = [s.text for s in segments]
    if config.near_duplicates:
        pairs = find_duplicates(texts, config.dedupe_threshold, config.shingle_size, cache)
    else:
        pairs = find_exact_duplicates(texts)
    if config.embedder is not None:
        pairs += _embedding_pairs(segments, config.embedder, config.embedding_threshold, {p[1] for p in pairs})
    return pairs


def _embedding_pairs(
    segments: list[_Segment], embed: Callable[[str], Sequence[float]], threshold: float, done: set[int]
) -> list[tuple[int, int, float]]:
    vectors = [list(embed(s.text)) for s in segments]
    out = []
    for j in range(len(segments)):
        if j in done:
            continue
        best = max(((_cosine(vectors[i], vectors[j]), i) for i in range(j)), default=None, key=lambda p: (p[0], -p[1]))
        if best is not None and best[0] >= threshold:
            out.append((best[1], j, best[0]))
    return out


def _union(n: int, pairs: list[tuple[int, int, float]]) -> list[int]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j, _ in pairs:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    return [find(x) for x in range(n)]


@dataclass(frozen=True)
class Deduplication:
    """Reference compression's result: the rewritten plans, the pointers, and every duplicate cluster.

    ``clusters`` lists each group of duplicates as ``(section, item_id)`` pairs in canonical order (found
    whether or not ``dedupe`` replaced them: the duplication-rate metric reads them).
    """

    plans: tuple[SectionPlan, ...]
    references: tuple[Reference, ...]
    clusters: tuple[tuple[tuple[str, str], ...], ...]


def compress_references(
    plans: tuple[SectionPlan, ...], config: CompilerConfig, counter: TokenCounter, cache: TurnCache | None = None
) -> Deduplication:
    """Replace later duplicates with pointers to their canonical instance (see the module docstring); ``cache``
    keeps the texts' sketches for the next compile."""
    segments = _segments(plans)
    pairs = _clusters(segments, config, cache)
    if not pairs:
        return Deduplication(plans, (), ())
    similarity = {j: sim for _, j, sim in pairs}
    roots = _union(len(segments), pairs)
    members: dict[int, list[int]] = {}
    for index, root in enumerate(roots):
        members.setdefault(root, []).append(index)
    groups = [g for g in members.values() if len(g) > 1]
    clusters = tuple(tuple((segments[k].section, segments[k].item.id) for k in g) for g in groups)
    replaced: dict[tuple[int, int], tuple[Item, Reference]] = {}
    for group in groups if config.dedupe else ():
        canonical = max(group, key=lambda k: (segments[k].authority, -segments[k].order))
        canon = segments[canonical]
        for k in group:
            seg = segments[k]
            if seg.order <= canon.order:
                continue
            item, saved = _pointer_item(plans[seg.plan_index], seg, canon, counter)
            if saved <= 0:
                continue
            ref = Reference(seg.section, seg.item.id, canon.section, canon.item.id, similarity.get(k, 1.0), saved)
            replaced[(seg.plan_index, seg.item_index)] = (item, ref)
    if not replaced:
        return Deduplication(plans, (), clusters)
    out = list(plans)
    for p_index, plan in enumerate(plans):
        hits = [(i, replaced[(p_index, i)][0]) for i in range(len(plan.section.items)) if (p_index, i) in replaced]
        if hits:
            items = list(plan.section.items)
            for i, item in hits:
                items[i] = item
            out[p_index] = plan.with_section(replace(plan.section, content=tuple(items)))
    refs = tuple(ref for _, ref in sorted(((k, v[1]) for k, v in replaced.items()), key=lambda kv: kv[0]))
    return Deduplication(tuple(out), refs, clusters)


def _pointer_item(plan: SectionPlan, seg: _Segment, canon: _Segment, counter: TokenCounter) -> tuple[Item, int]:
    label = canon.item.id if canon.section == "evidence" else f"{canon.section}:{canon.item.id}"
    pointer = pointer_text(label, canon.text)
    payload = plan.payload.get(seg.item.id)
    content = f"{evidence_tag(payload)}\n{pointer}" if isinstance(payload, Evidence) else pointer
    conv = plan.conversation
    if conv is not None and seg.item.tokens is not None:
        index = conv.index_of[seg.item.id]
        message = dict(conv.messages[index])
        message["content"] = pointer
        tokens: int | None = conv.counter.size(message, index)
        saved = seg.item.tokens - (tokens or 0)
    else:
        tokens = None
        saved = counter.count(seg.item.content) - counter.count(content)
    return replace(seg.item, content=content, tokens=tokens), saved


def dangling_references(assembled: Assembled, refs: tuple[Reference, ...]) -> set[tuple[str, str]]:
    """References whose canonical instance is not emitted before them (evicted or laid out later)."""
    if not refs:
        return set()
    seen: set[tuple[str, str]] = set()
    bad: set[tuple[str, str]] = set()
    targets = {(r.section, r.item_id): (r.canonical_section, r.canonical_id) for r in refs}
    for sid, body in assembled.emitted.items():
        if isinstance(body, str):
            continue
        for item in body:
            target = targets.get((sid, item.id))
            if target is not None and target not in seen:
                bad.add((sid, item.id))
            seen.add((sid, item.id))
    return bad


def restore_references(
    plans: tuple[SectionPlan, ...], base: tuple[SectionPlan, ...], dangling: set[tuple[str, str]]
) -> tuple[SectionPlan, ...]:
    """Give dangling pointers back their original items (from the plans before reference compression)."""
    originals = {(p.id, i.id): i for p in base for i in p.section.items}
    out = []
    for plan in plans:
        if any(key[0] == plan.id for key in dangling):
            items = tuple(
                originals.get((plan.id, i.id), i) if (plan.id, i.id) in dangling else i for i in plan.section.items
            )
            plan = plan.with_section(replace(plan.section, content=items))
        out.append(plan)
    return tuple(out)
