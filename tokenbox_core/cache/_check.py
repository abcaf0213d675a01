"""A live session against its simulation: what the provider reported next to what the simulator expected.

:func:`~tokenbox_core.cache.simulate_cache` takes ``reported=`` (one usage per
request, any shape :func:`~tokenbox_core.models.read_usage` reads) and pairs
each with its simulated turn as a :class:`TurnCheck`.  Sizes in the simulation
come from its counter, the provider's from its tokenizer, so the checks compare
*cached shares* (cached tokens over prompt tokens) and list the absolute
figures beside them; a share off by more than the tolerance, or a cache-miss
reason that disagrees with the simulator's, is a difference worth reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenbox_core.errors import UsageReportError
from tokenbox_core.models._usage import ReportedUsage, read_usage

if TYPE_CHECKING:
    from tokenbox_core.cache._simulate import TurnStats

__all__ = ["TurnCheck", "pair_reported"]


@dataclass(frozen=True)
class TurnCheck:
    """One request: the simulated turn and the usage the provider reported for it."""

    simulated: TurnStats
    reported: ReportedUsage

    @property
    def turn(self) -> int:
        return self.simulated.turn

    @property
    def prompt_delta(self) -> int | None:
        """Reported minus simulated prompt tokens (the two counters differ; ``None`` if not reported)."""
        got = self.reported.input_tokens
        return None if got is None else got - self.simulated.prompt_tokens

    @property
    def cached_delta(self) -> int | None:
        got = self.reported.cached_tokens
        return None if got is None else got - self.simulated.cached_tokens

    @property
    def written_delta(self) -> int | None:
        got = self.reported.written_tokens
        return None if got is None else got - self.simulated.written_tokens

    @property
    def reported_share(self) -> float | None:
        """Cached share of the prompt as reported (``None`` without both figures)."""
        total, cached = self.reported.input_tokens, self.reported.cached_tokens
        if total is None or cached is None:
            return None
        return cached / total if total else 0.0

    @property
    def share_delta(self) -> float | None:
        """Reported minus simulated cached share."""
        share = self.reported_share
        return None if share is None else share - self.simulated.cached_share

    @property
    def reason_agrees(self) -> bool | None:
        """Whether the provider's cache-miss reason is the simulator's (``None`` when none was reported)."""
        if self.reported.miss_reason is None:
            return None
        return self.reported.miss_reason == self.simulated.miss_reason

    def differs(self, tolerance: float = 0.05) -> bool:
        """True when the cached share is off by more than ``tolerance`` or the miss reasons disagree."""
        delta = self.share_delta
        return (delta is not None and abs(delta) > tolerance) or self.reason_agrees is False

    def describe(self) -> str:
        """One line for people."""
        sim = self.simulated
        rep = self.reported
        parts = [f"turn {sim.turn}:"]
        if rep.cached_tokens is not None and rep.input_tokens is not None:
            parts.append(
                f"provider cached {rep.cached_tokens:,} of {rep.input_tokens:,} ({self.reported_share:.0%}), "
                f"simulation {sim.cached_tokens:,} of {sim.prompt_tokens:,} ({sim.cached_share:.0%})"
            )
        elif rep.input_tokens is not None:
            parts.append(f"provider counted {rep.input_tokens:,} input tokens, simulation {sim.prompt_tokens:,}")
        if rep.written_tokens is not None:
            parts.append(f"written {rep.written_tokens:,} vs {sim.written_tokens:,}")
        if rep.miss_reason is not None:
            missed = f" (~{rep.missed_tokens:,} tokens)" if rep.missed_tokens is not None else ""
            parts.append(f"provider says {rep.miss_reason}{missed}, simulation says {sim.miss_reason or 'no miss'}")
        return " ".join(parts[:1]) + " " + "; ".join(parts[1:])

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "reported_input_tokens": self.reported.input_tokens,
            "reported_cached_tokens": self.reported.cached_tokens,
            "reported_written_tokens": self.reported.written_tokens,
            "reported_miss_reason": self.reported.miss_reason,
            "simulated_miss_reason": self.simulated.miss_reason,
            "prompt_delta": self.prompt_delta,
            "cached_delta": self.cached_delta,
            "written_delta": self.written_delta,
            "share_delta": None if self.share_delta is None else round(self.share_delta, 6),
        }


def pair_reported(turns: Sequence[TurnStats], reported: Sequence[Any]) -> tuple[TurnCheck, ...]:
    """Pair one reported usage with each simulated turn, in order."""
    if isinstance(reported, str | bytes) or not isinstance(reported, Sequence):
        raise UsageReportError(
            f"reported usage must be a list with one entry per request, got {type(reported).__name__}"
        )
    if len(reported) != len(turns):
        raise UsageReportError(
            f"reported usage has {len(reported)} entries but the transcript has {len(turns)} requests (one per "
            f"user message): pass one usage per request, in order"
        )
    return tuple(TurnCheck(t, read_usage(r)) for t, r in zip(turns, reported, strict=True))
