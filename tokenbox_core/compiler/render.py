"""How typed inputs are written into the context: evidence with its provenance tag, memories with their id.

Rank counts exactly these strings, Build lays them out, and Validate checks that every emitted passage
starts with its tag (chapter §6.3.3).
"""

from __future__ import annotations

from tokenbox_core.compiler.inputs import Evidence, Memory

__all__ = ["evidence_content", "evidence_tag", "memory_content"]


def evidence_tag(e: Evidence) -> str:
    """The provenance tag written before a passage (chapter §6.3.3); Validate checks it is emitted."""
    parts = [
        f"[evidence {e.id}",
        f"source: {e.source}",
        f"retrieved: {e.retrieved_at.isoformat()}",
        f"authority: {e.authority:g}",
        f"relevance: {e.relevance:g}",
    ]
    if e.span is not None:
        parts.append(f"span: {e.span[0]}-{e.span[1]}")
    if e.lineage is not None:
        parts.append(f"lineage: {e.lineage}")
    return " | ".join(parts) + "]"


def memory_content(m: Memory) -> str:
    """A memory as laid out: ``[memory id (kind)] text``."""
    return f"[memory {m.id} ({m.kind})] {m.text}"


def evidence_content(e: Evidence) -> str:
    """A passage as laid out: its provenance tag, a newline, the text."""
    return f"{evidence_tag(e)}\n{e.text}"
