"""Layout specs: JSON/TOML loading, validation and the errors a user can hit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tokenbox_core import BudgetError, TokenBoxError
from tokenbox_core.errors import UnknownModelWarning
from tokenbox_core.spec import LayoutSpec, SpecError, decode_utf8, load_spec, loads_spec, parse_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _spec(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "budget": 20,
        "counter": "whitespace",
        "sections": [
            {"id": "policy", "content": "be brief and exact"},
            {"id": "notes", "content": "one two three four five six seven eight nine ten", "shrink": 1},
        ],
    }
    data.update(overrides)
    return data


def _error(data: Any) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(data, source="s.json")
    return str(info.value)


def test_example_json_and_toml_describe_the_same_layout() -> None:
    """The JSON and TOML example specs parse to layouts with the same fingerprint."""
    a = load_spec(EXAMPLES / "support_bot.json").layout()
    b = load_spec(EXAMPLES / "support_bot.toml").layout()
    assert a.fingerprint == b.fingerprint
    assert {s.status for s in a.sections} >= {"kept", "truncated", "dropped"}


def test_int_budget_and_defaults() -> None:
    """An integer budget is max_tokens; counter, separator and mode take their defaults."""
    spec = parse_spec({"budget": 100, "sections": [{"id": "a", "content": "x"}]})
    assert isinstance(spec, LayoutSpec)
    assert spec.budget.max_tokens == 100 and spec.budget.output_reserve == 0
    assert (spec.counter, spec.separator, spec.mode) == ("o200k_base", "\n\n", "text")


def test_budget_object_fields_reach_context_budget() -> None:
    """Every budget field of the object form is passed to ContextBudget."""
    spec = parse_spec(
        _spec(
            budget={
                "max_tokens": 100,
                "target_tokens": 90,
                "output_reserve": 10,
                "reserved_slots": {"tools": 5},
                "estimation_safety_margin_percent": 10,
            }
        )
    )
    b = spec.budget
    assert (b.max_tokens, b.target_tokens, b.output_reserve, dict(b.reserved_slots)) == (100, 90, 10, {"tools": 5})
    assert b.estimation_safety_margin_percent == 10.0


def test_section_and_item_fields_are_parsed() -> None:
    """Section and item fields (strategy, eviction, tags, timestamp, group...) reach Section and Item."""
    spec = parse_spec(
        _spec(
            mode="messages",
            sections=[
                {
                    "id": "docs",
                    "priority": 2,
                    "shrink": 1,
                    "grow": 2,
                    "basis": 5,
                    "min_tokens": 1,
                    "max_tokens": 50,
                    "strategy": "whitespace",
                    "keep": "tail",
                    "role": "system",
                    "eviction": "lowest_score",
                    "partial": False,
                    "omission_marker": "[{count} omitted]",
                    "item_separator": "\n--\n",
                    "metadata": {"origin": "search"},
                    "items": [
                        {
                            "id": "d1",
                            "content": "alpha beta",
                            "score": 0.5,
                            "tags": ["a", "b"],
                            "timestamp": "2024-05-01T12:00:00Z",
                            "group": "g",
                            "pinned": True,
                            "tokens": 3,
                            "kind": "Document",
                            "role": "tool",
                            "priority": 1,
                            "source": "kb://1",
                            "metadata": {"page": 3},
                        }
                    ],
                }
            ],
        )
    )
    section = spec.sections[0]
    assert section.strategy == ("whitespace",) and section.eviction == "lowest_score" and section.basis == 5
    assert section.metadata["origin"] == "search"
    item = section.items[0]
    assert item.tags == ("a", "b") and item.timestamp is not None and item.timestamp.year == 2024
    assert (item.group, item.pinned, item.tokens, item.score) == ("g", True, 3, 0.5)
    assert spec.mode == "messages"


def test_strategy_list_with_list_lens() -> None:
    """A strategy list may mix text lenses and list lenses."""
    spec = parse_spec(
        _spec(sections=[{"id": "h", "items": [], "shrink": 1, "strategy": ["drop_oldest", "whitespace"]}])
    )
    assert spec.sections[0].strategy == ("drop_oldest", "whitespace")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"budget": 10, "sections": [{"id": "a", "content": "x", "prority": 1}]}, "did you mean 'priority'"),
        (_spec(budgett=3), "unknown field 'budgett'; did you mean 'budget'"),
        (
            _spec(sections=[{"id": "a", "items": [{"id": "i", "content": "x", "scroe": 1}]}]),
            "sections[0] ('a').items[0]: unknown field 'scroe'",
        ),
        (_spec(budget={"max_tokens": 5, "reserve": 1}), "budget: unknown field 'reserve'"),
        (_spec(sections=[{"id": "a", "content": "x", "zzz": 1}]), "known fields: id, content, items"),
    ],
)
def test_unknown_fields_are_errors_with_a_suggestion(data: dict[str, Any], expected: str) -> None:
    """A misspelt field is an error that names it and suggests the right one."""
    assert expected in _error(data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([], "a spec must be an object"),
        ({}, "the spec is empty"),
        ({"sections": [{"id": "a"}]}, "missing 'budget'"),
        ({"budget": 5}, "missing 'sections'"),
        (_spec(sections=[]), "sections is empty"),
        (_spec(sections={"id": "a"}), "sections must be a list, got an object"),
        (_spec(sections=["text"]), "sections[0]: a section must be an object, got a string"),
        (_spec(sections=[{"content": "x"}]), "sections[0]: missing 'id'"),
        (_spec(sections=[{"id": "a", "items": [{"content": "x"}]}]), "items[0]: missing 'id'"),
        (_spec(sections=[{"id": "a", "content": "x", "items": []}]), "either 'content' (text) or 'items'"),
        (_spec(sections=[{"id": "a", "content": ["x"]}]), "content must be a string, got a list; put a list under"),
        (_spec(sections=[{"id": "a", "items": "x"}]), "items must be a list of objects"),
        (_spec(sections=[{"id": "a"}, {"id": "a"}]), "sections[1]: duplicate section id 'a'"),
        (
            _spec(sections=[{"id": "a", "items": [{"id": "i"}, {"id": "i"}]}]),
            "sections[0] ('a'): duplicate item id 'i'",
        ),
        (_spec(sections=[{"id": "a", "priority": "high"}]), "sections[0] ('a'): priority must be an integer"),
        (_spec(sections=[{"id": "a", "shrink": -1}]), "shrink must be a finite number >= 0"),
        (_spec(sections=[{"id": "a", "eviction": "random"}]), "eviction must be one of"),
        (_spec(sections=[{"id": "a", "min_tokens": -3}]), "min_tokens must be >= 0, got -3"),
        (_spec(sections=[{"id": "a", "basis": "lots"}]), "basis must be an integer number of tokens"),
        (_spec(sections=[{"id": "a", "strategy": "squeeze"}]), "unknown lens 'squeeze'"),
        (_spec(sections=[{"id": "a", "strategy": [1]}]), "strategy must be a lens name or a list of lens names"),
        (_spec(sections=[{"id": "a", "partial": "yes"}]), "partial must be true or false"),
        (_spec(sections=[{"id": "a", "role": 3}]), "role must be a string"),
        (_spec(sections=[{"id": "a", "items": [{"id": "i", "score": "high"}]}]), "score must be a number"),
        (_spec(sections=[{"id": "a", "items": [{"id": "i", "pinned": 1}]}]), "pinned must be true or false"),
        (_spec(sections=[{"id": "a", "items": [{"id": "i", "group": 7}]}]), "group must be a string"),
        (_spec(sections=[{"id": "a", "items": [{"id": "i", "timestamp": "yesterday"}]}]), "timestamp must be ISO"),
        (_spec(sections=[{"id": "a", "items": [{"id": "i", "timestamp": 5}]}]), "timestamp must be an ISO 8601"),
        (_spec(sections=[{"id": "a", "items": ["x"]}]), "an item must be an object"),
        (_spec(budget=-5), "budget must be >= 0, got -5"),
        (_spec(budget="8k"), "budget must be an integer number of tokens, got '8k'"),
        (_spec(budget={"output_reserve": 3}), "budget: missing 'max_tokens'"),
        (_spec(budget={"max_tokens": 10, "output_reserve": -1}), "output_reserve must be >= 0"),
        (_spec(budget={"max_tokens": 10, "target_tokens": 20}), "target_tokens (20) must be <= max_tokens (10)"),
        (_spec(budget={"max_tokens": 10, "reserved_slots": [1]}), "reserved_slots must be an object"),
        (_spec(budget={"max_tokens": 10, "estimation_safety_margin_percent": 300}), "between 0 and 100"),
        (_spec(counter=""), "counter must be a non-empty string"),
        (_spec(separator=3), "separator must be a string"),
        (_spec(mode="chat"), "mode must be 'text' or 'messages'"),
        (_spec(name=5), "name must be a string"),
    ],
)
def test_invalid_specs_raise_spec_error_naming_the_place(data: Any, expected: str) -> None:
    """Each invalid spec raises SpecError with the file, the place and the problem."""
    message = _error(data)
    assert message.startswith("s.json")
    assert expected in message


def test_spec_error_is_in_the_error_tree() -> None:
    """SpecError is a TokenBoxError and a ValueError; budget errors keep the budget's message."""
    with pytest.raises(SpecError) as info:
        parse_spec(_spec(budget={"max_tokens": 10, "output_reserve": 11}))
    assert isinstance(info.value, TokenBoxError) and isinstance(info.value, ValueError)
    assert not isinstance(info.value, BudgetError)
    assert "output_reserve (11) must be <= max_tokens (10)" in str(info.value)


