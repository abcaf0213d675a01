"""``TokenBoxCompressor``: fit retrieved documents into a token budget, as a LangChain document compressor.

>>> from langchain_core.documents import Document
>>> docs = [Document(f"fact {i} " * 5, id=f"d{i}") for i in range(5)]
>>> kept = TokenBoxCompressor(budget=25, counter="whitespace").compress_documents(docs, "query")
>>> [d.id for d in kept]
['d0', 'd1']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManager, CallbackManager, Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables import RunnableSerializable
from pydantic import ConfigDict, field_validator

from tokenbox_core import ContextBudget, Item, Layout, Section, TokenBox
from tokenbox_core.arguments import StrictArguments, no_bool
from tokenbox_langchain._runs import TracedFit

__all__ = ["TRUNCATED_KEY", "TokenBoxCompressor"]

TRUNCATED_KEY = "tokenbox_truncated"
"""Metadata flag set on a document whose text was cut to fit (``partial=True``)."""


class TokenBoxCompressor(
    StrictArguments, TracedFit, RunnableSerializable[Sequence[Document], list[Document]], BaseDocumentCompressor
):
    """Keeps the retrieved documents that fit ``budget``, deterministically.

    Documents are counted as they would be pasted into a prompt: their
    ``page_content`` joined by ``separator``.  When they do not all fit, whole
    documents are removed — the lowest-ranked first (``order="rank"``: the
    retriever's order is the ranking) or the lowest-scored first
    (``order="score"``: ``metadata[score_key]``, ties lose the later
    document).  With ``partial=True`` the boundary document is cut at a token
    boundary instead of being removed (its metadata gains
    ``tokenbox_truncated=True``).  Kept documents keep their order and their
    metadata; the removed ones are reported to the callbacks as the custom
    event ``"tokenbox_layout"``.  Empty documents cost nothing and are not
    returned.

    It is also a Runnable over a list of documents, so it composes the way
    LangChain users compose retrievers: ``retriever | TokenBoxCompressor(budget=300)``
    (the run's metadata carries the headline numbers), or inside a
    ``ContextualCompressionRetriever``.
    """

    budget: int | ContextBudget
    """Token budget for the documents (an int or a ``ContextBudget``)."""

    counter: Any = "o200k_base"
    """A TokenBox counter: a tiktoken encoding or model name, ``"bytes"``, ``"approximate"``, a callable..."""

    order: Literal["rank", "score"] = "rank"
    """Which documents go first: the last-ranked (``"rank"``) or the lowest-scored (``"score"``)."""

    score_key: str = "relevance_score"
    """Metadata key holding the score when ``order="score"`` (documents without one go first)."""

    partial: bool = False
    """Cut the boundary document to fill the budget instead of removing it whole."""

    separator: str = "\n\n"
    """How the documents are joined in the prompt (counted with them)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @field_validator("budget", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        return no_bool("budget", value)

    def fit(self, documents: Sequence[Document]) -> tuple[list[Document], Layout]:
        """The documents that fit, in their order, and the core's layout."""
        docs = [doc for doc in documents if doc.page_content]  # an empty document costs nothing: it is not sent
        ids: list[str] = []
        seen: set[str] = set()
        for i, doc in enumerate(docs):
            doc_id = doc.id or f"doc-{i}"
            if doc_id in seen:
                doc_id = f"{doc_id}#{i}"
            seen.add(doc_id)
            ids.append(doc_id)
        items = [
            Item(
                id=doc_id,
                content=doc.page_content,
                kind="Document",
                score=doc.metadata.get(self.score_key) if self.order == "score" else None,
                source=doc.metadata.get("source") if isinstance(doc.metadata.get("source"), str) else None,
            )
            for doc_id, doc in zip(ids, docs, strict=True)
        ]
        section = Section(
            "documents",
            items,
            shrink=1,
            eviction="lowest_score" if self.order == "score" else "newest",
            partial=self.partial,
            item_separator=self.separator,
        )
        layout = TokenBox(self.budget, counter=self.counter, separator="").layout([section])
        by_id = dict(zip(ids, docs, strict=True))
        laid = layout["documents"]
        kept: list[Document] = []
        for item in laid.content if isinstance(laid.content, tuple) else ():
            doc = by_id[item.id]
            if item.content != doc.page_content:
                doc = Document(page_content=item.content, metadata={**doc.metadata, TRUNCATED_KEY: True}, id=doc.id)
            kept.append(doc)
        return kept, layout

    @staticmethod
    def _report(layout: Layout) -> dict[str, Any]:
        laid = layout["documents"]
        return {
            "total_tokens": layout.total_tokens,
            "max_tokens": layout.max_tokens,
            "counter": layout.counter_name,
            "fingerprint": layout.fingerprint,
            "kept": len(laid.content) if isinstance(laid.content, tuple) else 0,
            "removed": len(laid.removed),
            "kept_ids": [it.id for it in laid.content] if isinstance(laid.content, tuple) else [],
            "removed_documents": [r.to_dict() for r in laid.removed],
            "truncated": laid.status == "truncated" and any(a.kind == "truncate" for a in laid.actions),
        }

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Fit ``documents`` into the budget (``query`` plays no part: the order is decided upstream)."""
        kept, layout = self.fit(documents)
        manager = CallbackManager.configure(inheritable_callbacks=callbacks)
        if manager.handlers:
            manager.on_custom_event("tokenbox_layout", self._report(layout), run_id=manager.parent_run_id)
        return kept

    def _compute(self, input: Any) -> tuple[Any, dict[str, Any]]:
        if isinstance(input, Document):
            input = [input]
        if not isinstance(input, Sequence) or not all(isinstance(d, Document) for d in input):
            raise TypeError(
                f"TokenBoxCompressor takes a list of Documents (a retriever's output), got {type(input).__name__}"
            )
        kept, layout = self.fit(input)
        return kept, self._report(layout)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents` (the layout itself is CPU-bound and quick)."""
        kept, layout = self.fit(documents)
        manager = AsyncCallbackManager.configure(inheritable_callbacks=callbacks)
        if manager.handlers:
            await manager.on_custom_event("tokenbox_layout", self._report(layout), run_id=manager.parent_run_id)
        return kept
