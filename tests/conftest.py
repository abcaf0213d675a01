"""Shared test configuration: hypothesis profiles and offline guarantees."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# Tests never touch the network: tiktoken encodings come from local copies.
os.environ.setdefault("TOKENBOX_OFFLINE", "1")

# The same examples on every run and machine: derandomized, and no example database replaying
# failures found earlier on this machine.  HYPOTHESIS_PROFILE=explore searches more widely.
settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
)
settings.register_profile("explore", max_examples=2_000, deadline=None, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# PostgreSQL: the store's tests run against a real server when TOKENBOX_TEST_POSTGRES_DSN names one (.ci/run starts
# one with tools/postgres_for_tests.sh); without it they skip, saying how to run them.
POSTGRES_SKIP = (
    "PostgreSQL tests need a server: run them with `tools/postgres_for_tests.sh .venv/bin/python -m pytest -q "
    "tests/core/session` (a throw-away local cluster) or set TOKENBOX_TEST_POSTGRES_DSN=postgresql://user@host/db "
    "(a database where the tests may create and drop schemas)"
)


@pytest.fixture
def postgres_dsn() -> Iterator[str]:
    """A connection string whose search_path is a fresh schema, dropped afterwards (skips without a server)."""
    dsn = os.environ.get("TOKENBOX_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip(POSTGRES_SKIP)
    import psycopg

    schema = f"tb_test_{uuid.uuid4().hex[:12]}"  # isolation between tests and runs, never part of an output
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{dsn}{'&' if '?' in dsn else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
