"""Positions no token can span (tokens/neutral.py): at every position ``neutral_join`` accepts, the ids and the
counts of the two sides add up to those of the whole — for o200k and cl100k, with tiktoken and the fast counter,
on generated adversarial text — and the C-level pattern names exactly the positions ``neutral_join`` names."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.tokens import TiktokenCounter
from tokenbox_core.tokens.fast import FastBpeCounter, fast_available
from tokenbox_core.tokens.neutral import BACKWARD, FORWARD, NEUTRAL_ENCODINGS, tiktoken_neutral_join

ENCODINGS = ["cl100k_base", "o200k_base"]
TIKTOKEN = {name: TiktokenCounter(name) for name in [*ENCODINGS, "o200k_harmony"]}
FAST = {name: FastBpeCounter(name) for name in ENCODINGS} if fast_available() else {}

# Letters of every case class (Lu, Ll, Lt, Lm, Lo), marks, digits of every class, punctuation, symbols, whitespace
# of every kind, apostrophes and contractions, CJK, emoji, control characters — and ASCII letters beside each.
_pieces = st.sampled_from(
    [
        "a", "Z", "word", "Word", "WORD", "wORD", "HelloWorld", "x", "q", "s", "t", "ll", "ve", "re", "d", "m",
        "'", "'s", "'S", "'ll", "'LL", "'ve", "'re", "'t", "'d", "'m", "'x", "n't", "’s", "`",
        " ", "  ", "   ", "\t", "\n", "\n\n", "\r", "\r\n", "\n ", " \n", "\n/", "\n//", "/", "//", "\v", "\f",
        "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u2029", "\u3000", "\u180e", "\u200b", "\ufeff",
        ".", ",", "...", "!?", "-", "_", "(", ")", "[", "]", "{", "}", '"', "<", ">", "@", "#", "$", "%", "&", "*",
        "+", "=", "|", "\\", "^", "~", ";", ":", "\x00", "\x7f",
        "1", "12", "123", "12345", "²", "Ⅻ", "٣", "½",
        "é", "É", "e\u0301", "\u0301", "\u0300\u0301", "a\u0308", "ß", "İ", "ǅ", "ʰ", "ª", "µ", "ﬁ",
        "日本語", "字", "中文", "한국어", "ひらがな", "カタカナ", "ー", "😀", "👍🏽", "👩‍👩‍👧", "🏳️‍🌈", "\U0010fffd",
        "def f(x):\n    return x ** 2  # ok\n", '{"a": [1, 2.5e-3, null]}', "http://a.b/c?d=e", "<|endoftext|>",
    ]
)  # fmt: skip
_runs = st.builds(
    lambda ch, n: ch * n, st.sampled_from(["a", " ", "\n", "1", "!", "é", "字", "'", "\u0301"]), st.integers(1, 40)
)
ADVERSARIAL = st.one_of(
    st.lists(st.one_of(_pieces, _pieces, _runs, st.text(max_size=4)), max_size=40).map("".join),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=120),
)


def neutral_positions(counter: TiktokenCounter, text: str) -> list[int]:
    return [p for p in range(1, len(text)) if counter.neutral_join(text[p - 1], text[p])]


@pytest.mark.parametrize("name", sorted(TIKTOKEN))
@given(text=ADVERSARIAL)
def test_ids_add_up_at_every_neutral_position(name: str, text: str) -> None:
    """encode(text) == encode(text[:p]) + encode(text[p:]) wherever neutral_join(text[p - 1], text[p])."""
    counter = TIKTOKEN[name]
    encode = counter.encoding.encode_ordinary
    whole = encode(text)
    for p in neutral_positions(counter, text):
        assert encode(text[:p]) + encode(text[p:]) == whole, (p, text[p - 1 : p + 1])


@pytest.mark.parametrize("name", sorted(FAST))
@given(text=ADVERSARIAL)
def test_fast_counts_add_up_at_every_neutral_position(name: str, text: str) -> None:
    """The fast counter agrees: its counts of the two sides add up to tiktoken's count of the whole."""
    counter = FAST[name]
    want = len(counter.encoding.encode_ordinary(text))
    assert counter._raw_count(text) == want
    for p in neutral_positions(counter, text):
        assert counter._raw_count(text[:p]) + counter._raw_count(text[p:]) == want, (p, text[p - 1 : p + 1])


