"""Fixtures for the LlamaIndex adapter: mock models, a real in-memory index, tokenizer isolation."""

from __future__ import annotations

from collections.abc import Iterator

import llama_index.core
import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM


@pytest.fixture(autouse=True)
def isolated_tokenizer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts with LlamaIndex's tokenizer unset and leaves it as it found it."""
    monkeypatch.setattr(llama_index.core, "global_tokenizer", None)
    yield


@pytest.fixture
def llm() -> MockLLM:
    """A MockLLM that answers with a few words (context window 3,900, num_output 16)."""
    return MockLLM(max_tokens=16)


@pytest.fixture
def embed_model() -> MockEmbedding:
    return MockEmbedding(embed_dim=8)


def _documents(n: int = 12, sentences: int = 16) -> list[Document]:
    """Documents with distinct text (about 130 tokens each) and one metadata field the LLM sees."""
    return [
        Document(
            text=" ".join(f"Fact {j} of document {i}." for j in range(sentences)), metadata={"source": f"file-{i}.txt"}
        )
        for i in range(n)
    ]


@pytest.fixture
def index(embed_model: MockEmbedding) -> VectorStoreIndex:
    """A real in-memory VectorStoreIndex over 12 short documents."""
    return VectorStoreIndex.from_documents(_documents(), embed_model=embed_model)
