"""Recall's ranking: SQLite FTS5 ``bm25()`` over a session's archived messages, optionally fused with embeddings.

A :class:`RecallIndex` holds one session's messages in an in-memory SQLite
FTS5 table (the standard library's ``sqlite3``; Porter stemming over the
``unicode61`` tokenizer).  A query is its content words (stopwords left out)
joined by ``OR``, each quoted, so identifiers such as ``data.csv`` match as a
phrase; matches are ranked by FTS5's ``bm25()`` plus half the best score among
the matches within two messages (a question's words are often split between a
turn and its neighbour; ``_NEAR``), ties by the newer message first.
With an :class:`Embedder` (``text -> vector``), the
cosine ranking of the same candidates and the BM25 ranking are fused by
reciprocal-rank fusion, ``score = Σ 1 / (k + rank)``, ties again by the newer
message.  Statistics (document frequencies, lengths) are the session's own, so
one session's recall never depends on another's.

The index is owned by a :class:`~tokenbox_core.ContextSession` (or built for
one :func:`~tokenbox_core.session.search_archive` call) and lives as long as
it; it holds the session's message texts once (its size is the session's
text), and message vectors when an embedder is set, computed as messages are
added (never by a search) and keyed by their text (the same text is embedded once).
A compile asks one index about one query several times (the recall room is
planned, then filled): the index keeps what it found for its latest query — the
whole BM25 ranking, the distinctive-term counts, the cosine ranking — until the
next query or the next message added, so each is computed once per compile.  The
query's own vector is kept by its text among the last few queries (``queries``,
shared by a session's indexes): a query is embedded once, however many indexes
rank it.

>>> index = RecallIndex()
>>> index.add("t_1", "The staging database listens on port 5433")
>>> index.add("t_2", "Lunch is at noon")
>>> [hit.id for hit in index.search("which port does the database use?")]
['t_1']
"""

from __future__ import annotations

import math
import operator
import sqlite3
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from tokenbox_core.errors import SessionError
from tokenbox_core.session._lexical import content_words, words

_T = TypeVar("_T")

__all__ = ["Embedder", "Hit", "RecallIndex", "SearchableStore", "StoreIndex", "fts_query"]

_MIN_COMMON = 10  # a term in at most this many messages is distinctive, whatever the session's length
_NEAR = 2
_NEAR_WEIGHT = 0.5
"""A hit (a message holding a query word itself) is ranked on its own BM25 score plus ``_NEAR_WEIGHT`` times the
best score among the matching messages within ``_NEAR`` of it, and it passes the term gate when it or one of those
holds a distinctive term: a question's words are often split between the turn that holds the answer and the turn
that asked or followed it.  Measured on LoCoMo 0–4 (``benchmarks/bench_recall.py``), evidence recall at 2k / 8k:
68.2 / 83.8 % -> 72.9 / 85.6 %.  The best neighbour, not the sum of them: a turn amid many similar ones (planted
facts in a row) must not outrank the one that holds every query word.  (An FTS5 ``near`` column of the neighbours'
text at weight 0.35 measured 75.4 / 85.9 % but ranked such a crowded turn first.)"""
_QUERIES = 8  # query vectors kept (a compile's one query, embedded once; a few floats per dimension each)


@runtime_checkable
class Embedder(Protocol):
    """An embedding model: one text in, one vector out (the same length for every text).  An embedder may also
    have ``embed_many(texts) -> vectors``, which the index then uses for what it has not embedded yet."""

    def __call__(self, text: str) -> Sequence[float]: ...


@dataclass(frozen=True)
class Hit:
    """A ranked archived message: its id and the score it was ranked by (higher is better)."""

    id: str
    score: float


def fts_query(text: str) -> str | None:
    """The FTS5 query for ``text``: its distinct content words (else its words), quoted, joined by OR."""
    terms = list(dict.fromkeys(content_words(text) or words(text)))
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms[:64])


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise SessionError(f"embedding lengths differ: {len(a)} and {len(b)}; use one embedding model for a session")
    dot = sum(map(operator.mul, a, b))
    na, nb = math.hypot(*a), math.hypot(*b)
    return dot / (na * nb) if na and nb else 0.0