@pytest.mark.parametrize("name", ENCODINGS)
@given(left=ADVERSARIAL, right=ADVERSARIAL)
def test_counts_of_joined_texts_add_up(name: str, left: str, right: str) -> None:
    """Two independent texts joined where neutral_join says True: count(a + b) == count(a) + count(b)."""
    counters = [TIKTOKEN[name], *([FAST[name]] if FAST else [])]
    for counter in counters:
        if left and right and counter.neutral_join(left[-1], right[0]):
            raw = counter._raw_count
            assert raw(left + right) == raw(left) + raw(right)


def test_the_rules() -> None:
    """The newline rule and the letter rule, for the encodings that have them; none for the others."""
    o200k = TIKTOKEN["o200k_base"]
    for left, right, want in [
        ("\n", "x", True), ("\n", "1", True), ("\n", ".", True), ("\n", "字", True), ("\n", "/", False),
        ("\n", " ", False), ("\n", "\n", False), ("\n", "\xa0", False), ("\n", "\u2028", False),
        ("a", " ", True), ("Z", ".", True), ("q", "1", True), ("x", "\n", True), ("x", "\x00", True),
        ("x", "\x7f", True), ("x", "'", False), ("x", "y", False), ("x", "é", False), ("x", "\u0301", False),
        ("x", "\xa0", False), ("é", " ", False), ("字", " ", False), ("1", " ", False), (" ", "x", False),
        (".", " ", False), ("'", " ", False),
    ]:  # fmt: skip
        assert o200k.neutral_join(left, right) is want, (left, right)
        assert tiktoken_neutral_join(left, right) is want
    assert {"cl100k_base", "o200k_base", "o200k_harmony"} == NEUTRAL_ENCODINGS
    assert TIKTOKEN["o200k_harmony"].encoding._pat_str == o200k.encoding._pat_str  # same rules, same pattern


def pattern_positions(left: str, rights: list[str]) -> tuple[set[int], set[int], set[int]]:
    """For ``text = left + r0 + left + r1 + ...``: the positions right after a ``left`` that FORWARD and BACKWARD
    (over the reversed text) name, and those the rule names."""
    text = "".join(left + r for r in rights)
    n = len(text)
    forward = {m.end() for m in FORWARD.finditer(text) if m.start() % 2 == 0}
    backward = {n - m.start() for m in BACKWARD.finditer(text[::-1]) if (n - m.start() - 1) % 2 == 0}
    want = {2 * i + 1 for i, r in enumerate(rights) if tiktoken_neutral_join(left, r)}
    return forward, backward, want


def test_the_patterns_name_the_rules_positions_for_every_character() -> None:
    """What scan_neutral searches names a position exactly when the rule holds: every code point after a newline
    and after an ASCII letter, every ASCII character (and a few others) after anything else."""
    rights = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    for left in ["\n", "a", "z", "A", "Z", "m"]:
        forward, backward, want = pattern_positions(left, rights)
        assert forward == backward == want, repr(left)
    ascii_chars = [chr(c) for c in range(128)]
    for left in [*ascii_chars, "é", "字", "\u0301", "\xa0", "\u2028", "\x85", "😀", "ǅ"]:
        forward, backward, want = pattern_positions(left, [*ascii_chars, "é", "字", "\xa0", "😀"])
        assert forward == backward == want, repr(left)


def test_other_encodings_have_no_neutral_positions() -> None:
    """An encoding outside NEUTRAL_ENCODINGS (here: o200k's ids under another name) is never neutral."""
    import copy

    other = copy.copy(TIKTOKEN["o200k_base"])
    other._neutral = False
    assert not other.neutral_join("\n", "x") and not other.neutral_join("a", " ")
