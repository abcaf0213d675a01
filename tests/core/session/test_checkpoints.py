"""Summarization checkpoints (Algorithm 6.7) and hierarchical summaries (chapter §6.10.3–6.10.4)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tokenbox_core.errors import SessionError
from tokenbox_core.session import ExtractiveSummarizer, MemorySessionStore, SessionStore, SQLiteSessionStore
from tokenbox_core.session._checkpoints import Checkpointer


def _fill(store: SessionStore, n: int, start: int = 0) -> None:
    store.extend(
        "s",
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} on topic{i % 7} value {i * 3} words"}
            for i in range(start, start + n)
        ],
    )


class CountingSummarizer:
    """An extractive summarizer that counts its calls."""

    name = "extractive/1"

    def __init__(self) -> None:
        self.calls = 0
        self.inner = ExtractiveSummarizer()

    def summarize(self, messages, target_tokens, *, counter):  # type: ignore[no-untyped-def]
        self.calls += 1
        return self.inner.summarize(messages, target_tokens, counter=counter)


def test_blocks_beyond_the_window_are_summarised_with_provenance(store: SessionStore) -> None:
    """45 turns, window 10, interval 10: three complete blocks summarised, 15 turns stay in the window."""
    _fill(store, 45)
    cp = Checkpointer(store, "s", counter="whitespace", window=10, interval=10, fanout=8).update()
    assert [s.source_turn_ids for s in cp.summaries] == [tuple(f"t_{i}" for i in range(b, b + 10)) for b in (1, 11, 21)]
    assert [t.turn_id for t in cp.window] == [f"t_{i}" for i in range(31, 46)]
    assert cp.archived_turn_ids == tuple(f"t_{i}" for i in range(1, 31))
    first = cp.summaries[0]
    assert first.level == 1 and first.source_ids == first.source_turn_ids
    assert 0 < first.compression_ratio < 1 and first.summary_version == 1 and first.summarizer == "extractive/1"
    assert first.summary_id.startswith("s1.t_1-t_10.")
    assert [s.summary_id for s in store.summaries("s")] == [s.summary_id for s in cp.summaries]
    assert set(cp.created) == {s.summary_id for s in cp.summaries}
    counts = store.token_counts("s", "whitespace")  # token counts per counter are recorded with the summaries
    assert set(counts) == {f"t_{i}" for i in range(1, 46)} and all(n > 0 for n in counts.values())


def test_summaries_are_reused_across_updates_and_processes(tmp_path: Path) -> None:
    """A second update and a new Checkpointer on the same file generate nothing; text and fingerprint match."""
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as store:
        _fill(store, 60)
        summarizer = CountingSummarizer()
        first = Checkpointer(store, "s", summarizer=summarizer, counter="whitespace", window=10, fanout=8).update()
        calls = summarizer.calls
        again = Checkpointer(store, "s", summarizer=summarizer, counter="whitespace", window=10, fanout=8).update()
    assert calls == 5 and summarizer.calls == calls and again.created == ()
    assert [s.fingerprint for s in again.summaries] == [s.fingerprint for s in first.summaries]
    assert [s.text for s in again.summaries] == [s.text for s in first.summaries]


def test_fingerprint_excludes_creation_time() -> None:
    """Two stores summarising the same turns give the same fingerprints although created at different times."""
    prints = []
    for _ in range(2):
        store = MemorySessionStore()
        _fill(store, 30)
        prints.append(
            [s.fingerprint for s in Checkpointer(store, "s", counter="whitespace", window=10).update().summaries]
        )
    assert prints[0] == prints[1]


def test_a_later_correction_invalidates_its_block() -> None:
    """A correction of a decision in block 1 marks that summary invalidated and re-summarises the block
    without the superseded decision and with the correction; other blocks are reused."""
    store = MemorySessionStore()
    _fill(store, 4)
    store.append("s", {"role": "user", "content": "Let's use PostgreSQL for the orders database."})  # t_5
    _fill(store, 30, start=5)
    cpr = Checkpointer(store, "s", counter="whitespace", window=10, interval=10, fanout=8)
    before = cpr.update()
    assert "PostgreSQL" in before.summaries[0].text
    store.append("s", {"role": "user", "content": "No, actually use SQLite for the orders database instead."})
    after = cpr.update()
    old, new = before.summaries[0], after.summaries[0]
    assert new.summary_id != old.summary_id and after.created == (new.summary_id,)
    assert "PostgreSQL" not in new.text and "SQLite" in new.text
    assert new.source_turn_ids == old.source_turn_ids and "t_36" in new.source_ids
    invalid = [s for s in store.summaries("s", include_invalidated=True) if s.invalidated_by]
    assert [(s.summary_id, s.invalidated_by) for s in invalid] == [(old.summary_id, "t_36")]
    assert after.summaries[1:] == before.summaries[1:]


def test_explicit_corrects_option_invalidates() -> None:
    """``{"tokenbox": {"corrects": ["t_3"]}}`` invalidates t_3's block without any wording."""
    store = MemorySessionStore()
    _fill(store, 30)
    cpr = Checkpointer(store, "s", counter="whitespace", window=10)
    before = cpr.update()
    store.append("s", {"role": "user", "content": "use the other value", "tokenbox": {"corrects": ["t_3"]}})
    after = cpr.update()
    assert after.summaries[0] != before.summaries[0] and "t_3 " not in after.summaries[0].text


def test_two_thousand_turns_grow_the_summary_cover_logarithmically() -> None:
    """§6.10.4: the cover of a 2,000-turn session holds fewer than fanout summaries per level, so its size
    grows with log(n): 10× the turns costs at most 2× the summary tokens of 200 turns (linear growth: 10×)."""
    store = MemorySessionStore()
    cpr = Checkpointer(store, "s", counter="whitespace", window=20, interval=10, fanout=4, min_summary_tokens=48)
    sizes = {}
    for n in (200, 2000):
        _fill(store, n - store.count("s"), start=store.count("s"))
        cp = cpr.update()
        blocks = (n - 20) // 10
        levels = math.ceil(math.log(blocks, 4)) + 1
        assert len(cp.summaries) <= (4 - 1) * levels
        covered = [t for s in cp.summaries for t in s.source_turn_ids]
        assert covered == list(cp.archived_turn_ids)  # the cover spans the archive exactly, in order
        sizes[n] = cp.summary_tokens
        single_level = sum(s.tokens for s in cp.pyramid if s.level == 1)
        assert cp.summary_tokens < single_level / 4
    assert max(s.level for s in cp.summaries) >= 3
    assert sizes[2000] <= 2 * sizes[200]


def test_bad_options_are_refused() -> None:
    """Misspelt options and out-of-range values fail at construction."""
    store = MemorySessionStore()
    with pytest.raises(SessionError, match="unknown checkpoint option.*windw"):
        Checkpointer(store, "s", windw=3)
    with pytest.raises(SessionError, match="fanout must be >= 2"):
        Checkpointer(store, "s", fanout=1)
    with pytest.raises(SessionError, match="compression_ratio must be in"):
        Checkpointer(store, "s", compression_ratio=0)
    with pytest.raises(SessionError, match="interval must be >= 1"):
        Checkpointer(store, "s", interval=0)