class RecallIndex:
    """One session's messages, searchable by BM25 (and embeddings); see the module docstring.

    Args:
        embedder: optional ``text -> vector``; vectors are computed as messages are added, kept by content.
        rrf_k: the reciprocal-rank-fusion constant.
        vectors: where to keep the vectors (several indexes of one session share them).
        queries: where to keep the vectors of the latest queries (shared likewise; at most 8 are kept).
    """

    def __init__(
        self,
        embedder: Callable[[str], Sequence[float]] | None = None,
        *,
        rrf_k: int = 60,
        vectors: dict[str, tuple[float, ...]] | None = None,
        queries: dict[str, tuple[float, ...]] | None = None,
    ) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize = 'porter unicode61')")
        self._lock = threading.Lock()
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._row: dict[str, int] = {}
        self._vectors: dict[str, tuple[float, ...]] = {} if vectors is None else vectors  # may be shared
        self._queries: dict[str, tuple[float, ...]] = {} if queries is None else queries  # may be shared
        # the latest query's findings: (what was asked, its answer); cleared when a message is added
        self._found: dict[tuple[object, ...], object] = {}
        self.embedder = embedder
        self.rrf_k = rrf_k

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> tuple[str, ...]:
        """The indexed ids, in the order added."""
        return tuple(self._ids)

    def add(self, doc_id: str, text: str) -> None:
        """Index one message's text under its archived id (an id already indexed is ignored)."""
        self.extend([(doc_id, text)])

    def extend(self, docs: Sequence[tuple[str, str]]) -> None:
        """Index several ``(id, text)`` pairs; with an embedder, embed the texts not embedded yet (one batch when
        the embedder has ``embed_many``), so no compile embeds an archived message."""
        with self._lock:
            new = []
            for doc_id, text in docs:
                if doc_id in self._row:
                    continue
                self._db.execute("INSERT INTO docs (rowid, body) VALUES (?, ?)", (len(self._ids) + 1, text))
                self._row[doc_id] = len(self._ids)
                self._ids.append(doc_id)
                self._texts.append(text)
                new.append(text)
            if new:
                self._found = {}
        if self.embedder is not None:
            self._embed([t for t in dict.fromkeys(new) if t not in self._vectors])

    def _embed(self, texts: list[str]) -> None:
        """Vectors for ``texts``, kept by content (the same text is embedded once, whatever its id)."""
        if not texts or self.embedder is None:
            return
        many = getattr(self.embedder, "embed_many", None)
        vectors = many(texts) if callable(many) else [self.embedder(t) for t in texts]
        for text, vector in zip(texts, vectors, strict=True):
            self._vectors[text] = tuple(float(x) for x in vector)

    def close(self) -> None:
        """Release the in-memory database."""
        self._db.close()

    def bm25(self, query: str, *, allowed: Collection[str] | None = None, depth: int = 200) -> list[Hit]:
        """Messages matching ``query`` by BM25, best first (ties: newer first); only ``allowed`` ids when given."""
        ranking = self._latest(("bm25", query), lambda: self._bm25_all(query))
        hits = []
        for hit in ranking:
            if allowed is None or hit.id in allowed:
                hits.append(hit)
                if len(hits) >= depth:
                    break
        return hits

    def _latest(self, key: tuple[object, ...], find: Callable[[], _T]) -> _T:
        """What ``find`` gives for ``key``, computed once while the query and the messages stay the same."""
        with self._lock:
            if key in self._found:
                return self._found[key]  # type: ignore[return-value]
            if any(k[1] != key[1] for k in self._found):  # a new query: forget the last one's
                self._found = {}
        value = find()
        with self._lock:
            self._found[key] = value
        return value

    def _bm25_all(self, query: str) -> list[Hit]:
        match = fts_query(query)
        if match is None:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid DESC",
                (match,),
            ).fetchall()
        own = {int(rowid) - 1: -float(score) for rowid, score in rows}
        near, score_of = [d for d in range(-_NEAR, _NEAR + 1) if d], own.get
        scored = [
            (score + _NEAR_WEIGHT * max([score_of(row + d, 0.0) for d in near]), row) for row, score in own.items()
        ]
        scored.sort(reverse=True)  # best first, ties: newer first
        ids = self._ids
        return [Hit(ids[row], score) for score, row in scored]

    def query_vector(self, query: str) -> tuple[float, ...]:
        """The embedding of ``query``, computed once among the latest queries (see the module docstring)."""
        assert self.embedder is not None
        with self._lock:
            found = self._queries.get(query)
        if found is None:
            found = tuple(float(x) for x in self.embedder(query))
            with self._lock:
                self._queries[query] = found
                while len(self._queries) > _QUERIES:
                    del self._queries[next(iter(self._queries))]  # the oldest query first
        return found

    def dense(self, query: str, *, allowed: Collection[str] | None = None, depth: int = 200) -> list[Hit]:
        """Messages by the cosine of their embedding with the query's, best first (ties: newer first)."""
        if self.embedder is None:
            return []
        ranking = self._latest(("dense", query), lambda: self._dense_all(query))
        return [h for h in ranking if allowed is None or h.id in allowed][:depth]

    def _dense_all(self, query: str) -> list[Hit]:
        q = self.query_vector(query)
        self._embed([t for t in dict.fromkeys(self._texts) if t not in self._vectors])
        scored = [(_cosine(self._vectors[text], q), row) for row, text in enumerate(self._texts)]
        scored.sort(reverse=True)  # best first, ties: newer first
        ids = self._ids
        return [Hit(ids[row], score) for score, row in scored]

    def distinctive_matches(self, query: str, *, max_share: float) -> dict[str, int]:
        """Indexed id → how many of the query's *distinctive* terms it holds: terms found in at most
        ``max_share`` of the indexed messages, or in at most 10 (a short session's own echoes of a fact — the
        question, its answer, a tool call repeating it — do not make its words common), so a word most of the
        conversation uses ("service", "error") never makes a message relevant on its own."""
        return self._latest(("terms", query, max_share), lambda: self._distinctive(query, max_share))

    def _distinctive(self, query: str, max_share: float) -> dict[str, int]:
        terms = list(dict.fromkeys(content_words(query) or words(query)))[:64]
        most = max(_MIN_COMMON, int(max_share * len(self._ids)))
        counts: dict[str, int] = {}
        with self._lock:
            for term in terms:
                match = '"' + term.replace('"', '""') + '"'
                rows = self._db.execute("SELECT rowid FROM docs WHERE docs MATCH ? LIMIT ?", (match, most + 1))
                found = [int(r[0]) for r in rows]
                if len(found) > most:
                    continue
                near = {
                    r for rowid in found for r in range(rowid - 1 - _NEAR, rowid + _NEAR) if 0 <= r < len(self._ids)
                }
                for row in sorted(near):  # held by the message or one of its neighbours (see _NEAR)
                    doc_id = self._ids[row]
                    counts[doc_id] = counts.get(doc_id, 0) + 1
        return counts

    def search(
        self,
        query: str,
        *,
        limit: int = 8,
        allowed: Collection[str] | None = None,
        min_relevance: float = 0.0,
        min_terms: int = 0,
        max_term_share: float = 1.0,
    ) -> list[Hit]:
        """The best ``limit`` messages for ``query``: BM25, or BM25 and embeddings fused by reciprocal rank.

        The relevance gate (recall's; off by default): a BM25 hit must hold at least ``min_terms`` distinctive
        query terms (:meth:`distinctive_matches` with ``max_term_share``), and every hit must score at least
        ``min_relevance`` times the best hit's score (BM25's, or the fused one's).  With an embedder the term
        gate applies to the BM25 ranking only: a message the embeddings rank high is fused without it.
        """
        if limit < 1:
            raise SessionError(f"limit must be >= 1, got {limit}")
        lexical = self.bm25(query, allowed=allowed)
        if min_terms and lexical:
            held = self.distinctive_matches(query, max_share=max_term_share)
            lexical = [h for h in lexical if held.get(h.id, 0) >= min_terms]
        if self.embedder is None:
            return _relevant(lexical, min_relevance)[:limit]
        dense = self.dense(query, allowed=allowed, depth=max(limit * 4, 20))
        fused: dict[str, float] = {}
        for ranking in (lexical, dense):
            for rank, hit in enumerate(ranking, start=1):
                fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (self.rrf_k + rank)
        order = sorted(fused.items(), key=lambda kv: (-kv[1], -self._row[kv[0]]))
        return _relevant([Hit(doc_id, score) for doc_id, score in order], min_relevance)[:limit]


