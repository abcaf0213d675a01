"""Full-text recall in PostgreSQL: the relevance rules of :class:`~tokenbox_core.session._recall.RecallIndex`
served by the archive's ``tsvector`` column and its GIN index.

The same rules as the SQLite/FTS5 path:

- the query is its distinct content words (stopwords left out; else its words), at most 64, OR-ed; each word
  is a phrase (``phraseto_tsquery``), so ``data.csv`` or ``v1.2`` match as a whole;
- a term's weight is BM25's inverse document frequency, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, over the
  session's own messages (the first ``upto`` of them for a prefix), so one session never ranks by another's;
- a candidate scores its own score plus half the best own score among the matches within two turns of it (by
  ``seq``; ``_NEAR`` and ``_NEAR_WEIGHT``, written once in ``_recall``), those outside ``allowed`` too;
- ties go to the newer message; ``allowed`` restricts the candidates before the best ``depth`` (200) are taken;
- the relevance gate is RecallIndex's: a hit must hold ``min_terms`` *distinctive* terms (in at most
  ``max_term_share`` of the messages, or in at most 10) — held by it or by a message within two turns — and score
  ``min_relevance`` times the best hit.  Both neighbour rules are one window over the candidates and the turns
  within two of them (at most five rows a candidate), in the ranking query: still two round trips a search.

Where they must differ (documented, pinned by the shared tests on the fixtures where both agree):

- a message's score is ``Σ idf(t) · ts_rank_cd(search, t, 1)``: PostgreSQL's cover-density rank of each term
  normalised by the log of the message's length, where FTS5's ``bm25()`` saturates term frequency (k1 = 1.2)
  and normalises by length relative to the average (b = 0.75).  Rankings agree when matches differ by their
  terms' rarity (the usual recall case: the question's rare words); they can differ in order among messages
  holding the same terms with different counts and lengths, and ``min_relevance`` compares different scales;
- stemming is Snowball English (``english``) where FTS5 uses Porter over ``unicode61``; the document side
  also drops PostgreSQL's English stopwords (query words are content words already);
- only a message's first 100,000 characters are indexed (``tsvector`` is limited to 1 MB);
- matches are counted per term up to :data:`DF_CAP` (500): a term found in more messages is weighted as if
  found in 501 (its weight is already among the query's lowest), is never *distinctive* (FTS5's gate calls a
  term distinctive up to ``max_term_share``, 5 % of the session by default: the same up to 10,000 messages,
  stricter beyond), and the messages matching *only* such common terms are taken from the newest 500 of them.
  Counting a term's matches reads each matching row (PostgreSQL's GIN index does not count), so this bound is
  what keeps a query's work flat as a session grows to a million messages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from tokenbox_core.session._lexical import content_words, words
from tokenbox_core.session._postgres_schema import TEXT_CONFIG
from tokenbox_core.session._recall import _MIN_COMMON, _NEAR, _NEAR_WEIGHT, Hit

__all__ = ["DF_CAP", "search_turns"]

DF_CAP = 500
"""Matches counted per term at most, and the newest matches of common-only terms taken as candidates."""
_DEPTH = 200

Read = Callable[[str, Sequence[Any] | Mapping[str, Any]], list[Any]]

_TERMS_SQL = f"""
SELECT u.ord, q.tq::text, CASE WHEN numnode(q.tq) = 0 THEN 0 ELSE (
    SELECT count(*) FROM (
        SELECT 1 FROM tokenbox_turns d
        WHERE d.tenant = %(tenant)s AND d.session_id = %(session)s AND d.seq <= %(size)s AND d.search @@ q.tq
        LIMIT %(cap)s
    ) AS m) END
FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS u(term, ord)
CROSS JOIN LATERAL (SELECT phraseto_tsquery('{TEXT_CONFIG}', u.term) AS tq) AS q
ORDER BY u.ord
"""

_CANDIDATES = """
SELECT d.seq FROM tokenbox_turns d
WHERE d.tenant = %(tenant)s AND d.session_id = %(session)s AND d.seq <= %(size)s AND d.search @@ {query}::tsquery
{allowed}{tail}
"""

_RANK_SQL = f"""
WITH q AS (
    SELECT u.tq::tsquery AS tq, u.w, u.d, u.ord
    FROM unnest(%(tqs)s::text[], %(ws)s::float8[], %(ds)s::bool[]) WITH ORDINALITY AS u(tq, w, d, ord)
), cand AS ({{candidates}}), near AS (
    SELECT DISTINCT cand.seq + o.k AS seq FROM cand CROSS JOIN generate_series(-{_NEAR}, {_NEAR}) AS o(k)
), own AS (
    SELECT d.seq, d.turn_id, sum(q.w * ts_rank_cd(d.search, q.tq, 1)) AS score,
           coalesce(bit_or(CASE WHEN q.d THEN 1::bigint << (q.ord::int - 1) END), 0) AS held
    FROM near
    JOIN tokenbox_turns d ON d.tenant = %(tenant)s AND d.session_id = %(session)s AND d.seq = near.seq
        AND d.seq <= %(size)s
    JOIN q ON d.search @@ q.tq
    GROUP BY d.seq, d.turn_id
), ranked AS (
    SELECT seq, turn_id, score + {_NEAR_WEIGHT} * coalesce(max(score) OVER others, 0) AS score,
           bit_or(held) OVER around AS held
    FROM own
    WINDOW around AS (ORDER BY seq RANGE BETWEEN {_NEAR} PRECEDING AND {_NEAR} FOLLOWING),
        others AS (ORDER BY seq RANGE BETWEEN {_NEAR} PRECEDING AND {_NEAR} FOLLOWING EXCLUDE CURRENT ROW)
)
SELECT r.turn_id, round(r.score::numeric, 9)::float8 AS score, length(replace(r.held::bit(64)::text, '0', '')) AS held
FROM ranked r JOIN cand ON cand.seq = r.seq
ORDER BY score DESC, r.seq DESC
LIMIT %(depth)s
"""
"""A candidate's score is its own plus ``_NEAR_WEIGHT`` times the best own score among the matches within
``_NEAR`` turns of it (matched or not by ``allowed``), and it holds the distinctive terms held by it or by one of
those (a bit per query term): RecallIndex's neighbour rule, over the candidates and their neighbours only."""


def query_terms(query: str) -> list[str]:
    """The query's distinct content words (else its words), at most 64 — RecallIndex's terms."""
    return list(dict.fromkeys(content_words(query) or words(query)))[:64]


def search_turns(
    read: Read,
    tenant: str,
    session_id: str,
    query: str,
    *,
    size: int,
    limit: int,
    allowed: Collection[str] | None,
    min_relevance: float,
    min_terms: int,
    max_term_share: float,
) -> list[Hit]:
    """The best ``limit`` of the session's first ``size`` turns for ``query`` (see the module docstring)."""
    terms = query_terms(query)
    if not terms or size <= 0 or (allowed is not None and not allowed):
        return []
    most = min(DF_CAP, max(_MIN_COMMON, int(max_term_share * size)))
    base = {"tenant": tenant, "session": session_id, "size": size}
    found = read(_TERMS_SQL, {**base, "cap": DF_CAP + 1, "terms": terms})
    usable = [(str(tq), int(n)) for _, tq, n in found if n > 0]
    if not usable:
        return []
    tqs = [tq for tq, _ in usable]
    weights = [math.log(1 + (size - n + 0.5) / (n + 0.5)) for _, n in usable]
    distinctive = [n <= most for _, n in usable]
    rare = [tq for tq, n in usable if n <= DF_CAP]
    common = [tq for tq, n in usable if n > DF_CAP]
    params: dict[str, Any] = {**base, "tqs": tqs, "ws": weights, "ds": distinctive, "depth": _DEPTH}
    allowed_sql = ""
    if allowed is not None:
        params["allowed"] = sorted(allowed)
        allowed_sql = "AND d.turn_id = ANY(%(allowed)s)"
    branches = []
    if rare:
        params["rare"] = " | ".join(f"({tq})" for tq in rare)
        branches.append(_CANDIDATES.format(query="%(rare)s", allowed=allowed_sql, tail=""))
    if common:
        params["common"] = " | ".join(f"({tq})" for tq in common)
        params["cap"] = DF_CAP
        tail = "ORDER BY d.seq DESC LIMIT %(cap)s"
        branches.append(_CANDIDATES.format(query="%(common)s", allowed=allowed_sql, tail=tail))
    candidates = " UNION ".join(f"({b})" for b in branches)
    rows = read(_RANK_SQL.format(candidates=candidates), params)
    hits = [Hit(str(turn_id), float(score)) for turn_id, score, held in rows if not min_terms or held >= min_terms]
    if hits and min_relevance > 0:
        floor = min_relevance * hits[0].score
        hits = [h for h in hits if h.score >= floor]
    return hits[:limit]
