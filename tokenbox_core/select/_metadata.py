"""Scorers over ``Item.metadata``: a caller's trust value and a key/value boost.

Keys prefixed ``cupel:`` are the spec's conventions (``cupel:trust``,
``cupel:priority``, ``cupel:source-type``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tokenbox_core._sections import Item
from tokenbox_core.errors import SelectionError

__all__ = ["TRUST_KEY", "MetadataKeyScorer", "MetadataTrustScorer"]

TRUST_KEY = "cupel:trust"
# What a standard float64 parser (Rust's str::parse::<f64>) accepts: no whitespace, no underscores.
_FLOAT = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)", re.IGNORECASE)


def _parse_trust(raw: object) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return float(raw)
    if isinstance(raw, str) and _FLOAT.fullmatch(raw):
        return float(raw)
    return None


@dataclass(frozen=True)
class MetadataTrustScorer:
    """``metadata["cupel:trust"]`` (a number or a decimal string), clamped to 0..1.

    Absent, unparseable or non-finite values score ``default_score`` (in 0..1).
    """

    default_score: float = 0.5
    key: str = TRUST_KEY

    def __post_init__(self) -> None:
        value = self.default_score
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise SelectionError(f"MetadataTrustScorer: default_score must be in [0, 1], got {value!r}")

    def scores(self, items: Sequence[Item]) -> list[float]:
        out = []
        for item in items:
            value = _parse_trust(item.metadata[self.key]) if self.key in item.metadata else None
            if value is None or not math.isfinite(value):
                out.append(float(self.default_score))
            else:
                out.append(min(max(value, 0.0), 1.0))
        return out


@dataclass(frozen=True)
class MetadataKeyScorer:
    """A multiplier: ``boost`` when ``metadata[key]`` equals ``value`` (as a string), else 1.0.

    Not clamped (a boost of 1.5 scores 1.5); ``boost`` must be finite and > 0.
    """

    key: str
    value: str
    boost: float

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not isinstance(self.value, str):
            raise SelectionError(
                f"MetadataKeyScorer: key and value must be strings, got {self.key!r} and {self.value!r}"
            )
        boost = self.boost
        if isinstance(boost, bool) or not isinstance(boost, int | float) or not math.isfinite(boost) or boost <= 0:
            raise SelectionError(f"MetadataKeyScorer: boost must be a finite number > 0, got {boost!r}")

    def scores(self, items: Sequence[Item]) -> list[float]:
        out = []
        for item in items:
            raw = item.metadata.get(self.key, None)
            matched = raw is not None and (raw if isinstance(raw, str) else str(raw)) == self.value
            out.append(float(self.boost) if matched else 1.0)
        return out
