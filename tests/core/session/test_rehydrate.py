"""Rehydration pointers (§6.7.2) and rehydrate / search_archive (§6.10.5)."""

from __future__ import annotations

import pytest

from tokenbox_core.errors import SessionError, UnknownTurnError
from tokenbox_core.session import SessionStore, format_turns, rehydrate, search_archive
from tokenbox_core.session._checkpoints import Checkpointer
from tokenbox_core.session._rehydrate import rehydration_pointer

_CALL = {"id": "c1", "type": "function", "function": {"name": "validate", "arguments": '{"file": "customers.csv"}'}}


def _session(store: SessionStore) -> None:
    store.extend(
        "s",
        [
            {"role": "user", "content": "Please validate the customer CSV file"},
            {"role": "assistant", "content": "", "tool_calls": [_CALL]},
            {"role": "tool", "content": "3 rows failed: missing postcode", "tool_call_id": "c1"},
            {"role": "assistant", "content": "Three rows lack a postcode."},
            {"role": "user", "content": "Now draft the quarterly report"},
        ],
    )  # fmt: skip


def test_pointer_lists_every_id_and_the_call() -> None:
    """The marker names every id, never abbreviated, and the exact rehydrate call."""
    ids = [f"t_{i}" for i in range(1, 41)]
    marker = rehydration_pointer(ids, "older turns beyond the budget")
    assert (
        marker.startswith("[OMITTED: 40 turns (t_1, t_2, ") and "t_39, t_40) — older turns beyond the budget." in marker
    )
    assert marker.endswith('Rehydrate via: rehydrate(["' + '","'.join(ids) + '"])]')
    assert rehydration_pointer(["t_7"]) == '[OMITTED: 1 turn (t_7). Rehydrate via: rehydrate(["t_7"])]'
    assert rehydration_pointer(["s1.t_1-t_10.ab", "t_11"]).startswith("[OMITTED: 1 summary and 1 turn (s1.")
    assert rehydration_pointer(["s1.a", "s2.b"]).startswith("[OMITTED: 2 summaries (")
    with pytest.raises(SessionError, match="at least one turn id"):
        rehydration_pointer([])


def test_rehydrate_by_ids_pins_for_the_next_compile_only(store: SessionStore) -> None:
    """rehydrate(ids) returns the turns in order and pins them once."""
    _session(store)
    turns = rehydrate(store, "s", ["t_3", "t_2"])
    assert [t.turn_id for t in turns] == ["t_2", "t_3"]
    assert store.take_rehydration("s") == ["t_2", "t_3"] and store.take_rehydration("s") == []
    assert format_turns(turns) == (
        't_2 assistant: validate({"file": "customers.csv"})\nt_3 tool: 3 rows failed: missing postcode'
    )
    rehydrate(store, "s", ["t_1"], pin=False)
    assert store.take_rehydration("s") == []


def test_rehydrate_by_query_matches_text(store: SessionStore) -> None:
    """A query finds the turns that mention its words, best match first (BM25; ties: the newer turn), and pins
    them."""
    _session(store)
    found = search_archive(store, "s", "postcode rows", limit=3)
    assert [t.turn_id for t in found] == ["t_4", "t_3"]
    assert [t.turn_id for t in rehydrate(store, "s", "customers.csv validate")] == ["t_1", "t_2"]
    assert store.take_rehydration("s") == ["t_1", "t_2"]
    assert search_archive(store, "s", "kangaroo") == []


def test_embedding_plugin_ranks_matches(store: SessionStore) -> None:
    """With embed=, the BM25 ranking and the embeddings' ranking are fused by reciprocal rank."""
    _session(store)

    def embed(text: str) -> list[float]:
        return [1.0, 0.0] if "lack" in text else [0.5, 0.5]

    found = search_archive(store, "s", "postcode lack", embed=embed)
    assert [t.turn_id for t in found][:2] == ["t_4", "t_3"]


def test_summary_ids_expand_to_their_turns(store: SessionStore) -> None:
    """A summary id in rehydrate() stands for every turn the summary covers."""
    store.extend("s", [{"role": "user", "content": f"m{i}"} for i in range(30)])
    summary = Checkpointer(store, "s", counter="whitespace", window=10).update().summaries[0]
    turns = rehydrate(store, "s", [summary.summary_id])
    assert [t.turn_id for t in turns] == [f"t_{i}" for i in range(1, 11)]


def test_bad_requests_are_refused(store: SessionStore) -> None:
    """Unknown ids are named; empty lists, empty queries and bad limits are errors."""
    _session(store)
    with pytest.raises(UnknownTurnError, match="t_77"):
        rehydrate(store, "s", ["t_1", "t_77"])
    with pytest.raises(SessionError, match="empty list"):
        rehydrate(store, "s", [])
    with pytest.raises(SessionError, match="no words"):
        rehydrate(store, "s", "  ?! ")
    with pytest.raises(SessionError, match="limit must be >= 1"):
        search_archive(store, "s", "x", limit=0)
