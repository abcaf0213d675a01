"""TokenBoxCompressor: deterministic document fitting wherever LangChain takes a document compressor."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever

from tokenbox_core import get_counter
from tokenbox_langchain import LAYOUT_EVENT, TokenBoxCompressor, TokenBoxMessages

W = "whitespace"


def docs() -> list[Document]:
    scores = [0.2, 0.9, 0.5, 0.9, 0.1]
    return [
        Document(f"doc{i} " + "w " * 4, id=f"d{i}", metadata={"relevance_score": s, "source": f"s{i}"})
        for i, s in enumerate(scores)
    ]


def test_is_a_document_compressor() -> None:
    """It is a BaseDocumentCompressor."""
    assert isinstance(TokenBoxCompressor(budget=10), BaseDocumentCompressor)


def test_rank_order_keeps_the_top_ranked() -> None:
    """order='rank' keeps the first documents that fit, metadata untouched."""
    kept = TokenBoxCompressor(budget=16, counter=W).compress_documents(docs(), "q")
    assert [d.id for d in kept] == ["d0", "d1", "d2"]
    assert kept[0].metadata == {"relevance_score": 0.2, "source": "s0"}


def test_score_order_drops_the_lowest_scores_and_keeps_order() -> None:
    """order='score' removes the lowest scores first (ties lose the later one); kept keep retrieval order."""
    kept = TokenBoxCompressor(budget=11, counter=W, order="score").compress_documents(docs(), "q")
    assert [d.id for d in kept] == ["d1", "d3"]


def test_partial_cuts_the_boundary_document() -> None:
    """partial=True fills the budget by cutting the boundary document, flagged in its metadata."""
    kept = TokenBoxCompressor(budget=13, counter=W, partial=True).compress_documents(docs(), "q")
    assert [d.id for d in kept] == ["d0", "d1", "d2"]
    assert kept[-1].metadata["tokenbox_truncated"] is True
    assert get_counter(W).count("\n\n".join(d.page_content for d in kept)) <= 13


def test_deterministic_and_async() -> None:
    """Same input, same output, sync and async."""
    compressor = TokenBoxCompressor(budget=12, counter=W, order="score")
    a = compressor.compress_documents(docs(), "q")
    assert a == compressor.compress_documents(docs(), "q")
    assert asyncio.run(compressor.acompress_documents(docs(), "q")) == a


def test_omissions_are_reported_to_callbacks() -> None:
    """The removed documents reach the callbacks in a custom event."""

    class Recorder(BaseCallbackHandler):
        def __init__(self) -> None:
            self.data: list[Any] = []

        def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
            self.data.append((name, data))

    recorder = Recorder()
    TokenBoxCompressor(budget=11, counter=W).compress_documents(docs(), "q", callbacks=[recorder])
    [(name, report)] = recorder.data
    assert name == LAYOUT_EVENT
    assert report["kept_ids"] == ["d0", "d1"]
    assert [r["id"] for r in report["removed_documents"]] == ["d4", "d3", "d2"]
    asyncio.run(
        TokenBoxCompressor(budget=11, counter=W).acompress_documents(docs(), "q", callbacks=CallbackManager([recorder]))
    )
    assert len(recorder.data) == 2


def test_duplicate_and_missing_ids() -> None:
    """Documents without ids or with repeated ids are all handled."""
    same = [Document("a b", id="x"), Document("c d", id="x"), Document("e f")]
    assert TokenBoxCompressor(budget=100, counter=W).compress_documents(same, "q") == same


class _Retriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return list(self.docs)


class _Runs(BaseCallbackHandler):
    def __init__(self) -> None:
        self.metadata: dict[str, dict[str, Any]] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, *, metadata: Any = None, **kwargs: Any) -> None:
        self.metadata[str(kwargs.get("name"))] = dict(metadata or {})


@given(
    sizes=st.lists(st.integers(0, 12), min_size=1, max_size=12),
    budget=st.integers(0, 60),
    order=st.sampled_from(["rank", "score"]),
    partial=st.booleans(),
)
def test_empty_documents_cost_nothing_and_are_not_returned(
    sizes: list[int], budget: int, order: Any, partial: bool
) -> None:
    """Issue 10 item 4: an empty document kept between others added a separator the budget did not count; empty
    documents are now left out, and the kept documents joined as documented always fit."""
    docs = [
        Document(" ".join(f"w{i}x{j}" for j in range(n)), metadata={"relevance_score": n}) for i, n in enumerate(sizes)
    ]
    compressor = TokenBoxCompressor(budget=budget, counter="whitespace", order=order, partial=partial, separator="\n\n")
    kept = compressor.compress_documents(docs, "q")
    assert all(d.page_content for d in kept)
    assert get_counter("whitespace").count("\n\n".join(d.page_content for d in kept)) <= budget


def test_composes_after_a_retriever_with_headline_numbers_in_the_run_metadata() -> None:
    """Issue 10 item 19: retriever | TokenBoxCompressor(...) is a chain; the run's metadata carries the budget,
    total, kept/removed counts and fingerprint (for LangSmith), and so does TokenBoxMessages'."""
    docs = [Document("alpha " * 6, id="a"), Document("beta " * 6, id="b"), Document("gamma " * 6, id="c")]
    chain = _Retriever(docs=docs) | TokenBoxCompressor(budget=14, counter="whitespace")
    runs = _Runs()
    kept = chain.invoke("query", config={"callbacks": [runs]})
    assert [d.id for d in kept] == ["a", "b"]
    meta = runs.metadata["TokenBoxCompressor"]
    assert (meta["tokenbox_budget"], meta["tokenbox_kept"], meta["tokenbox_removed"]) == (14, 2, 1)
    assert meta["tokenbox_total_tokens"] <= 14 and len(meta["tokenbox_fingerprint"]) >= 12
    assert asyncio.run(chain.ainvoke("query")) == kept
    with pytest.raises(TypeError, match="takes a list of Documents"):
        TokenBoxCompressor(budget=5).invoke("not documents")
    runs = _Runs()
    TokenBoxMessages(budget=30, counter="whitespace").invoke(
        [HumanMessage("one two three " * 5), AIMessage("four"), HumanMessage("five")], config={"callbacks": [runs]}
    )
    meta = runs.metadata["TokenBoxMessages"]
    assert (meta["tokenbox_budget"], meta["tokenbox_kept"], meta["tokenbox_removed"]) == (30, 1, 2)
