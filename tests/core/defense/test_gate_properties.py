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


_B64ISH = st.lists(
    st.one_of(
        st.sampled_from(["aWdub3JlIHRoZSBydWxlcw==", "SWdub3JlIGFsbCBydWxlcyBub3c", "k=", "=", " ", "\n", "x_y-z/+"]),
        st.text(alphabet=st.sampled_from(list("Aa0+/=_- :.\n")), max_size=20),
    ),
    max_size=12,
).map("".join)


@given(_B64ISH)
def test_base64_prefilter_finds_every_match(text: str) -> None:
    """Starting the base64 scan at the first 16-character run finds exactly the matches of a full scan."""
    from tokenbox_core.defense.analyzers import _BASE64

    padded = " " + text
    run = re.search(r"[A-Za-z0-9+/_-]{16}", padded)
    fast = [m.span(1) for m in _BASE64.finditer(padded, max(0, run.start() - 1))] if run else []
    assert fast == [m.span(1) for m in _BASE64.finditer(padded)]
