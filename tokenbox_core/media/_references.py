"""Typed cross-modal references (chapter §6.12.5): which evidence was derived from which, how, how surely.

::

    [EVIDENCE_IMG_1: Screenshot of dashboard, captured 2024-01-15T10:30:00Z]
    [EVIDENCE_TEXT_3: "The dashboard shows Q4 revenue of $12.3M" — extracted from EVIDENCE_IMG_1 via OCR]

A :class:`CrossModalReference` has a source modality, a target modality, an
extraction method and a confidence; it validates at construction (the method
must fit the modalities), and :func:`validate_references` checks a set of
references against the evidence actually present: no dangling ids, no
modality mismatch, no cycles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from tokenbox_core.errors import MediaError

__all__ = ["METHODS", "CrossModalReference", "Method", "Modality", "evidence_label", "validate_references"]

Modality = Literal["image", "audio", "video", "structured", "text"]
Method = Literal["ocr", "transcript", "caption", "render", "aggregate", "sample"]

MODALITIES: tuple[str, ...] = ("image", "audio", "video", "structured", "text")
METHODS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "ocr": (("image", "text"), ("video", "text")),
    "transcript": (("audio", "text"), ("video", "text")),
    "caption": (("image", "text"), ("audio", "text"), ("video", "text")),
    "render": (("structured", "text"),),
    "aggregate": (("structured", "text"), ("structured", "structured")),
    "sample": (("structured", "text"), ("structured", "structured")),
}
"""The extraction methods and the (source, target) modality pairs each one can link."""

_LABELS = {"image": "IMG", "audio": "AUDIO", "video": "VIDEO", "structured": "DATA", "text": "TEXT"}


def evidence_label(modality: str, evidence_id: str) -> str:
    """The pointer label of an evidence id: ``EVIDENCE_IMG_1`` for image ``1``."""
    if modality not in _LABELS:
        raise MediaError(f"unknown modality {modality!r}; use one of {', '.join(MODALITIES)}")
    return f"EVIDENCE_{_LABELS[modality]}_{evidence_id}"


@dataclass(frozen=True)
class CrossModalReference:
    """``target`` (of ``target_modality``) was extracted from ``source`` (of ``source_modality``) by ``method``."""

    source: str
    target: str
    source_modality: Modality
    target_modality: Modality
    method: Method
    confidence: float = 1.0

    def __post_init__(self) -> None:
        for name in ("source", "target"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise MediaError(f"a cross-modal reference needs a non-empty {name} id, got {value!r}")
        if self.source == self.target:
            raise MediaError(f"a cross-modal reference cannot link {self.source!r} to itself")
        for name in ("source_modality", "target_modality"):
            if getattr(self, name) not in MODALITIES:
                raise MediaError(f"{name} must be one of {', '.join(MODALITIES)}, got {getattr(self, name)!r}")
        pairs = METHODS.get(self.method)
        if pairs is None:
            raise MediaError(f"unknown extraction method {self.method!r}; use one of {', '.join(METHODS)}")
        if (self.source_modality, self.target_modality) not in pairs:
            allowed = ", ".join(f"{a}->{b}" for a, b in pairs)
            raise MediaError(
                f"method {self.method!r} cannot link {self.source_modality} to {self.target_modality} "
                f"(it links {allowed})"
            )
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, int | float) or not math.isfinite(c) or not 0 <= c <= 1:
            raise MediaError(f"confidence must be a number in [0, 1], got {c!r}")

    @property
    def source_label(self) -> str:
        return evidence_label(self.source_modality, self.source)

    @property
    def target_label(self) -> str:
        return evidence_label(self.target_modality, self.target)

    def marker(self, excerpt: str) -> str:
        """The chapter's marker for the extracted evidence, quoting ``excerpt``."""
        method = {"ocr": "OCR", "transcript": "transcription"}.get(self.method, self.method)
        return f'[{self.target_label}: "{excerpt}" — extracted from {self.source_label} via {method}]'


def validate_references(references: Iterable[CrossModalReference], present: Mapping[str, str]) -> None:
    """Check references against the evidence present (``id -> modality``).

    Raises :class:`MediaError` for a reference whose source or target is not
    present, whose modalities disagree with the evidence, or that closes a
    cycle (evidence derived, through any chain, from itself).
    """
    edges: dict[str, list[str]] = {}
    for ref in references:
        for end, modality in ((ref.source, ref.source_modality), (ref.target, ref.target_modality)):
            if end not in present:
                raise MediaError(
                    f"reference {ref.source!r} -> {ref.target!r} names {end!r}, which is not in the context "
                    f"(present: {sorted(present)}); drop the reference with its evidence"
                )
            if present[end] != modality:
                raise MediaError(f"reference says {end!r} is {modality} but the evidence is {present[end]}")
        edges.setdefault(ref.source, []).append(ref.target)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in edges.get(node, ()):
            if state.get(nxt) == 1:
                raise MediaError(f"cross-modal references form a cycle: {' -> '.join([*path, node, nxt])}")
            if state.get(nxt) is None:
                visit(nxt, [*path, node])
        state[node] = 2

    for node in sorted(edges):
        if state.get(node) is None:
            visit(node, [])
