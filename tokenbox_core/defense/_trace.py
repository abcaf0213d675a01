"""What defensive compilation records (chapter §6.9.3; the compile trace of §6.4.2).

One :class:`InputEvent` per sanitised input — its trust level, what the
sanitiser removed, the detection score and findings, the action taken, the
length-limit cut, the boundary — and one :class:`DefenseReport` per compile
holding them with the key's origin, the canary, the metric and the
validation result.  ``to_dict()`` gives the JSON the trace and report embed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tokenbox_core.defense._boundary import BoundaryKey
from tokenbox_core.defense._detector import Finding

__all__ = ["DefenseReport", "InputEvent", "Wrapped"]


@dataclass(frozen=True)
class InputEvent:
    """One input's passage through phases 1-3.

    Attributes:
        id: the section id, or ``section/item`` for an item of a list section.
        source: the source type (``"tool"``, ``"retrieval"``, ``"user"``, ...).
        trust: the trust level's value (``"trusted"``, ``"semi_trusted"``, ``"untrusted"``).
        action: ``"trusted"`` (passed through), ``"kept"``, ``"allowed"`` (above
            threshold, kept by policy), ``"quarantined"`` or ``"rejected"``.
        score: detection score (0 for trusted text, which is not scored).
        threshold: the source's threshold.
        findings: the detector's evidence.
        sanitized: removed characters by class, offsets, normalisation.
        neutralised: boundary-looking strings neutralised.
        cut_tokens: tokens removed by the source's length limit.
        label: the block label (``None`` when not wrapped).
        token: the boundary token (``None`` when not wrapped).
        spotlight: the spotlighting applied (``"none"`` when not wrapped).
    """

    id: str
    source: str
    trust: str
    action: str
    score: float = 0.0
    threshold: float = 0.0
    findings: tuple[Finding, ...] = ()
    sanitized: dict[str, Any] = field(default_factory=dict)
    neutralised: int = 0
    cut_tokens: int = 0
    label: str | None = None
    token: str | None = None
    spotlight: str = "none"

    @property
    def wrapped(self) -> bool:
        """True when the input sits inside boundary markers."""
        return self.token is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for the trace."""
        return {
            "id": self.id,
            "source": self.source,
            "trust": self.trust,
            "action": self.action,
            "score": round(self.score, 4),
            "threshold": self.threshold,
            "findings": [f.to_dict() for f in self.findings],
            "sanitized": self.sanitized,
            "neutralised": self.neutralised,
            "cut_tokens": self.cut_tokens,
            "label": self.label,
            "spotlight": self.spotlight,
        }


@dataclass(frozen=True)
class Wrapped:
    """Where a wrapped input lives in the defended sections, for validation.

    ``kind`` is ``"text"`` (three sections: open marker, content, close marker)
    or ``"item"`` (the markers are inside the item's content).
    """

    event: InputEvent
    kind: str
    section_id: str
    open_id: str | None
    close_id: str | None
    open: str
    close: str
    scanned: str


@dataclass
class DefenseReport:
    """Everything defensive compilation decided for one compile (goes into the trace).

    ``surface`` and ``surface_ratio`` (§6.9.4) and ``violations`` are filled in
    by :func:`~tokenbox_core.defense._validate.finish` after the layout.
    """

    key: BoundaryKey
    input_hash: str
    spotlight: str
    events: list[InputEvent] = field(default_factory=list)
    wrapped: list[Wrapped] = field(default_factory=list)
    trusted: dict[str, str] = field(default_factory=dict)
    canary: str | None = None
    statement: str | None = None
    statement_id: str | None = None
    surface: float | None = None
    surface_ratio: float | None = None
    violations: list[str] = field(default_factory=list)
    leak_ngram: int = 6
    leak_threshold: float = 0.2

    @property
    def boundaries(self) -> tuple[str, ...]:
        """Every boundary marker emitted (open and close), for output checks."""
        return tuple(m for w in self.wrapped for m in (w.open, w.close))

    @property
    def quarantined(self) -> tuple[str, ...]:
        """Ids of quarantined inputs."""
        return tuple(e.id for e in self.events if e.action == "quarantined")

    def trust_levels(self) -> dict[str, str]:
        """Input id -> trust level value (the layout carries these into the report)."""
        return {e.id: e.trust for e in self.events}

    def _repr_html_(self) -> str:
        from tokenbox_core.defense._html import defense_html

        return defense_html(self)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for the trace (no key, no canary value)."""
        return {
            "key_origin": self.key.origin,
            "key_note": self.key.note,
            "spotlight": self.spotlight,
            "canary": self.canary is not None,
            "hierarchy_statement": self.statement is not None,
            "events": [e.to_dict() for e in self.events],
            "quarantined": list(self.quarantined),
            "injection_surface": self.surface,
            "injection_surface_ratio": self.surface_ratio,
            "violations": list(self.violations),
        }
