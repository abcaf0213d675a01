"""What a calibration is, and the counter it makes (see :mod:`tokenbox_core.models._calibration`).

:class:`Calibration` is a model's factor over a base count; :class:`CalibratedCounter`
applies it as ``ceil(base count × factor)`` and remembers, by content hash, the
counts the provider reported for the texts and requests it was fed, so that it
never counts those below what was billed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from tokenbox_core.models._profile import ModelProfile
from tokenbox_core.tokens._base import Keep, TokenCounter
from tokenbox_core.tokens._counters import _CachedCounter

__all__ = ["CalibratedCounter", "Calibration", "Observation", "content_key"]


@dataclass(frozen=True, order=True)
class Observation:
    """One request: its base ``units``, the ``fixed`` overhead and the ``reported`` input tokens; ``content``
    hashes what was sent (``"t…"`` for a text, ``"m…"`` for messages)."""

    model: str
    id: str
    units: int
    fixed: int
    reported: int
    content: str = ""

    @property
    def needed(self) -> Fraction:
        """The smallest factor that keeps this request's calibrated count at or above the reported one."""
        return Fraction(max(0, self.reported - self.fixed), self.units) if self.units else Fraction(0)


@dataclass(frozen=True)
class Calibration:
    """A model's calibration: ``factor`` over the base count, from ``observations`` requests.

    ``ratio`` is the pooled reported/estimated ratio (1.0 with no observations),
    ``margin`` the factor's excess over it (the prior error bound with none).
    """

    model: str
    base: str
    observations: int
    ratio: float
    margin: float
    factor: Fraction

    def note(self) -> str:
        """A sentence for people: what the counts are and how they were calibrated."""
        if not self.observations:
            return (
                f"counts for {self.model} are estimates: {self.base} counts plus a {self.margin:.0%} margin "
                f"(no reported usage observed yet)"
            )
        return (
            f"counts for {self.model} are {self.base} counts × {float(self.factor):.4f}, calibrated on "
            f"{self.observations} reported request{'s' if self.observations != 1 else ''} (reported/estimated "
            f"{self.ratio:.3f}, +{self.margin:.1%} margin); never below a count the provider reported"
        )


def content_key(sent: str | list[Any]) -> str:
    """The hash a text (``"t"`` + 32 hex digits) or a list of messages (``"m"`` + …) is remembered by."""
    if isinstance(sent, str):
        return "t" + hashlib.sha256(sent.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    from tokenbox_core.tokens._messages import canonical_json

    return "m" + hashlib.sha256(canonical_json(sent).encode("utf-8", "surrogatepass")).hexdigest()[:32]


class _Measure:
    """A private counter for measuring observations: the base count (``scale``) or nothing, with the model's
    profile so that media parts cost what they cost for the calibrated counter."""

    def __init__(self, base: TokenCounter, profile: ModelProfile | None, scale: bool) -> None:
        self.base, self.profile, self.scale = base, profile, scale
        self.name = f"measure:{base.name}" if scale else "zero"

    def count(self, text: str) -> int:
        return self.base.count(text) if self.scale else 0

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:  # pragma: no cover - never cut
        return text


class CalibratedCounter(_CachedCounter):
    """``ceil(base count × factor)``, and never less than what the provider reported for a text it was fed.

    Made by :meth:`UsageCalibrator.counter`; immutable (a snapshot of the
    calibration when it was made), carries the model's profile as ``.profile``.
    :meth:`count_request` counts chat messages the same way, never below what
    was reported for that very request.
    """

    approximate = True

    def __init__(
        self,
        calibration: Calibration,
        base: TokenCounter,
        profile: ModelProfile | None,
        seen: Mapping[str, int] | None = None,
    ) -> None:
        self.calibration = calibration
        self.base = base
        self.profile = profile
        self.factor = calibration.factor
        self._seen = dict(seen or {})  # content hash -> the largest count reported for that content
        self.name = f"calibrated:{calibration.model}×{float(self.factor):.4f}"
        if self._seen:
            digest = hashlib.sha256(json.dumps(sorted(self._seen.items())).encode()).hexdigest()[:12]
            self.name += f"+{len(self._seen)}seen:{digest}"
        self.counting_note = calibration.note()
        super().__init__()
        self._cache_key = f"{self.name}:{calibration.base}:{self.factor.numerator}/{self.factor.denominator}"

    def _scaled(self, units: int) -> int:
        return -((-units * self.factor.numerator) // self.factor.denominator)

    def _raw_count(self, text: str) -> int:
        estimate = self._scaled(self.base.count(text))
        if self._seen:
            return max(estimate, self._seen.get(content_key(text), 0))
        return estimate

    def count_request(self, messages: Sequence[Any]) -> int:
        """The chat messages' count (:func:`~tokenbox_core.tokens.count_message_tokens` with this counter), never
        below what the provider reported for this very request."""
        from tokenbox_core.tokens._messages import count_message_tokens

        estimate = count_message_tokens(messages, self)
        return max(estimate, self._seen.get(content_key(list(messages)), 0))

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        limit = max(0, int(limit))
        if self.count(text) <= limit:
            return text
        units = limit * self.factor.denominator // self.factor.numerator if self.factor else limit
        cut = self.base.truncate(text, units, keep=keep)
        while cut and self.count(cut) > limit:  # a cut that was itself observed above the estimate
            cut = self.base.truncate(cut, max(0, self.base.count(cut) - 1), keep=keep)
        return cut
