"""Typed inputs validate at construction; evidence without provenance cannot be built."""

from __future__ import annotations

import copy
import pickle
from datetime import datetime, timezone

import pytest

from tokenbox_core import ContextCompiler
from tokenbox_core.compiler import Evidence, Memory, TaskState, Tool
from tokenbox_core.compiler._inputs import Tier, Trust
from tokenbox_core.compiler._render import evidence_tag
from tokenbox_core.errors import CompilerInputError

from .conftest import evidence

NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)


def make(**kw: object) -> Evidence:
    fields: dict[str, object] = {"source": "kb://a", "retrieved_at": NOW, "authority": 0.5, "relevance": 0.5}
    fields.update(kw)
    return Evidence("e1", "text", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("source", "", "source must be a non-empty source identifier"),
        ("retrieved_at", "2025-01-01", "retrieved_at must be a datetime"),
        ("retrieved_at", datetime(2025, 1, 1), "timezone-aware"),
        ("authority", 1.5, "authority must be in \\[0, 1\\]"),
        ("relevance", float("nan"), "relevance must be a finite number"),
        ("span", (5, 2), "span must be \\(start, end\\)"),
    ],
)
def test_evidence_rejects_missing_or_bad_provenance(field: str, value: object, message: str) -> None:
    """Each provenance field is checked where the evidence is built, naming the field."""
    with pytest.raises(CompilerInputError, match=message):
        make(**{field: value})


def test_evidence_requires_provenance_keywords() -> None:
    """Source, retrieval time, authority and relevance are required keyword arguments."""
    with pytest.raises(TypeError):
        Evidence("e1", "text")  # type: ignore[call-arg]


def test_evidence_tier_trust_and_tag() -> None:
    """Evidence is Tier 2, untrusted, and its tag carries every provenance field."""
    e = make(span=(0, 40), lineage="subquery-2")
    assert (e.tier, e.trust) == (Tier.EVIDENCE, Trust.UNTRUSTED)
    assert evidence_tag(e) == (
        "[evidence e1 | source: kb://a | retrieved: 2025-01-01T00:00:00+00:00 | authority: 0.5 | "
        "relevance: 0.5 | span: 0-40 | lineage: subquery-2]"
    )


def test_task_state_is_canonical_json() -> None:
    """Equal states serialise byte-identically whatever the key order."""
    assert TaskState({"b": 1, "a": [2, {"d": 3, "c": 4}]}).text == '{"a":[2,{"c":4,"d":3}],"b":1}'


def test_tool_text_and_trust() -> None:
    """A tool renders as canonical JSON and is untrusted (schemas come from tool servers)."""
    tool = Tool("search", "web search", {"type": "object"})
    assert tool.text == '{"description":"web search","name":"search","parameters":{"type":"object"}}'
    assert tool.trust is Trust.UNTRUSTED and tool.id == "tool:search"


def test_memory_validates_scores_and_times() -> None:
    """Memory scores must be in [0, 1] and times timezone-aware."""
    with pytest.raises(CompilerInputError, match="relevance"):
        Memory("m", "x", relevance=2.0)
    with pytest.raises(CompilerInputError, match="timezone-aware"):
        Memory("m", "x", expires_at=datetime(2025, 1, 1))


def test_inputs_pickle_and_copy_and_a_compile_writes_nothing_onto_them() -> None:
    """A compile leaves the inputs as they were built (no attribute added); pickled and copied inputs are equal
    and compile to the same context."""
    ev = [evidence(f"e{i}", f"Passage {i} about refunds and returns.") for i in range(3)]
    tools = [Tool("lookup", "Look up an order", {"type": "object", "required": ["id"]})]
    memory = [Memory("m1", "Prefers e-mail.", relevance=0.5)]
    before = [dict(vars(x)) for x in [*ev, *tools, *memory]]
    compiler = ContextCompiler(4000)
    first = compiler.compile(policy="Be brief.", evidence=ev, tools=tools, memory=memory, user="Refund?")
    assert [vars(x) for x in [*ev, *tools, *memory]] == before
    clones = [pickle.loads(pickle.dumps(e)) for e in ev]
    assert clones == ev
    tool_clones = [copy.deepcopy(t) for t in tools]
    assert tool_clones == tools
    again = compiler.compile(
        policy="Be brief.", evidence=clones, tools=tool_clones, memory=copy.copy(memory), user="Refund?"
    )
    assert again.messages == first.messages and again.trace.input_hash == first.trace.input_hash
