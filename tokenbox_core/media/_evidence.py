"""Media as compiler evidence (Algorithm 6.9 inside the prefill compiler, chapter §6.12.4).

:func:`media_evidence` turns a :class:`~tokenbox_core.media._assembly.ModalityInput`
into a compiler ``Evidence``: the pointer text (``[EVIDENCE_IMG_1: caption]``),
an OCR/transcript substitute with its typed reference, or a table in its
cheapest rendering — and, for an image or audio clip that is sent as such, the
content part and its token cost in ``metadata``.  Two hooks in the compiler
use that metadata: Build vouches for the item's whole cost
(:func:`media_item_tokens`), so an image competes for the evidence tier's
allocation like any passage and is never cut in half; Assemble appends the
parts to the evidence message (:func:`with_media_parts`), where the message
counter costs them by the model's rule.  Media needs ``output="messages"``;
with text output only the pointer is emitted (its media cost stays counted,
an over-estimate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tokenbox_core.media._assembly import ModalityInput, _plan
from tokenbox_core.media._costs import resolve_profile
from tokenbox_core.media._references import evidence_label
from tokenbox_core.tokens import TokenCounter, get_counter

__all__ = ["media_evidence", "media_item_tokens", "with_media_parts"]

MEDIA_PART = "media_part"
MEDIA_TOKENS = "media_tokens"


def media_evidence(
    item: ModalityInput,
    *,
    source: str,
    retrieved_at: datetime,
    authority: float = 1.0,
    relevance: float | None = None,
    model: Any = "gpt-4o",
    fidelity: float = 0.9,
    allocation: int | None = None,
) -> Any:
    """A compiler ``Evidence`` for one modality input (substituted, compressed or kept as media).

    ``relevance`` defaults to the input's ``utility``; provenance is required
    as for any evidence (chapter §6.3.3).
    """
    from tokenbox_core.compiler._inputs import Evidence

    profile = resolve_profile(model)
    counter = get_counter(profile.name) if not profile.is_fallback else get_counter(model)
    planned = _plan(item, profile, counter, fidelity, allocation)
    metadata: dict[str, Any] = {"modality": item.modality, "action": planned.action, "reason": planned.reason}
    if planned.part is not None:
        metadata[MEDIA_PART] = dict(planned.part)
        metadata[MEDIA_TOKENS] = planned.tokens - counter.count(planned.text)
    if planned.reference is not None:
        ref = planned.reference
        metadata["reference"] = {
            "source": ref.source_label,
            "target": ref.target_label,
            "source_modality": ref.source_modality,
            "target_modality": ref.target_modality,
            "method": ref.method,
            "confidence": ref.confidence,
        }
    return Evidence(
        evidence_label(item.modality, item.id),
        planned.text,
        source=source,
        retrieved_at=retrieved_at,
        authority=authority,
        relevance=item.utility if relevance is None else relevance,
        metadata=metadata,
    )


def media_item_tokens(evidence: Any, text: str, counter: TokenCounter) -> int | None:
    """The vouched size of an evidence item that carries media (its text, a separator, the media); else None."""
    metadata = getattr(evidence, "metadata", None) or {}
    media = metadata.get(MEDIA_TOKENS)
    if not isinstance(media, int) or isinstance(media, bool):
        return None
    return counter.count(text) + 1 + media


def with_media_parts(content: str, kept: Any, payload: Mapping[str, Any]) -> str | list[dict[str, Any]]:
    """``content`` as text plus the media parts of the kept items, in item order (or unchanged without media)."""
    if not isinstance(kept, Sequence) or isinstance(kept, str):
        return content
    parts = []
    for item in kept:
        metadata = getattr(payload.get(str(getattr(item, "id", ""))), "metadata", None) or {}
        part = metadata.get(MEDIA_PART)
        if isinstance(part, Mapping):
            parts.append(dict(part))
    if not parts:
        return content
    return [{"type": "text", "text": content}, *parts]
