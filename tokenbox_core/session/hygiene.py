"""Active window hygiene (chapter §6.8): relevance decay, the eviction order of Algorithm 6.5, staleness signals.

Decay models map an age to a relevance in [0, 1] and can measure age in turns
or in seconds.  :func:`evict` scores evictable items (tiers 2–4) by
``(1 − relevance) × token_cost`` and removes the highest scores first until the
target is met; pinned items are immune.  Evicted turns are archived (an
eviction event in the store), never lost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tokenbox_core.errors import SessionError
from tokenbox_core.session.model import Turn
from tokenbox_core.session.store import SessionStore
from tokenbox_core.tokens import canonical_json

__all__ = [
    "Decay",
    "EvictionResult",
    "ExponentialDecay",
    "HygieneItem",
    "SigmoidDecay",
    "Staleness",
    "StepDecay",
    "evict",
    "staleness_signals",
]

Unit = Literal["turns", "seconds"]


class Decay(Protocol):
    """A relevance decay model: ``relevance(age)`` in [0, 1]; ``reactivates`` measures age from the last reference."""

    @property
    def unit(self) -> Unit: ...

    @property
    def reactivates(self) -> bool: ...

    def relevance(self, age: float) -> float: ...


def _check_unit(unit: str) -> None:
    if unit not in ("turns", "seconds"):
        raise SessionError(f"unit must be 'turns' or 'seconds', got {unit!r}")


@dataclass(frozen=True)
class ExponentialDecay:
    """``r = e^(−λ·age)`` (§6.8.2); tool outputs warrant a larger ``rate`` than user corrections."""

    rate: float = 0.1
    unit: Unit = "turns"
    reactivates: bool = False

    def __post_init__(self) -> None:
        _check_unit(self.unit)
        if not math.isfinite(self.rate) or self.rate < 0:
            raise SessionError(f"rate must be a finite number >= 0, got {self.rate}")

    def relevance(self, age: float) -> float:
        return math.exp(-self.rate * max(0.0, age))


@dataclass(frozen=True)
class StepDecay:
    """Full relevance while referenced within ``window``; ``floor`` after that (§6.8.2, step with reactivation).

    Age counts from the item's last reference, so referencing it again restores full relevance.
    """

    window: float = 10
    floor: float = 0.1
    unit: Unit = "turns"
    reactivates: bool = True

    def __post_init__(self) -> None:
        _check_unit(self.unit)
        if self.window < 0 or not 0 <= self.floor <= 1:
            raise SessionError(f"window must be >= 0 and floor in [0, 1], got window={self.window}, floor={self.floor}")

    def relevance(self, age: float) -> float:
        return 1.0 if age <= self.window else self.floor


@dataclass(frozen=True)
class SigmoidDecay:
    """``r = 1 / (1 + e^(κ·(age − h)))``: relevant for about ``half_life``, then a drop as steep as ``steepness``."""

    half_life: float = 20
    steepness: float = 0.5
    unit: Unit = "turns"
    reactivates: bool = False

    def __post_init__(self) -> None:
        _check_unit(self.unit)
        if self.half_life < 0 or self.steepness <= 0:
            raise SessionError(
                f"half_life must be >= 0 and steepness > 0, got half_life={self.half_life}, steepness={self.steepness}"
            )

    def relevance(self, age: float) -> float:
        x = self.steepness * (age - self.half_life)
        return 0.0 if x > 700 else 1.0 / (1.0 + math.exp(x))


@dataclass(frozen=True)
class HygieneItem:
    """A context item under hygiene: size, tier, when it entered and was last referenced, pinning.

    ``kind`` selects a decay model when :func:`evict` is given one per kind (e.g. ``"tool"`` decays faster).
    """

    id: str
    tokens: int
    tier: int = 4
    inserted_turn: int = 0
    inserted_at: float = 0.0
    last_referenced_turn: int | None = None
    last_referenced_at: float | None = None
    pinned: bool = False
    kind: str = "default"
    base_relevance: float = 1.0

    def relevance(self, decay: Decay, *, turn: int, now: float | None = None) -> float:
        """Current relevance under ``decay`` at ``turn`` (or ``now``, in seconds, for time-based decay)."""
        if decay.unit == "seconds":
            if now is None:
                raise SessionError("a decay in seconds needs now= (the current time); pass it explicitly")
            start = self.inserted_at
            if decay.reactivates and self.last_referenced_at is not None:
                start = max(start, self.last_referenced_at)
            age = now - start
        else:
            begin = self.inserted_turn
            if decay.reactivates and self.last_referenced_turn is not None:
                begin = max(begin, self.last_referenced_turn)
            age = float(turn - begin)
        return self.base_relevance * decay.relevance(age)


@dataclass(frozen=True)
class EvictionResult:
    """What Algorithm 6.5 kept and evicted, with each candidate's eviction score."""

    kept: tuple[HygieneItem, ...]
    evicted: tuple[HygieneItem, ...]
    scores: Mapping[str, float]
    total_tokens: int