@runtime_checkable
class SearchableStore(Protocol):
    """A store that ranks a session's turns itself (PostgreSQL's full-text index): :meth:`RecallIndex.search`'s
    arguments, plus the session and ``upto`` (rank the first ``upto`` turns, with their statistics only)."""

    def search(
        self,
        session_id: str,
        query: str,
        *,
        limit: int = 8,
        allowed: Collection[str] | None = None,
        min_relevance: float = 0.0,
        min_terms: int = 0,
        max_term_share: float = 1.0,
        upto: int | None = None,
    ) -> list[Hit]: ...


class StoreIndex:
    """The first ``upto`` turns of a session, ranked by its :class:`SearchableStore`: what recall calls on a
    :class:`RecallIndex` (``search``, ``len``, ``close``), served by the database instead of process memory."""

    def __init__(self, store: SearchableStore, session_id: str, upto: int) -> None:
        self.store = store
        self.session_id = session_id
        self.upto = upto

    def __len__(self) -> int:
        return self.upto

    def search(
        self,
        query: str,
        *,
        limit: int = 8,
        allowed: Collection[str] | None = None,
        min_relevance: float = 0.0,
        min_terms: int = 0,
        max_term_share: float = 1.0,
    ) -> list[Hit]:
        """:meth:`RecallIndex.search` over the store's index of these turns."""
        return self.store.search(
            self.session_id, query, limit=limit, allowed=allowed, min_relevance=min_relevance,
            min_terms=min_terms, max_term_share=max_term_share, upto=self.upto,
        )  # fmt: skip

    def close(self) -> None:
        """Nothing to release (the index is the database's)."""


def _relevant(hits: list[Hit], min_relevance: float) -> list[Hit]:
    """The hits scoring at least ``min_relevance`` times the best one (hits come best first)."""
    if not hits or min_relevance <= 0:
        return hits
    floor = min_relevance * hits[0].score
    return [h for h in hits if h.score >= floor]
