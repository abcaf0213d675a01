"""The SessionStore contract: one class, run on the memory, SQLite and PostgreSQL stores (issues 13 §1, 34)."""

from __future__ import annotations

import threading

import pytest

from tokenbox_core.errors import SessionError, TokenBoxError, UnknownTurnError
from tokenbox_core.session import SessionStore, search_archive
from tokenbox_core.session._model import Summary


def _msg(i: int) -> dict[str, object]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"}


def _summary(sid: str, level: int, ids: tuple[str, ...]) -> Summary:
    return Summary("s", sid, level, ids, ids, f"summary {sid}", 4, 40, "h" * 64, "extractive/1", 1, 12.5)


class TestSessionStoreContract:
    """Every store keeps this contract (the ``store`` fixture: memory, SQLite, PostgreSQL)."""

    def test_append_returns_stable_sequential_ids(self, store: SessionStore) -> None:
        """Turn ids are t_1, t_2, … per session; sessions are independent."""
        assert [store.append("a", _msg(i)) for i in range(3)] == ["t_1", "t_2", "t_3"]
        assert store.append("b", _msg(0)) == "t_1"
        assert store.extend("a", [_msg(3), _msg(4)]) == ["t_4", "t_5"]
        assert store.count("a") == 5 and store.sessions() == ["a", "b"]
        assert isinstance(store, SessionStore)

    def test_turns_round_trip_the_whole_message(self, store: SessionStore) -> None:
        """Role, content parts, tool calls, tool-call ids, names and options survive storage unchanged."""
        call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
        messages = [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "look"}], "name": "ann"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "found", "tool_call_id": "c1", "tokenbox": {"priority": 2}},
        ]
        store.extend("s", messages)
        turns = store.turns("s")
        assert [dict(t.message) for t in turns] == messages
        assert [t.seq for t in turns] == [1, 2, 3, 4]
        assert turns[2].text == 'lookup({"q": "x"})'
        assert turns[3].as_message()["id"] == "t_4"
        assert [t.turn_id for t in store.turns("s", start=1, stop=3)] == ["t_2", "t_3"]
        assert all(t.created_at > 0 for t in turns)

    def test_get_turns_in_asked_order_and_unknown_ids_named(self, store: SessionStore) -> None:
        """get_turns keeps the asked order; unknown ids raise an error naming every one of them."""
        store.extend("s", [_msg(i) for i in range(4)])
        assert [t.turn_id for t in store.get_turns("s", ["t_3", "t_1"])] == ["t_3", "t_1"]
        with pytest.raises(UnknownTurnError, match=r"t_9, t_10") as info:
            store.get_turns("s", ["t_1", "t_9", "t_10"])
        assert isinstance(info.value, TokenBoxError) and isinstance(info.value, KeyError)

    def test_bad_messages_are_refused(self, store: SessionStore) -> None:
        """A message without a known role or that is not a dict gets a clear error."""
        with pytest.raises(SessionError, match="role 'robot'"):
            store.append("s", {"role": "robot", "content": "x"})
        with pytest.raises(SessionError, match="message dict"):
            store.append("s", "hello")  # type: ignore[arg-type]
        assert store.count("s") == 0

    def test_token_counts_per_counter(self, store: SessionStore) -> None:
        """Token counts are recorded per counter name."""
        store.extend("s", [_msg(0), _msg(1)])
        store.record_tokens("s", "gpt-4o", {"t_1": 5, "t_2": 7})
        store.record_tokens("s", "whitespace", {"t_1": 2})
        assert store.token_counts("s", "gpt-4o") == {"t_1": 5, "t_2": 7}
        assert store.token_counts("s", "whitespace") == {"t_1": 2}

    def test_summaries_keep_provenance_and_invalidation(self, store: SessionStore) -> None:
        """Summaries come back with their provenance; invalidated ones are hidden unless asked for."""
        store.extend("s", [_msg(i) for i in range(6)])
        store.put_summary(_summary("s1_4", 1, ("t_4", "t_5", "t_6")))
        store.put_summary(_summary("s1_1", 1, ("t_1", "t_2", "t_3")))
        got = store.summaries("s")
        assert [s.summary_id for s in got] == ["s1_1", "s1_4"]
        assert got[0].compression_ratio == 0.1 and got[0].source_turn_ids == ("t_1", "t_2", "t_3")
        store.invalidate_summary("s", "s1_1", by="t_6")
        assert [s.summary_id for s in store.summaries("s")] == ["s1_4"]
        assert store.summaries("s", include_invalidated=True)[0].invalidated_by == "t_6"
        with pytest.raises(UnknownTurnError, match="no summary 'nope'"):
            store.invalidate_summary("s", "nope", by="t_1")

    def test_text_cache_first_write_wins(self, store: SessionStore) -> None:
        """Cached generated texts are never overwritten (replays stay byte-identical)."""
        assert store.cached_text("k") is None
        store.cache_text("k", "first")
        store.cache_text("k", "second")
        assert store.cached_text("k") == "first"

    def test_evictions_and_rehydration_requests(self, store: SessionStore) -> None:
        """Evictions are logged in order; a rehydration request is taken once, in turn order."""
        store.extend("s", [_msg(i) for i in range(12)])
        store.record_eviction("s", ["t_1", "t_2"], "window")
        store.record_eviction("s", ["t_3"], "hygiene")
        assert [(e.turn_ids, e.reason) for e in store.evictions("s")] == [
            (("t_1", "t_2"), "window"),
            (("t_3",), "hygiene"),
        ]
        store.request_rehydration("s", ["t_10", "t_2"])
        store.request_rehydration("s", ["t_2"])
        assert store.take_rehydration("s") == ["t_2", "t_10"]
        assert store.take_rehydration("s") == []
        with pytest.raises(UnknownTurnError):
            store.request_rehydration("s", ["t_99"])

    def test_replace_rewrites_a_session_atomically(self, store: SessionStore) -> None:
        """replace() clears the session and stores the new messages with ids from t_1; other sessions stay."""
        store.extend("a", [_msg(i) for i in range(5)])
        store.extend("b", [_msg(0)])
        store.record_eviction("a", ["t_1"], "window")
        assert store.replace("a", [_msg(7), _msg(8)]) == ["t_1", "t_2"]
        assert [t.message["content"] for t in store.turns("a")] == ["message 7", "message 8"]
        assert store.evictions("a") == [] and store.count("b") == 1
        assert store.replace("a", []) == [] and store.count("a") == 0

    def test_clear_removes_one_session(self, store: SessionStore) -> None:
        """clear() empties one session and leaves the others."""
        store.extend("a", [_msg(0)])
        store.extend("b", [_msg(0)])
        store.clear("a")
        assert store.count("a") == 0 and store.count("b") == 1

    def test_threads_append_without_loss(self, store: SessionStore) -> None:
        """Eight threads appending to one store lose nothing and never reuse an id."""

        def work(k: int) -> None:
            for i in range(25):
                store.append("s", {"role": "user", "content": f"{k}:{i}"})

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        turns = store.turns("s")
        assert [t.seq for t in turns] == list(range(1, 201))
        assert sorted(t.message["content"] for t in turns) == sorted(f"{k}:{i}" for k in range(8) for i in range(25))

    def test_usage_observations_kept_once_and_sorted(self, store: SessionStore) -> None:
        """Usage observations (the calibrator's) are kept per session, once per (base, model, id), sorted."""
        row = {"base": "o200k_base", "model": "gpt-4o", "content": "c" * 16, "units": 10, "fixed": 3, "reported": 14}
        store.record_usage("s", [{**row, "id": "b"}, {**row, "id": "a"}, {**row, "id": "a", "reported": 99}])
        store.record_usage("other", [{**row, "id": "z"}])
        assert [(u["id"], u["reported"]) for u in store.usage("s")] == [("a", 14), ("b", 14)]
        assert store.usage("s")[0] == {**row, "id": "a"}
        store.clear("s")
        assert store.usage("s") == [] and len(store.usage("other")) == 1

    def test_one_session_never_reads_another(self, store: SessionStore) -> None:
        """Turns, token counts, summaries, evictions and rehydrations stay in their session."""
        store.extend("a", [_msg(0), _msg(1)])
        store.extend("b", [{"role": "user", "content": "secret of b"}])
        store.record_tokens("b", "c", {"t_1": 3})
        store.put_summary(_summary("s1_1", 1, ("t_1",)))  # session "s"
        store.record_eviction("b", ["t_1"], "window")
        store.request_rehydration("b", ["t_1"])
        assert [t.message["content"] for t in store.turns("a")] == ["message 0", "message 1"]
        assert store.token_counts("a", "c") == {} and store.summaries("a") == [] and store.evictions("a") == []
        assert store.take_rehydration("a") == [] and store.take_rehydration("b") == ["t_1"]
        with pytest.raises(UnknownTurnError, match="t_3"):
            store.get_turns("b", ["t_3"])

    def test_search_archive_ranks_the_same_on_every_store(self, store: SessionStore) -> None:
        """search_archive (the store's own full-text index where it has one) finds the turns holding the
        question's rare words, the rarer match first, and nothing for words no turn holds."""
        store.extend("s", [{"role": "user", "content": f"routine status update number {i}"} for i in range(30)])
        store.append("s", {"role": "user", "content": "The staging database listens on port 5433"})
        store.append("s", {"role": "assistant", "content": "Noted: the staging status is green"})
        store.extend("s", [{"role": "user", "content": f"routine status update number {i}"} for i in range(30, 40)])
        store.append("other", {"role": "user", "content": "the production database listens on port 6000"})
        found = search_archive(store, "s", "which port does the staging database listen on?", limit=3)
        assert [t.turn_id for t in found] == ["t_31", "t_32"]
        assert search_archive(store, "s", "kubernetes helm chart", limit=3) == []