def evict(
    items: Sequence[HygieneItem],
    target_tokens: int,
    *,
    turn: int,
    decay: Decay | Mapping[str, Decay] = ExponentialDecay(),
    now: float | None = None,
    store: SessionStore | None = None,
    session_id: str | None = None,
) -> EvictionResult:
    """Algorithm 6.5: evict tier 2–4 items by ``(1 − relevance) × token_cost`` (highest first) until the total
    is at most ``target_tokens``; pinned items are immune.  Ties: larger cost first, then input order.

    With ``store`` and ``session_id``, the evicted ids are recorded as an eviction event (``"hygiene"``).
    """
    if target_tokens < 0:
        raise SessionError(f"target_tokens must be >= 0, got {target_tokens}")

    def model(item: HygieneItem) -> Decay:
        if isinstance(decay, Mapping):
            found = decay.get(item.kind, decay.get("default"))
            if found is None:
                raise SessionError(f"no decay model for kind {item.kind!r}; add it or a 'default' entry")
            return found
        return decay

    scores = {
        it.id: (1.0 - it.relevance(model(it), turn=turn, now=now)) * it.tokens for it in items if it.tier in (2, 3, 4)
    }
    order = sorted(
        (i for i, it in enumerate(items) if it.id in scores),
        key=lambda i: (-scores[items[i].id], -items[i].tokens, i),
    )
    total = sum(it.tokens for it in items)
    gone: set[int] = set()
    for i in order:
        if total <= target_tokens:
            break
        if items[i].pinned:
            continue
        gone.add(i)
        total -= items[i].tokens
    evicted = tuple(items[i] for i in sorted(gone, key=order.index))
    if store is not None and session_id is not None and evicted:
        store.record_eviction(session_id, [it.id for it in evicted], "hygiene")
    kept = tuple(it for i, it in enumerate(items) if i not in gone)
    return EvictionResult(kept, evicted, scores, total)


@dataclass(frozen=True)
class Staleness:
    """§6.8.4's staleness signals for one turn."""

    turn_id: str
    age: int
    references: int
    last_referenced_turn: int | None = None
    superseded_by: str | None = None
    phase_changed: bool = False
    invalidated_by: str | None = None
    signals: tuple[str, ...] = field(default=())


def _options(turn: Turn) -> Mapping[str, Any]:
    opts = turn.message.get("tokenbox")
    return opts if isinstance(opts, Mapping) else {}


def _supersession_key(turn: Turn, calls: Mapping[str, str]) -> str | None:
    key = _options(turn).get("key")
    if key is not None:
        return f"key:{key}"
    if turn.role == "tool" and turn.message.get("tool_call_id") in calls:
        return f"call:{calls[str(turn.message['tool_call_id'])]}"
    return None


def staleness_signals(turns: Sequence[Turn], *, phase: str | None = None) -> dict[str, Staleness]:
    """Staleness signals (§6.8.4) of every turn, computed from the archive alone.

    * age — turns since the turn;
    * references — later turns that mention its id or its tool-call id, or list it in ``tokenbox.references``;
    * supersession — a newer turn with the same ``tokenbox.key``, or a newer result of the same tool call
      (same function and arguments);
    * task-phase change — its ``tokenbox.phase`` differs from ``phase``;
    * error invalidation — a later turn lists it in ``tokenbox.corrects``/``tokenbox.invalidates``, or a later
      result of the same tool call is an error (``tokenbox.error``) — then the earlier result is suspect too.
    """
    calls: dict[str, str] = {}
    for t in turns:
        for call in t.message.get("tool_calls") or ():
            fn = call.get("function", call)
            calls[str(call.get("id"))] = canonical_json([fn.get("name"), fn.get("arguments", fn.get("args"))])
    last = turns[-1].seq if turns else 0
    refs: dict[str, list[int]] = {t.turn_id: [] for t in turns}
    superseded: dict[str, str] = {}
    invalidated: dict[str, str] = {}
    latest_by_key: dict[str, Turn] = {}
    mentions: dict[str, str] = {t.turn_id: t.turn_id for t in turns}
    for t in turns:
        if t.role == "tool" and t.message.get("tool_call_id"):
            mentions[str(t.message["tool_call_id"])] = t.turn_id
    for t in turns:
        opts = _options(t)
        text = t.text
        cited = {mentions[w] for w in _tokens(text) if w in mentions and mentions[w] != t.turn_id}
        cited.update(str(r) for r in opts.get("references", ()) if str(r) in refs)
        for c in sorted(cited):
            refs[c].append(t.seq)
        for bad in (*opts.get("corrects", ()), *opts.get("invalidates", ())):
            invalidated.setdefault(str(bad), t.turn_id)
        key = _supersession_key(t, calls)
        if key is not None:
            prev = latest_by_key.get(key)
            if prev is not None:
                superseded.setdefault(prev.turn_id, t.turn_id)
                if opts.get("error"):
                    invalidated.setdefault(prev.turn_id, t.turn_id)
            latest_by_key[key] = t
    out = {}
    for t in turns:
        item_phase = _options(t).get("phase")
        changed = phase is not None and item_phase is not None and item_phase != phase
        signals = tuple(
            name
            for name, on in (
                ("superseded", t.turn_id in superseded),
                ("phase_changed", changed),
                ("invalidated", t.turn_id in invalidated),
                ("unreferenced", not refs[t.turn_id]),
            )
            if on
        )
        out[t.turn_id] = Staleness(
            turn_id=t.turn_id,
            age=last - t.seq,
            references=len(refs[t.turn_id]),
            last_referenced_turn=refs[t.turn_id][-1] if refs[t.turn_id] else None,
            superseded_by=superseded.get(t.turn_id),
            phase_changed=changed,
            invalidated_by=invalidated.get(t.turn_id),
            signals=signals,
        )
    return out


def _tokens(text: str) -> set[str]:
    out = set()
    for raw in text.replace('"', " ").replace("'", " ").replace(",", " ").replace("(", " ").replace(")", " ").split():
        out.add(raw.strip(".;:[]"))
    return out
