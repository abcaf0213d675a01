"""The trace of §6.4.2 and the input hash that covers every input."""

from __future__ import annotations

import hashlib
from dataclasses import fields, replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler import Evidence, Tool
from tokenbox_core.compiler._trace import _plain, output_hash
from tokenbox_core.tokens import canonical_json

from .conftest import NOW, evidence


def test_trace_has_the_chapter_fields(turn: dict[str, Any]) -> None:
    """Every field of the chapter's schema is present and consistent with the compile."""
    compiled = ContextCompiler(4000, config=CompilerConfig(version="2.1.0")).compile(**turn)
    trace = compiled.trace.to_dict()
    for key in (
        "trace_id",
        "timestamp",
        "config_version",
        "input_hash",
        "output_hash",
        "total_tokens",
        "section_allocations",
        "excluded_items",
        "compression_ratios",
        "latency_ms",
    ):
        assert key in trace
    assert trace["config_version"] == "2.1.0" and trace["total_tokens"] == compiled.total_tokens
    assert trace["policy_version"] == "1"
    assert trace["section_allocations"]["evidence"]["used"] == compiled.layout["evidence"].final_tokens
    assert set(trace["section_allocations"]["evidence"]) >= {"allocated", "used", "overflow"}
    assert len(trace["input_hash"]) == len(trace["output_hash"]) == 64


def test_excluded_items_carry_reason_and_score(turn: dict[str, Any]) -> None:
    """Filtered items and items lost to compression are all in excluded_items."""
    turn["evidence"].append(evidence("weak", "low relevance", relevance=0.05))
    compiled = ContextCompiler(470, config=CompilerConfig(evidence_threshold=0.1)).compile(**turn)
    rows = {(e["item_id"], e["reason"]) for e in compiled.trace.to_dict()["excluded_items"]}
    assert ("weak", "relevance") in rows
    assert any(reason.startswith("compress:") for _, reason in rows)


def test_input_hash_covers_timestamps_metadata_and_config(turn: dict[str, Any]) -> None:
    """Changing a retrieval timestamp, evidence metadata, a span or the config changes input_hash."""
    compiler = ContextCompiler(4000)
    base = compiler.compile(**turn).trace.input_hash
    first: Evidence = turn["evidence"][0]
    variants = [
        Evidence(
            first.id,
            first.text,
            source=first.source,
            retrieved_at=first.retrieved_at - timedelta(seconds=1),
            authority=first.authority,
            relevance=first.relevance,
        ),
        Evidence(
            first.id,
            first.text,
            source=first.source,
            retrieved_at=first.retrieved_at,
            authority=first.authority,
            relevance=first.relevance,
            metadata={"k": "v"},
        ),
        Evidence(
            first.id,
            first.text,
            source=first.source,
            retrieved_at=first.retrieved_at,
            authority=first.authority,
            relevance=first.relevance,
            span=(0, 5),
        ),
    ]
    hashes = {base}
    for variant in variants:
        changed = dict(turn, evidence=[variant, *turn["evidence"][1:]])
        hashes.add(compiler.compile(**changed).trace.input_hash)
    hashes.add(ContextCompiler(4000, config=CompilerConfig(quantum=32)).compile(**turn).trace.input_hash)
    assert len(hashes) == 5


def test_input_hash_is_stable_across_processes(turn: dict[str, Any]) -> None:
    """The hash has no addresses or hash-seed dependence: a config with callables hashes by name."""

    def check(compiled: Any) -> None:
        return None

    a = ContextCompiler(4000, config=CompilerConfig(checks=(check,))).compile(**turn).trace.input_hash
    b = ContextCompiler(4000, config=replace(CompilerConfig(checks=(check,)))).compile(**turn).trace.input_hash
    assert a == b
    assert "0x" not in repr(CompilerConfig(utilities={"history": check}).describe()["utilities"])


def test_utility_allocator_reports_shadow_price_and_marginals(turn: dict[str, Any]) -> None:
    """The utility allocator puts λ and each tier's marginal utility in the context and the trace."""
    compiled = ContextCompiler(470, config=CompilerConfig(allocator="utility", quantum=16)).compile(**turn)
    assert compiled.shadow_price is not None and compiled.shadow_price > 0
    assert set(compiled.marginal_utilities) == {"evidence", "memory", "history"}
    assert compiled.trace.shadow_price == compiled.shadow_price
    for tier, allocated in compiled.allocations.items():
        used = sum(row["used"] for row in compiled.trace.section_allocations.values() if row["tier"] == tier)
        assert used <= allocated
    assert "shadow price" in compiled.explain()


