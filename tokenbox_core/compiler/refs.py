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

Words are mapped to stable integers (CRC32, memoised per word) and shingles
are tuples of those integers, hashed at C speed; integer tuples hash
identically in every process (no hash-seed dependence).  Each text's
shingles are hashed once, into a key of its shingle set (size and hash) and
its sketch (memoised by text across compiles, bounded by bytes); the tuple
sets are built only for candidate pairs and key matches.  Candidate pairs
come from a bottom-k sketch (the ``_SKETCH`` smallest shingle hashes of
each segment) and an inverted index over sketch values: segments sharing at
least ``k·threshold/3`` sketch values (near-duplicates share about
``k·Jaccard``) are verified with the exact Jaccard of the full shingle sets.  The cost is
near-linear in the material rather than quadratic.

>>> a = shingles("Quarterly revenue grew 12% year over year.", 3)
>>> jaccard(a, shingles("quarterly revenue  grew 12% year over year", 3))
1.0
"""

from __future__ import annotations

import math
import string
import sys
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tokenbox_core.compiler.build import SectionPlan
from tokenbox_core.compiler.config import CompilerConfig
from tokenbox_core.compiler.inputs import Evidence, Memory
from tokenbox_core.compiler.render import evidence_tag
from tokenbox_core.sections import Item
from tokenbox_core.tokens import TokenCounter, content_text

if TYPE_CHECKING:
    from tokenbox_core.compiler.assemble import Assembled

__all__ = [
    "Deduplication",
    "Reference",
    "compress_references",
    "dangling_references",
    "find_duplicates",
    "jaccard",
    "normalise",
    "pointer_text",
    "restore_references",
    "shingles",
]

_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation if c != "%"})
_WORD_IDS: dict[str, int] = {}
_SHINGLES: OrderedDict[tuple[str, int], tuple[tuple[int, int], list[int], tuple[int, ...]]] = OrderedDict()
_SHINGLE_CACHE_BYTES = 2 * 1024 * 1024
_SHINGLE_BYTES = 0
_WORD_MEMO = 500_000
_SKETCH = 16
_HASH_BITS = sys.hash_info.width
_HASH_LOW = -(1 << (_HASH_BITS - 1))
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


def normalise(text: str) -> list[str]:
    """Lower-cased words, punctuation (except ``%``) and spacing ignored."""
    return text.lower().translate(_PUNCTUATION).split()


def _word_ids(words: list[str]) -> list[int]:
    missing = set(words).difference(_WORD_IDS)
    if missing:
        if len(_WORD_IDS) + len(missing) > _WORD_MEMO:  # a memo, not a store: bounded whatever the traffic
            _WORD_IDS.clear()
            missing = set(words)
        for word in missing:
            _WORD_IDS[word] = zlib.crc32(word.encode("utf-8", "surrogatepass"))
    return list(map(_WORD_IDS.__getitem__, words))


def shingles(text: str, size: int) -> frozenset[tuple[int, ...]]:
    """The ``size``-word shingles of the normalised text (the whole text when shorter), words as stable ints."""
    return _tuple_set(_shingled(text, size)[2], size)


def _tuple_set(ids: Sequence[int], size: int) -> frozenset[tuple[int, ...]]:
    if len(ids) <= size:
        return frozenset([tuple(ids)]) if ids else frozenset()
    return frozenset(zip(*(ids[i:] for i in range(size)), strict=False))


def _shingled(text: str, size: int) -> tuple[tuple[int, int], list[int], tuple[int, ...]]:
    """A key of the shingle set (its size and the hash of its shingles' hash set), its bottom-k sketch (the
    ``_SKETCH`` smallest hashes; integer tuples hash the same in every process) and the word ids.  The tuple
    sets themselves are built only for candidate pairs (:func:`_tuple_set`); no set is kept, so the memo
    holds only integers (cheap for the garbage collector too)."""
    key = (text, size)
    found = _SHINGLES.get(key)
    if found is not None:
        _SHINGLES.move_to_end(key)
        return found
    ids = tuple(_word_ids(normalise(text)))
    if len(ids) <= size:
        hashes = frozenset([hash(ids)]) if ids else frozenset()
    else:
        hashes = frozenset(map(hash, zip(*(ids[i:] for i in range(size)), strict=False)))
    entry = ((len(hashes), hash(hashes)), _bottom_k(hashes), ids)
    # Why a cache: a conversation's next turn re-compiles mostly the same passages, memories and turns, and
    # shingling is the costliest step of reference compression.  Bounded by the bytes of the texts it keys
    # (an entry takes about 10x its text).
    global _SHINGLE_BYTES
    _SHINGLES[key] = entry
    _SHINGLE_BYTES += len(text)
    while _SHINGLE_BYTES > _SHINGLE_CACHE_BYTES and _SHINGLES:
        (old, _), _ = _SHINGLES.popitem(last=False)
        _SHINGLE_BYTES -= len(old)
    return entry


def _bottom_k(hashes: frozenset[int]) -> list[int]:
    """The ``_SKETCH`` smallest hashes, in order.  Hashes spread evenly over their range, so about
    ``4·k`` of them fall below ``4·k/n`` of it: those are sorted instead of all ``n`` (the full sort
    when fewer than ``k`` do, so the result is always exact)."""
    n = len(hashes)
    if n <= 4 * _SKETCH:
        return sorted(hashes)[:_SKETCH]
    cutoff = _HASH_LOW + (4 * _SKETCH << _HASH_BITS) // n
    below = sorted(filter(cutoff.__gt__, hashes))
    return below[:_SKETCH] if len(below) >= _SKETCH else sorted(hashes)[:_SKETCH]


def clear_caches() -> None:
    """Forget memoised shingles and word ids (benchmarks measuring a cold compile call this)."""
    global _SHINGLE_BYTES
    _SHINGLES.clear()
    _WORD_IDS.clear()
    _SHINGLE_BYTES = 0


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (0.0 when both are empty)."""
    if not a and not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


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


