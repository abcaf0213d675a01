"""Section and Item validation: bad input is a clear SectionError naming the field and value."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from tokenbox_core import CompilerConfig, ContextBudget, Item, Section, SectionError, TokenBox, TokenBoxError


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": ""}, "section id must be a non-empty string"),
        ({"id": 3}, "section id must be a non-empty string, got 3"),
        ({"id": "s", "priority": 1.5}, "priority must be an integer, got 1.5"),
        ({"id": "s", "min_tokens": -1}, "min_tokens must be >= 0, got -1"),
        ({"id": "s", "max_tokens": -2}, "max_tokens must be >= 0, got -2"),
        ({"id": "s", "min_tokens": 10, "max_tokens": 5}, r"min_tokens \(10\) must be <= max_tokens \(5\)"),
        ({"id": "s", "basis": -1}, "basis must be >= 0, got -1"),
        ({"id": "s", "grow": math.nan}, "grow must be a finite number >= 0, got nan"),
        ({"id": "s", "shrink": math.inf}, "shrink must be a finite number >= 0, got inf"),
        ({"id": "s", "shrink": -1}, "shrink must be a finite number >= 0, got -1"),
        ({"id": "s", "grow": "1"}, "grow must be a number, got '1'"),
        ({"id": "s", "keep": "start"}, "keep must be one of"),
        ({"id": "s", "eviction": "random"}, "eviction must be one of"),
        ({"id": "s", "strategy": [3]}, "strategy entries must be lens names or callables"),
        ({"id": "s", "content": 42}, "content must be a string or a sequence of Item, got int"),
        ({"id": "s", "content": ["plain text"]}, "list content must hold Item objects, got str"),
        ({"id": "s", "content": [Item("a"), Item("a")]}, "duplicate item id 'a'"),
        ({"id": "s", "omission_marker": 3}, "omission_marker must be a bool or a template string"),
        ({"id": "s", "metadata": [1]}, "metadata must be a mapping"),
    ],
)
def test_section_validation(kwargs: dict[str, object], message: str) -> None:
    """Each invalid Section field is rejected at construction with the field and the value."""
    with pytest.raises(SectionError, match=message):
        Section(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": ""}, "item id must be a non-empty string"),
        ({"id": "i", "content": None}, "content must be a string, got NoneType"),
        ({"id": "i", "score": math.nan}, "score must not be NaN"),
        ({"id": "i", "score": "high"}, "score must be a number"),
        ({"id": "i", "priority": "1"}, "priority must be an integer"),
        ({"id": "i", "tokens": 1.5}, "tokens must be an integer"),
        ({"id": "i", "tags": "urgent"}, "tags must be a sequence of strings"),
        ({"id": "i", "metadata": 1}, "metadata must be a mapping"),
    ],
)
def test_item_validation(kwargs: dict[str, object], message: str) -> None:
    """Each invalid Item field is rejected at construction with a clear message."""
    with pytest.raises(SectionError, match=message):
        Item(**kwargs)  # type: ignore[arg-type]


def test_section_error_is_value_error() -> None:
    """SectionError is also a ValueError."""
    with pytest.raises(ValueError):
        Section("")


def test_critical_is_shrink_zero() -> None:
    """A section is critical exactly when shrink == 0 (the default)."""
    assert Section("a").critical
    assert not Section("a", shrink=0.5).critical


def test_sections_and_items_are_immutable() -> None:
    """Sections and Items cannot be changed after construction; list content becomes a tuple."""
    section = Section("s", [Item("a", "x")], metadata={"k": 1})
    assert isinstance(section.content, tuple)
    with pytest.raises(AttributeError):
        section.priority = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        section.metadata["k"] = 2  # type: ignore[index]


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        ([], "no sections to lay out"),
        ([Section("a"), Section("a")], "duplicate section id 'a'"),
        (["text"], "sections must be Section objects, got str"),
        ("text", "sections must be a list of Section"),
    ],
)
def test_layout_rejects_bad_section_lists(sections: object, message: str) -> None:
    """Empty lists, duplicate ids and non-sections are clear errors, not tracebacks from inside."""
    with pytest.raises(SectionError, match=message):
        TokenBox(100, counter="whitespace").layout(sections)  # type: ignore[arg-type]


def test_single_section_is_accepted() -> None:
    """A lone Section (not in a list) is laid out as a list of one."""
    layout = TokenBox(10, counter="whitespace").layout(Section("a", "one two"))  # type: ignore[arg-type]
    assert layout.text == "one two"


def test_item_separator_must_be_text() -> None:
    """A non-string item separator is rejected."""
    with pytest.raises(SectionError, match="item_separator must be a string"):
        Section("s", [], item_separator=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{nope}", "uses the field {nope}; a template may use only {count}, {ids}, {first}, {last}"),
        ("{0}", "uses a positional field"),
        ("{}", "uses a positional field"),
        ("{", "is malformed"),
        ("}", "is malformed"),
        ("{ids.__class__.__mro__}", "uses the field {ids.__class__.__mro__}"),
        ("{ids[0]}", "uses the field {ids[0]}"),
        ("{count:{ids}}", "nests a field in a format spec"),
        ("{ids:d}", "cannot be formatted"),
    ],
)
def test_omission_marker_template_is_validated_when_the_section_is_built(template: str, fragment: str) -> None:
    """A bad omission-marker template is a SectionError at construction, never a raw error at layout time."""
    with pytest.raises(SectionError, match="section 'h': omission_marker template") as info:
        Section("h", [Item("a", "x")], shrink=1, omission_marker=template)
    assert fragment in str(info.value)


def test_omission_marker_template_accepts_the_documented_fields() -> None:
    """{count}, {ids}, {first}, {last}, format specs and doubled braces are accepted."""
    for template in ("[{count} omitted: {ids}]", "{first}..{last} ({count:>3})", "{{literal}} {ids!r}", "no fields"):
        assert Section("h", [Item("a", "x")], shrink=1, omission_marker=template).omission_marker == template


@pytest.mark.parametrize(
    ("score", "digits"), [(10**400, "401"), (-(10**400), "401"), (10**5000, "5,001")], ids=["1e400", "-1e400", "1e5000"]
)
def test_item_score_too_large_for_a_float_is_a_section_error(score: int, digits: str) -> None:
    """Item(score=10**400) is a SectionError naming the digits, not an OverflowError."""
    with pytest.raises(SectionError, match=rf"item 'a': score is too large to compare as a number \(about {digits} "):
        Item("a", "x", score=score)


def test_item_tags_must_be_a_sequence_of_strings() -> None:
    """tags=None and non-string tags are SectionErrors; a set of tags is kept in sorted order."""
    with pytest.raises(SectionError, match="item 'a': tags must be a sequence of strings, got NoneType"):
        Item("a", "x", tags=None)  # type: ignore[arg-type]
    with pytest.raises(SectionError, match=r"item 'a': tags must be strings, got 3 \(int\)"):
        Item("a", "x", tags=["ok", 3])  # type: ignore[list-item]
    assert Item("a", "x", tags={"b", "a"}).tags == ("a", "b")  # type: ignore[arg-type]
    assert Item("a", "x", tags=["b", "a"]).tags == ("b", "a")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "typo", "fix"),
    [
        (lambda: Section("a", "x", shrnk=1), "shrnk", "shrink"),
        (lambda: Item("a", "x", scroe=0.5), "scroe", "score"),
        (lambda: ContextBudget(100, output_reserv=10), "output_reserv", "output_reserve"),
        (lambda: CompilerConfig(alocator="utility"), "alocator", "allocator"),
    ],
)
def test_misspelt_keyword_names_the_right_one(make: Callable[[], object], typo: str, fix: str) -> None:
    """A misspelt keyword argument of a core constructor is a TypeError with a did-you-mean, not a bare TypeError."""
    with pytest.raises(TypeError, match=f"unknown argument '{typo}' \\(did you mean '{fix}'\\?\\)") as info:
        make()
    assert isinstance(info.value, TokenBoxError)


@pytest.mark.parametrize("data", [b"raw bytes", bytearray(b"raw")])
def test_bytes_content_says_decode_first(data: bytes) -> None:
    """Bytes as content (a Section's or an Item's) say to decode them, not 'list content must hold Item objects'."""
    with pytest.raises(SectionError, match="content is (bytes|bytearray); decode it to str first"):
        Section("d", data)  # type: ignore[arg-type]
    with pytest.raises(SectionError, match="content is (bytes|bytearray); decode it to str first"):
        Item("d", data)  # type: ignore[arg-type]
