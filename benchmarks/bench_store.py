"""Archive latency: append and recall at 10k and 1M archived messages, SQLite against PostgreSQL (issue 34).

The worst case for one agent: a single session holding every archived message (``--sessions K`` spreads them
over K sessions instead, a fleet's archive, and measures one of them).  Messages are real English
that does not repeat: each is two sentences of :mod:`_prose` (this checkout's docs, the specs, the Python manual,
the standard library's docstrings) drawn by a seeded generator, plus a distinct ticket number — word
frequencies of real text, no two messages equal.  Queries are six content words of an archived message from the
older half of the session (what a question about an evicted turn shares with it).

- **append**: ``store.append`` of one message (one committed transaction), wall-clock, 200 times;
- **recall**: the ranking a :class:`~tokenbox_core.ContextSession` runs per compile, with recall's default gate
  (limit 8, ``min_terms=1``, ``max_term_share=0.05``, ``min_relevance=0.25``), 50 queries: on SQLite, the
  session's in-process FTS5 index (warm; the one-off cost of building it when a session is opened — reading
  every turn and indexing it — is printed as ``index build``); on PostgreSQL, the database's ``tsvector``/GIN
  search (:meth:`PostgresSessionStore.search`), nothing held in the process.

Latency is wall-clock (``time.perf_counter``): a database round trip is not the process's CPU time.  Not a test:
run it on purpose, with a server (``tools/postgres_for_tests.sh`` starts a throw-away one)::

    tools/postgres_for_tests.sh .venv/bin/python benchmarks/bench_store.py --sizes 10000 1000000

or ``--dsn postgresql://user@host/db`` (default: ``TOKENBOX_TEST_POSTGRES_DSN``); it works in a schema of its own
(``bench_store``), dropped first.  SQLite runs with its default ``synchronous=NORMAL``; PostgreSQL with the
server's defaults (``fsync``, ``synchronous_commit=on``).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _prose import paragraphs
from _timing import MODEL_LATENCY

from tokenbox_core.session import PostgresSessionStore, SessionStore, SQLiteSessionStore
from tokenbox_core.session._lexical import content_words
from tokenbox_core.session._recall import RecallIndex

SESSION = "bench"
GATE: dict[str, Any] = {"limit": 8, "min_terms": 1, "max_term_share": 0.05, "min_relevance": 0.25}


def sentences() -> list[str]:
    """Distinct sentences of the benchmark prose (over 30 characters)."""
    found = dict.fromkeys(
        s.strip() for p in paragraphs(1_100_000) for s in re.split(r"(?<=[.!?])\s+", p) if len(s.strip()) > 30
    )
    return list(found)


def messages(count: int, pool: list[str], seed: int) -> Iterator[dict[str, str]]:
    """``count`` distinct messages: two sentences of ``pool`` each (seeded) and a ticket number."""
    rng = random.Random(seed)
    for i in range(count):
        a, b = pool[rng.randrange(len(pool))], pool[rng.randrange(len(pool))]
        role = "user" if i % 2 == 0 else "assistant"
        yield {"role": role, "content": f"{a[:220]} {b[:220]} (ticket {seed}-{i})"}


def ms(values: list[float]) -> str:
    """Median and p95 of seconds, in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered) * 1000:8.2f} ms   p95 {p95 * 1000:8.2f} ms"


def timed(call: Callable[[], Any], times: int) -> list[float]:
    out = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def load(store: SessionStore, count: int, pool: list[str], sessions: int) -> float:
    """Archive ``count`` messages, spread evenly over ``sessions`` sessions (the measured one first), in
    transactions of at most 5,000; seconds taken."""
    start = time.perf_counter()
    each = count // sessions
    generated = messages(count, pool, seed=1)
    for k in range(sessions):
        left = each
        while left:
            batch = [next(generated) for _ in range(min(left, 5_000))]
            store.extend(SESSION if k == 0 else f"{SESSION}-{k}", batch)
            left -= len(batch)
    return time.perf_counter() - start


def queries(store: SessionStore, count: int) -> list[str]:
    """Six content words of 50 archived messages of the session's older half."""
    rng = random.Random(7)
    ids = [f"t_{rng.randrange(1, count // 2 + 1)}" for _ in range(50)]
    return [" ".join(content_words(t.text)[:6]) for t in store.get_turns(SESSION, ids)]


def run(name: str, store: SessionStore, count: int, pool: list[str], sessions: int) -> None:
    took = load(store, count, pool, sessions)
    if isinstance(store, PostgresSessionStore):  # what autovacuum does soon after a bulk load, done now
        store._db.run(lambda conn: conn.execute("ANALYZE tokenbox_turns"))
    print(f"{name:10s} {count:>9,} messages archived in {took:7.1f} s ({sessions:,} sessions)", flush=True)
    asked = queries(store, count // sessions)
    extra = iter(messages(10_000, pool, seed=2))
    print(f"{name:10s} {count:>9,} append  {ms(timed(lambda: store.append(SESSION, next(extra)), 200))}", flush=True)
    if isinstance(store, PostgresSessionStore):
        hits = [len(store.search(SESSION, q, **GATE)) for q in asked]
        found = iter(asked)
        recall = timed(lambda: store.search(SESSION, next(found), **GATE), len(asked))
    else:
        start = time.perf_counter()
        index = RecallIndex()
        index.extend([(t.turn_id, t.text) for t in store.turns(SESSION)])
        print(f"{name:10s} {count:>9,} index build {time.perf_counter() - start:7.1f} s (once per opened session)")
        hits = [len(index.search(q, **GATE)) for q in asked]
        found = iter(asked)
        recall = timed(lambda: index.search(next(found), **GATE), len(asked))
        index.close()
    print(f"{name:10s} {count:>9,} recall  {ms(recall)}   ({statistics.mean(hits):.1f} hits a query)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--dsn", default=os.environ.get("TOKENBOX_TEST_POSTGRES_DSN"))
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--sessions", type=int, default=1, help="spread the messages over this many sessions")
    args = parser.parse_args()
    pool = sentences()
    print(f"{len(pool):,} distinct sentences; messages are two of them and a ticket number", flush=True)
    for count in args.sizes:
        if args.only != "postgres":
            with tempfile.TemporaryDirectory() as tmp, SQLiteSessionStore(Path(tmp) / "bench.db") as store:
                run("sqlite", store, count, pool, args.sessions)
        if args.only != "sqlite":
            if not args.dsn:
                raise SystemExit("no PostgreSQL: pass --dsn or set TOKENBOX_TEST_POSTGRES_DSN")
            import psycopg

            with psycopg.connect(args.dsn, autocommit=True) as conn:
                conn.execute("DROP SCHEMA IF EXISTS bench_store CASCADE")
                conn.execute("CREATE SCHEMA bench_store")
            dsn = f"{args.dsn}{'&' if '?' in args.dsn else '?'}options=-csearch_path%3Dbench_store"
            with PostgresSessionStore(dsn) as store:
                run("postgres", store, count, pool, args.sessions)
    print(MODEL_LATENCY)


if __name__ == "__main__":
    main()
