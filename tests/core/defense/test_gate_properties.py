"""Properties of the detector's fast paths: each gives exactly the answer of the slow path it replaces."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.defense.rules import CASED_RULES, RULES, WORDLIKE, word_runs

_LITERALS = sorted({k for r in RULES + CASED_RULES for g in r.gate for k in g})
_PIECES = st.one_of(
    st.sampled_from(_LITERALS),
    st.text(alphabet=st.sampled_from(list("abcdeimnorstu _-.,:\n<|>[]#'0123456789éü\u00df\u0131\u200b")), max_size=6),
)
_TEXT = st.lists(_PIECES, max_size=25).map("".join)


@given(_TEXT)
def test_word_runs_answer_like_the_text(text: str) -> None:
    """For every word-only gate literal, presence in the distinct word runs equals presence in the text."""
    runs = word_runs(set(re.findall(r"\w+", text)))
    for k in WORDLIKE:
        assert (k in runs) == (k in text), k


@given(_TEXT)
def test_gates_with_and_without_the_fast_path_agree(text: str) -> None:
    """``Rule.opens`` gives the same answer with the word-run fast path, the memo, and neither."""
    runs = word_runs(set(re.findall(r"\w+", text)))
    seen: dict[str, bool] = {}
    for rule in RULES:
        assert rule.opens(text, seen, runs) == rule.opens(text), rule.name
