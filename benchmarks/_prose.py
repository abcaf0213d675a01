"""English prose the benchmarks are made of: real text that does not repeat, not a small vocabulary.

In this order, each paragraph once: this checkout's ``docs/`` and ``README.md``, the specs in
``shared/seeds/*.txt`` (found beside a parent of the checkout, as in the development set-up; skipped when
absent), the Python reference manual's topics (``pydoc_data``, in the standard library), then the docstrings
of the standard library's top-level modules (read with ``ast``, nothing imported).  Always read from the
checkout holding this file, so a run against another checkout times the very same text.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _seeds() -> list[Path]:
    for parent in HERE.parents:
        seeds = parent / "shared" / "seeds"
        if seeds.is_dir():
            return sorted(seeds.glob("*.txt"))
    return []


def _files() -> Iterator[str]:
    for path in [*sorted((HERE / "docs").rglob("*.md")), HERE / "README.md", *_seeds()]:
        yield path.read_text(encoding="utf-8")
    import pydoc_data.topics

    topics = pydoc_data.topics.topics
    yield from (topics[key] for key in sorted(topics))
    for path in sorted(Path(os.__file__).parent.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    yield doc


def paragraphs(size: int) -> list[str]:
    """Distinct paragraphs (over 80 characters) adding up to at least ``size`` UTF-8 bytes."""
    out: list[str] = []
    seen: set[str] = set()
    total = 0
    for text in _files():
        for paragraph in text.split("\n\n"):
            paragraph = paragraph.strip()
            if len(paragraph) > 80 and paragraph not in seen:
                seen.add(paragraph)
                out.append(paragraph)
                total += len(paragraph.encode("utf-8")) + 2
                if total >= size:
                    return out
    raise SystemExit(f"only {total:,} bytes of distinct prose found; {size:,} needed")


def prose(size: int) -> str:
    """``size`` UTF-8 bytes (give or take a character) of distinct paragraphs joined by blank lines."""
    text = "\n\n".join(paragraphs(size))
    return text.encode("utf-8")[:size].decode("utf-8", errors="ignore")
