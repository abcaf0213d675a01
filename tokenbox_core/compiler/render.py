"""How typed inputs are written into the context: evidence with its provenance tag, memories with their id.

Rank counts exactly these strings (so the Token Box finds their counts cached), Build lays them out, and
Validate checks that every emitted passage starts with its tag (chapter §6.3.3).  Each rendering is kept
on its (frozen) input once built: every stage then reads the same string object, whose hash Python keeps,
so the count cache's look-ups do not re-hash the passage.
"""

from __future__ import annotations

from typing import Any

from tokenbox_core.compiler.inputs import Evidence, Memory, keep, kept

__all__ = ["evidence_content", "evidence_tag", "memory_content"]

_TAG = "_tokenbox_tag"
_CONTENT = "_tokenbox_content"


def _kept(value: Any, name: str) -> str | None:
    found = kept(value, name)
    return found if isinstance(found, str) else None


def _keep(value: Any, name: str, text: str) -> str:
    keep(value, name, text)
    return text


def evidence_tag(e: Evidence) -> str:
    """The provenance tag written before a passage (chapter §6.3.3); Validate checks it is emitted."""
    found = _kept(e, _TAG)
    if found is not None:
        return found
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
    return _keep(e, _TAG, " | ".join(parts) + "]")


def memory_content(m: Memory) -> str:
    """A memory as laid out: ``[memory id (kind)] text``."""
    return _kept(m, _CONTENT) or _keep(m, _CONTENT, f"[memory {m.id} ({m.kind})] {m.text}")


def evidence_content(e: Evidence) -> str:
    """A passage as laid out: its provenance tag, a newline, the text."""
    return _kept(e, _CONTENT) or _keep(e, _CONTENT, f"{evidence_tag(e)}\n{e.text}")