def test_unknown_model_falls_back_instead_of_failing() -> None:
    """An unknown model name as counter is not an error: it counts with cl100k_base."""
    spec = parse_spec(_spec(counter="acme-private-model-9"))
    with pytest.warns(UnknownModelWarning, match="acme-private-model-9"):
        layout = spec.layout()
    assert layout.counter_name == "cl100k_base"


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    """Broken JSON reports the file, line and column."""
    path = tmp_path / "bad.json"
    path.write_text('{"budget": 10,\n  "sections": [}\n', encoding="utf-8")
    with pytest.raises(SpecError, match=r"bad\.json: invalid JSON at line 2, column 16"):
        load_spec(path)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    """Broken TOML reports the file and tomllib's position."""
    path = tmp_path / "bad.toml"
    path.write_text("budget = \n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"bad\.toml: invalid TOML: .*line 1"):
        load_spec(path)


def test_invalid_utf8_names_the_byte_offset(tmp_path: Path) -> None:
    """A spec file with bytes that are not UTF-8 is rejected with the offset of the first bad byte."""
    path = tmp_path / "latin1.json"
    data = b'{"budget": 5, "sections": [{"id": "caf\xe9"}]}'
    path.write_bytes(data)
    offset = data.index(b"\xe9")
    with pytest.raises(SpecError, match=rf"latin1\.json is not valid UTF-8: byte 0xe9 at offset {offset} "):
        load_spec(path)


def test_decode_utf8_accepts_valid_text() -> None:
    """decode_utf8 returns the text of valid UTF-8 unchanged."""
    assert decode_utf8("café ✓".encode(), "x") == "café ✓"


@pytest.mark.parametrize("text", ["", "  \n", "\ufeff"])
def test_empty_spec_text_is_an_error(text: str) -> None:
    """An empty (or blank) spec file is an error that says so."""
    with pytest.raises(SpecError, match="the spec is empty"):
        loads_spec(text, source="e.json")


def test_byte_order_mark_is_accepted() -> None:
    """A UTF-8 byte order mark at the start of a spec is ignored."""
    spec = loads_spec("\ufeff" + json.dumps(_spec()), source="bom.json")
    assert spec.layout().total_tokens <= 20


def test_unknown_format_is_an_error() -> None:
    """loads_spec accepts json and toml only."""
    with pytest.raises(SpecError, match="unknown spec format 'yaml'"):
        loads_spec("a: 1", fmt="yaml")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    """A missing path and a directory are SpecErrors naming the path."""
    with pytest.raises(SpecError, match="nope.json: no such file"):
        load_spec(tmp_path / "nope.json")
    with pytest.raises(SpecError, match="is a directory"):
        load_spec(tmp_path)


def test_toml_native_datetime_is_accepted(tmp_path: Path) -> None:
    """TOML's native datetimes are valid item timestamps."""
    path = tmp_path / "t.toml"
    path.write_text(
        'budget = 10\ncounter = "whitespace"\n[[sections]]\nid = "h"\nshrink = 1\n'
        '[[sections.items]]\nid = "m1"\ncontent = "hello there"\ntimestamp = 2024-05-01T12:00:00Z\n',
        encoding="utf-8",
    )
    spec = load_spec(path)
    assert spec.sections[0].items[0].timestamp is not None


def test_spec_layout_matches_a_direct_tokenbox_layout() -> None:
    """A spec lays out exactly like the equivalent TokenBox call."""
    from tokenbox_core import Section, TokenBox

    spec = parse_spec(_spec())
    direct = TokenBox(20, counter="whitespace").layout(
        [
            Section("policy", "be brief and exact"),
            Section("notes", "one two three four five six seven eight nine ten", shrink=1),
        ]
    )
    assert spec.layout().fingerprint == direct.fingerprint


def test_json_schema_accepts_the_examples_and_rejects_a_typo() -> None:
    """The published JSON Schema validates the example spec and rejects a misspelt field, as editors will."""
    jsonschema = pytest.importorskip("jsonschema")
    from tokenbox_core.spec import spec_json_schema

    schema = spec_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    example = json.loads((EXAMPLES / "support_bot.json").read_text(encoding="utf-8"))
    assert list(validator.iter_errors(example)) == []
    typo = _spec(sections=[{"id": "a", "content": "x", "prority": 1}])
    assert [e.validator for e in validator.iter_errors(typo)] == ["additionalProperties"]
    assert list(validator.iter_errors(_spec(budget=-1)))


def test_schema_key_is_allowed_for_editors() -> None:
    """A "$schema" key (how editors find the schema) is accepted and ignored."""
    spec = parse_spec({"$schema": "./tokenbox-spec.schema.json", **_spec()})
    assert spec.layout().fingerprint == parse_spec(_spec()).layout().fingerprint


def test_schema_documents_every_field() -> None:
    """Every field of the spec, its sections, items and budget object carries a description for the editor."""
    from tokenbox_core.spec import spec_json_schema

    schema = spec_json_schema()
    objects = [schema, *schema["$defs"].values()]
    for obj in objects:
        assert obj["additionalProperties"] is False
        for name, prop in obj["properties"].items():
            assert prop.get("description"), name


def test_integral_floats_are_counts() -> None:
    """A count written 5.0 (as some JSON writers do) is the count 5; 5.5 is an error naming the field."""
    spec = parse_spec(_spec(sections=[{"id": "a", "content": "x y", "basis": 5.0, "shrink": 1}]))
    assert spec.sections[0].basis == 5
    assert "basis must be an integer number of tokens, got 5.5" in _error(
        _spec(sections=[{"id": "a", "content": "x", "basis": 5.5}])
    )


def test_budget_object_errors_name_the_budget_field() -> None:
    """An error inside the budget object names the budget field (and a reserved slot by its kind)."""
    assert "s.json: budget: max_tokens must be >= 0, got -1" in _error(_spec(budget={"max_tokens": -1}))
    message = _error(_spec(budget={"max_tokens": 10, "reserved_slots": {"Document": -2}}))
    assert "s.json: budget: reserved_slots['Document'] must be >= 0, got -2" in message


def test_strict_types_are_not_coerced() -> None:
    """1 is not true and "5" is not 5: strict types, as the schema says."""
    assert "pinned must be true or false, got 1" in _error(
        _spec(sections=[{"id": "a", "items": [{"id": "i", "pinned": 1}]}])
    )
    assert "min_tokens must be an integer number of tokens, got '5'" in _error(
        _spec(sections=[{"id": "a", "content": "x", "min_tokens": "5"}])
    )
    assert "omission_marker must be true, false or a template string" in _error(
        _spec(sections=[{"id": "a", "items": [], "omission_marker": 3}])
    )


def test_bad_omission_template_in_a_spec_is_a_spec_error() -> None:
    """A template using an undocumented field fails at parse time, naming the section and the fix."""
    message = _error(_spec(sections=[{"id": "a", "items": [], "shrink": 1, "omission_marker": "{nope}"}]))
    assert message.startswith("s.json: sections[0] ('a'): omission_marker template '{nope}' uses the field {nope}")


def test_json_integer_over_the_digit_limit_is_a_spec_error() -> None:
    """An integer of more than 4,300 digits is a SpecError naming the source, not a raw ValueError."""
    with pytest.raises(SpecError, match=r"big\.json: invalid JSON: .*4300"):
        loads_spec('{"budget": ' + "9" * 5000 + ', "sections": []}', source="big.json")