def test_input_hash_feeds_structured_values_as_canonical_json() -> None:
    """Empty mappings and integer tuples are fed as their canonical JSON, like every other structured value."""
    import hashlib

    from tokenbox_core._frozen import FrozenDict
    from tokenbox_core.compiler._trace import _feed
    from tokenbox_core.tokens import canonical_json

    for value in ({}, FrozenDict(), (), (3, -40), (0, 12345678901234567890), (True, 1), (1, 2.5), (7,), (1, 2, 3)):
        fed, expected = hashlib.sha256(), hashlib.sha256()
        _feed(fed, value)
        data = canonical_json(list(value) if isinstance(value, tuple) else dict(value)).encode()
        expected.update(b"j%d:" % len(data))
        expected.update(data)
        assert fed.hexdigest() == expected.hexdigest()


def test_input_hash_follows_the_inputs_and_writes_nothing_onto_them(turn: dict[str, Any]) -> None:
    """Equal inputs (fresh copies too) give one hash; a tool's nested schema is frozen at construction, so the
    caller's dict changed afterwards does not reach the tool; a mutable value changed in place is seen; the
    compile writes no attribute onto a typed input."""
    compiler = ContextCompiler(4000)
    cold = compiler.compile(**turn).trace.input_hash
    assert compiler.compile(**turn).trace.input_hash == cold
    fresh = {**turn, "evidence": [replace(e) for e in turn["evidence"]]}
    assert compiler.compile(**fresh).trace.input_hash == cold
    assert all(set(vars(e)) == {f.name for f in fields(e)} for e in [*turn["evidence"], *turn["tools"]])
    tool = turn["tools"][0]
    with pytest.raises(TypeError):
        tool.schema["properties"]["id"]["type"] = "integer"
    schema = {"type": "object", "properties": {"id": {"type": "string", "enum": ["a", "b"]}}}
    mine = Tool("mine", "a tool", schema)
    with_mine = {**turn, "tools": [*turn["tools"], mine]}
    before = compiler.compile(**with_mine).trace.input_hash
    schema["properties"]["id"]["type"] = "integer"  # the caller's dict, not the tool's frozen copy
    assert compiler.compile(**with_mine).trace.input_hash == before
    assert mine.schema["properties"]["id"] == {"type": "string", "enum": ["a", "b"]}  # lists compare equal
    retyped = {**turn, "tools": [*turn["tools"], Tool("mine", "a tool", schema)]}
    assert compiler.compile(**retyped).trace.input_hash != before
    odd = Evidence(  # a mutable metadata value: an in-place change is seen
        "odd", "Some text.", source="s", retrieved_at=NOW, authority=0.5, relevance=0.5, metadata={"tags": ["a"]}
    )
    first = compiler.compile(**{**turn, "evidence": [odd]}).trace.input_hash
    odd.metadata["tags"].append("b")
    assert compiler.compile(**{**turn, "evidence": [odd]}).trace.input_hash != first


_piece = st.text(alphabet=st.sampled_from(["a", " ", '"', "\\", "\n", "\t", "\x00", "\x1f", "é", "€", "\ud800", "😀"]))
_value = st.one_of(
    st.none(), st.integers(), st.booleans(), _piece, st.lists(st.dictionaries(st.sampled_from(["id", "x"]), _piece))
)


@given(
    st.lists(
        st.tuples(
            st.lists(_piece, max_size=4),
            st.dictionaries(st.sampled_from(["role", "name", "tool_calls", "z"]), _value, max_size=3),
        ),
        max_size=5,
    )
)
def test_output_hash_is_the_canonical_json_digest(rows: list[tuple[list[str], dict[str, Any]]]) -> None:
    """The output hash is sha256 of the canonical JSON of the messages (lone surrogates kept), or of the text."""
    messages: list[Any] = [{**extra, "content": "".join(pieces)} for pieces, extra in rows]
    messages.append({1: "non-string key"})
    reference = hashlib.sha256(canonical_json(_plain(messages)).encode("utf-8", "surrogatepass")).hexdigest()
    assert output_hash(messages, "", "messages") == reference
    text = "".join("".join(pieces) for pieces, _ in rows)
    assert output_hash(messages, text, "text") == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@given(_json_like)
def test_frozen_schema_data_is_plain_and_immutable_like_its_source(value: Any) -> None:
    """A tool schema's frozen copy (FrozenDict / FrozenList) gives the plain data of the value it was made from."""
    from tokenbox_core.compiler._inputs import _deep_frozen

    assert _plain(_deep_frozen(value)) == _plain(value)
