"""The lexical signals' shortcuts: a text is searched only where the full pattern could match, same answers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.session import _lexical
from tokenbox_core.session._lexical import contains_correction, information_density

_PIECES = st.sampled_from(
    [
        "no,", "No ", "  no", "actually", "that's wrong", "thats incorrect", "that's not right", "correction",
        "I meant", "instead", "not what I", "WRONG", "mistake", "should be", "should have been", "change it to",
        "scratch that", "don't use", "dont use", "DON'T USE", "done", "use", "ſhould be", "data.csv", "v1.2",
        "camelCase", "Name", "x_y", "²", "word", " ", "\n", "ok", "nothing", "snow", "K",
    ]
)  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=12).map(" ".join) | st.text(max_size=40)


@given(_TEXTS)
def test_contains_correction_answers_as_the_full_pattern_does(text: str) -> None:
    """The keyword prefilter never changes the answer: it is the regular expression's on every text."""
    assert contains_correction(text) is (_lexical._CORRECTION.search(text) is not None)


@given(_TEXTS)
def test_information_density_counts_technical_words_as_the_pattern_does(text: str) -> None:
    """Skipping the search for lower-case alphabetic words gives the density the pattern gives on every word."""
    raw = _lexical._WORD.findall(text)
    if not raw:
        assert information_density(text) == 0.0
        return
    content = sum(1 for w in raw if w.lower() not in _lexical.STOPWORDS)
    technical = sum(1 for w in raw if _lexical._TECHNICAL.search(w))
    assert information_density(text) == (content + min(technical, content)) / (2 * len(raw))


def test_a_plain_text_is_no_correction_and_a_correction_is() -> None:
    """Small examples: chatter without a correction word is not one; "actually, use port 5433" and "No, ..." are."""
    assert not contains_correction("we talked about the weather and lunch")
    assert contains_correction("Actually, use port 5433")
    assert contains_correction("No, the other file")
    assert not contains_correction("snow fell; nothing else")
