"""Lenses: each built-in rewrites deterministically and never grows text; the registry guards errors."""

from __future__ import annotations

import json

import pytest

from tokenbox_core import Section, SectionError, TokenBox, get_counter
from tokenbox_core.errors import LensError
from tokenbox_core.lenses import apply_lens, get_lens, register_lens

WS = get_counter("whitespace")
TIK = get_counter("o200k_base")


def test_whitespace_lens() -> None:
    """Runs of blanks collapse, trailing blanks go, blank-line runs shrink to one."""
    text = "a   b\t\tc  \n\n\n\nd   "
    assert get_lens("whitespace")(text, 0, TIK) == "a b c\n\nd"


def test_json_minify_is_canonical() -> None:
    """JSON is re-serialised with sorted keys and no spaces; other text is unchanged."""
    text = json.dumps({"b": [1, 2], "a": {"y": 1, "x": "é"}}, indent=4)
    assert get_lens("json_minify")(text, 0, TIK) == '{"a":{"x":"é","y":1},"b":[1,2]}'
    assert get_lens("json_minify")("{not json", 0, TIK) == "{not json"
    assert get_lens("json_minify")("plain", 0, TIK) == "plain"


def test_dedupe_lines_keeps_first_occurrence() -> None:
    """Repeated non-blank lines are removed; blank lines are kept."""
    assert get_lens("dedupe_lines")("a\nb\na\n\n\nb\nc", 0, TIK) == "a\nb\n\n\nc"


def test_sentences_keeps_whole_leading_sentences() -> None:
    """Sentence truncation keeps the leading sentences that fit the target."""
    text = "One two three. Four five six. Seven eight nine."
    assert get_lens("sentences")(text, 6, WS) == "One two three. Four five six."
    assert get_lens("sentences")(text, 2, WS) == ""
    assert get_lens("sentences")(text, 100, WS) == text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("truncate_tail", "a b c d…"),
        ("truncate_head", "…g h i j"),
        ("truncate_middle", "a b…i j"),
    ],
)
def test_marked_truncation(name: str, expected: str) -> None:
    """Head/tail/middle truncation leaves an ellipsis marker that counts toward the target."""
    assert get_lens(name)("a b c d e f g h i j", 5, WS) == expected


def test_register_and_use_a_lens() -> None:
    """A registered lens can be named in a strategy and shows in the layout's actions."""

    def shout_less(text: str, target: int, counter: object) -> str:
        return text.replace(" !!!", "")

    register_lens("shout_less_test", shout_less)
    layout = TokenBox(2, counter="whitespace").layout(
        [Section("s", "Hi !!! Yo !!!", shrink=1, strategy=["shout_less_test"])]
    )
    assert layout["s"].text == "Hi Yo"
    assert layout["s"].status == "compressed"
    assert layout["s"].actions[0].name == "shout_less_test"


def test_register_refuses_duplicates_and_bad_input() -> None:
    """Registering twice needs replace=True; names and callables are checked."""
    with pytest.raises(LensError, match="already registered"):
        register_lens("whitespace", lambda t, n, c: t)
    with pytest.raises(LensError, match="non-empty string"):
        register_lens("", lambda t, n, c: t)
    with pytest.raises(LensError, match="must be callable"):
        register_lens("x_not_callable", 3)  # type: ignore[arg-type]


def test_unknown_lens_names_the_known_ones() -> None:
    """Asking the registry for an unknown lens is a LensError listing the known lenses."""
    with pytest.raises(LensError, match="unknown lens 'zip'.*whitespace"):
        get_lens("zip")


def test_unknown_lens_name_is_rejected_when_the_section_is_built() -> None:
    """A misspelt lens name fails where the Section is built, with a "did you mean" (issue 10 item 7)."""
    with pytest.raises(SectionError, match=r"section 's': unknown lens 'whitepsace'; did you mean 'whitespace'\?"):
        Section("s", "a b c d", shrink=1, strategy="whitepsace")
    with pytest.raises(SectionError, match="unknown lens 'zip'; known lenses: dedupe_lines"):
        Section("s", "a b c d", shrink=1, strategy=["whitespace", "zip"])


def test_a_lens_that_grows_text_is_an_error() -> None:
    """A lens returning more units than it was given is a LensError naming it and the sizes."""

    def grow(text: str, target: int, counter: object) -> str:
        return text + " more words"

    with pytest.raises(LensError, match=r"lens 'grow' grew its input from 4 to 6 units"):
        TokenBox(2, counter="whitespace").layout([Section("s", "a b c d", shrink=1, strategy=[grow])])


def test_a_lens_that_raises_is_named() -> None:
    """A lens that raises is wrapped in a LensError naming the lens and the exception."""

    def broken(text: str, target: int, counter: object) -> str:
        raise KeyError("oops")

    with pytest.raises(LensError, match="lens 'broken' raised KeyError"):
        TokenBox(2, counter="whitespace").layout([Section("s", "a b c d", shrink=1, strategy=[broken])])


def test_a_lens_returning_non_text_is_an_error() -> None:
    """A lens must return a string."""
    with pytest.raises(LensError, match="returned int"):
        apply_lens(lambda t, n, c: 3, "abc", 1, WS, before=1)  # type: ignore[arg-type,return-value]


def test_list_lens_on_text_section_is_an_error() -> None:
    """drop_oldest / drop_lowest_score apply to list sections only."""
    with pytest.raises(SectionError, match="applies to list sections only"):
        TokenBox(2, counter="whitespace").layout([Section("s", "a b c d", shrink=1, strategy=["drop_oldest"])])


def test_truncate_lens_marker_that_does_not_fit_is_not_added() -> None:
    """In bytes units (… costs 3) a cut to 2 bytes drops the marker instead of growing the text (issue 10 item 8)."""
    counter = get_counter("bytes")
    for name, expected in (("truncate_tail", "ab"), ("truncate_head", "ef"), ("truncate_middle", "af")):
        assert get_lens(name)("abcdef", 2, counter) == expected
    assert get_lens("truncate_tail")("abcdefghij", 5, counter) == "ab…"  # room for both: marked
    layout = TokenBox(5, counter="bytes").layout(
        [Section("sys", "abcd"), Section("note", "ok", shrink=1, strategy="truncate_tail")]
    )
    assert layout.total_tokens <= 5 and layout["sys"].status == "kept"
    layout = TokenBox(7, counter="bytes").layout(
        [Section("sys", "ab"), Section("note", "okay then", shrink=1, strategy="truncate_tail")]
    )
    assert layout.total_tokens <= 7 and layout["note"].status in {"compressed", "truncated"}


def test_json_minify_leaves_deep_valid_json_unchanged() -> None:
    """JSON nested deeper than the parser goes is left as it is, not a RecursionError (issue 10 item 8)."""
    deep = "[ " * 50_000 + "] " * 50_000
    assert get_lens("json_minify")(deep, 0, WS) == deep
    layout = TokenBox(10, counter="whitespace").layout([Section("j", deep, shrink=1, strategy="json_minify")])
    assert layout.total_tokens <= 10 and layout["j"].status in {"truncated", "dropped"}