@dataclass(frozen=True)
class _Segment:
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
        for i_index, item in enumerate(plan.section.items):
            payload = plan.payload.get(item.id)
            if isinstance(payload, Evidence):
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


def find_duplicates(texts: Sequence[str], threshold: float, shingle_size: int) -> list[tuple[int, int, float]]:
    """Duplicate pairs ``(earlier, later, similarity)``: each later text paired with its most similar earlier one.

    Exact duplicates (equal normalised words) have similarity 1.0; near-duplicates need a shingle Jaccard
    >= ``threshold``.  Candidates share a bottom-k sketch value; each is verified exactly.
    """
    shingled = [_shingled(t, shingle_size) for t in texts]
    tuple_sets: dict[int, frozenset[tuple[int, ...]]] = {}

    def real(i: int) -> frozenset[tuple[int, ...]]:  # the exact shingle set, built for candidates only
        found = tuple_sets.get(i)
        if found is None:
            found = tuple_sets[i] = _tuple_set(shingled[i][2], shingle_size)
        return found

    # Equal shingle sets have equal keys; a key match is confirmed on the exact sets, and every Jaccard is
    # computed on the exact sets.
    exact: dict[tuple[int, int], list[int]] = {}  # key -> the first index of each distinct set with it
    index: dict[int, list[int]] = {}
    pairs: list[tuple[int, int, float]] = []
    for j, (key, sketch, ids) in enumerate(shingled):
        if not key[0]:
            continue
        firsts = exact.setdefault(key, [])
        first = next((k for k in firsts if ids == shingled[k][2] or real(k) == real(j)), None)
        if first is None:
            firsts.append(j)
        elif ids == shingled[first][2] and normalise(texts[j]) == normalise(texts[first]):
            pairs.append((first, j, 1.0))
            continue
        shared = Counter(i for value in sketch for i in index.get(value, ()))
        need = max(1, math.floor(len(sketch) * threshold / 3))  # near-duplicates share ~Jaccard x k values
        candidates = sorted(i for i, n in shared.items() if n >= need)
        best: tuple[float, int] | None = None
        for i in candidates:
            other, current = real(i), real(j)
            if min(len(other), len(current)) < threshold * max(len(other), len(current)):
                continue  # Jaccard <= |smaller| / |larger|: cannot reach the threshold
            sim = jaccard(other, current)
            if sim >= threshold and (best is None or sim > best[0]):
                best = (sim, i)
        if best is not None:
            pairs.append((best[1], j, best[0]))
        for value in sketch:
            index.setdefault(value, []).append(j)
    return pairs


def _clusters(segments: list[_Segment], config: CompilerConfig) -> list[tuple[int, int, float]]:
    pairs = find_duplicates([s.text for s in segments], config.dedupe_threshold, config.shingle_size)
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


def compress_references(plans: tuple[SectionPlan, ...], config: CompilerConfig, counter: TokenCounter) -> Deduplication:
    """Replace later duplicates with pointers to their canonical instance (see the module docstring)."""
    segments = _segments(plans)
    pairs = _clusters(segments, config)
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
