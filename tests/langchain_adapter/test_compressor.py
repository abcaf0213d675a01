"""TokenBoxCompressor: deterministic document fitting wherever LangChain takes a document compressor."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.documents import BaseDocumentCompressor, Document

from tokenbox_core import get_counter
from tokenbox_langchain import LAYOUT_EVENT, TokenBoxCompressor

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
