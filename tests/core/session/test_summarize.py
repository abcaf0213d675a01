"""The extractive summarizer of Algorithm 6.3 (chapter §6.7.1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.errors import SessionError
from tokenbox_core.session import ExtractiveSummarizer, Summarizer
from tokenbox_core.session._summarize import PREAMBLE
from tokenbox_core.tokens import get_counter

WS = get_counter("whitespace")


def _turns(*texts: str) -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t, "id": f"t_{i + 1}"} for i, t in enumerate(texts)
    ]


def test_decisions_and_corrections_are_preferred_and_order_is_chronological() -> None:
    """Decision and correction turns win over chatter; the selected lines come back in turn order."""
    turns = _turns(
        "hello how are you",
        "Let's use PostgreSQL for the orders service.",
        "fine thanks",
        "No, actually the limit should be 500 requests per minute.",
        "ok noted",
    )
    text = ExtractiveSummarizer().summarize(turns, 26, counter=WS)
    lines = text.splitlines()
    assert lines[0] == PREAMBLE
    assert lines[1:] == [
        "t_2 assistant: Let's use PostgreSQL for the orders service.",
        "t_4 assistant: No, actually the limit should be 500 requests per minute.",
    ]


def test_the_five_factors_are_reported() -> None:
    """score() reports density, relevance, recency, decision and correction per turn."""
    s = ExtractiveSummarizer(task="database migration")
    scores = s.score(_turns("the database migration failed", "we decided to retry", "no, that's wrong"))
    assert scores[0].relevance > 0 and scores[1].relevance == 0
    assert scores[1].decision and not scores[0].decision and scores[2].correction
    assert scores[2].recency == 1.0 and scores[0].recency == pytest.approx(pytest.approx(0.8187, abs=1e-3))
    assert all(0 <= x.density <= 1 for x in scores)


def test_embedding_plugin_drives_relevance() -> None:
    """With embed=, relevance is the cosine of the embeddings."""

    def embed(text: str) -> list[float]:
        return [1.0, 0.0] if "apples" in text else [0.0, 1.0]

    scores = ExtractiveSummarizer(task="apples", embed=embed).score(_turns("I like apples", "I like pears"))
    assert [s.relevance for s in scores] == [1.0, 0.0]


def test_a_turn_longer_than_the_target_is_cut_not_lost() -> None:
    """When no whole turn fits, the best one is truncated into the room left."""
    text = ExtractiveSummarizer().summarize(_turns("word " * 100), 20, counter=WS)
    assert text.startswith(PREAMBLE) and WS.count(text) <= 20 and "t_1 user: word" in text


def test_bad_configuration_and_targets_are_refused() -> None:
    """Negative weights, a wrong weight count, a negative decay and a target below the preamble are errors."""
    with pytest.raises(SessionError, match="five finite numbers"):
        ExtractiveSummarizer(weights=(1.0, 1.0, 1.0, 1.0))  # type: ignore[arg-type]
    with pytest.raises(SessionError, match="decay must be"):
        ExtractiveSummarizer(decay=-1)
    with pytest.raises(SessionError, match="below the preamble's 4 tokens"):
        ExtractiveSummarizer().summarize(_turns("x"), 2, counter=WS)
    assert isinstance(ExtractiveSummarizer(), Summarizer)


@given(st.lists(st.text(st.sampled_from("ab cd ef no actually decided 12 \n"), max_size=40), max_size=12),
       st.integers(4, 60))  # fmt: skip
def test_summary_never_exceeds_target_and_is_deterministic(texts: list[str], target: int) -> None:
    """The summary fits the target, keeps chronological order, and is identical on every call."""
    turns = _turns(*texts)
    s = ExtractiveSummarizer()
    text = s.summarize(turns, target, counter=WS)
    assert WS.count(text) <= target
    assert text == s.summarize(turns, target, counter=WS)
    ids = [int(line.split()[0][2:]) for line in text.splitlines()[1:]]
    assert ids == sorted(ids)
