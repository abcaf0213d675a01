"""One laid-out section and its decisions: :class:`LaidOutSection`, :class:`Action`, :class:`RemovedItem`.

Re-exported by :mod:`tokenbox_core.layout` (their public home).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from tokenbox_core._sections import Item

__all__ = ["Action", "LaidOutSection", "RemovedItem", "Status"]

Status = Literal["kept", "expanded", "compressed", "truncated", "dropped"]


@dataclass(frozen=True)
class Action:
    """One decision taken on a section: a lens, a cut, an eviction, a drop, an expansion."""

    kind: str
    name: str
    before: int
    after: int
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "before": self.before, "after": self.after, "detail": self.detail}

    def summary(self) -> str:
        """``kind:name before→after`` (sizes omitted for a section dropped without being measured)."""
        if self.name == "outranked":
            return f"{self.kind}:{self.name} (higher priorities filled the budget; not measured)"
        return f"{self.kind}:{self.name} {self.before:,}→{self.after:,}"


@dataclass(frozen=True)
class RemovedItem:
    """An item that did not make it, with the reason and the numbers behind it."""

    id: str
    section: str
    reason: str
    tokens: int
    score: float | None = None
    group: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "section": self.section,
            "reason": self.reason,
            "tokens": self.tokens,
            "score": self.score,
            "group": self.group,
        }


class LaidOutSection:
    """One section as laid out (read-only).

    Sizes: ``full_tokens`` (whole content), ``base_tokens`` (its claim before
    expansion: ``min(basis, content, max_tokens)``), ``allocated_tokens`` (what
    the layout granted it) and ``final_tokens`` (what it emits, including the
    separator that follows it).

    A section that the layout could drop without measuring it (everything
    that outranks it already fills the budget) is counted only when its
    ``full_tokens``, ``base_tokens`` or ``removed`` sizes are first read;
    ``measured`` tells whether that happened during the layout.
    """

    __slots__ = (
        "_base_tokens",
        "_full_tokens",
        "_late",
        "_removed",
        "actions",
        "allocated_tokens",
        "content",
        "critical",
        "final_tokens",
        "grow",
        "id",
        "marker",
        "measured",
        "min_tokens",
        "priority",
        "role",
        "selection",
        "shrink",
        "status",
        "text",
    )

    def __init__(
        self,
        *,
        id: str,
        status: Status,
        critical: bool,
        priority: int,
        shrink: float,
        grow: float,
        min_tokens: int,
        full_tokens: int | None,
        base_tokens: int | None,
        allocated_tokens: int,
        final_tokens: int,
        content: str | tuple[Item, ...],
        text: str,
        role: str | None = None,
        marker: str = "",
        actions: tuple[Action, ...] = (),
        removed: tuple[RemovedItem, ...] | None = (),
        selection: Mapping[str, Any] | None = None,
        late: Callable[[], tuple[int, int, tuple[RemovedItem, ...]]] | None = None,
    ) -> None:
        self.id = id
        self.status: Status = status
        self.critical = critical
        self.priority = priority
        self.shrink = shrink
        self.grow = grow
        self.min_tokens = min_tokens
        self._full_tokens = full_tokens
        self._base_tokens = base_tokens
        self.allocated_tokens = allocated_tokens
        self.final_tokens = final_tokens
        self.content = content
        self.text = text
        self.role = role
        self.marker = marker
        self.actions = actions
        self._removed = removed
        self.selection = selection
        self._late = late
        self.measured = late is None

    def __getstate__(self) -> dict[str, Any]:
        self._resolve()  # sizes counted lazily are made concrete before crossing a process boundary
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def _resolve(self) -> None:
        if self._late is not None:
            full, base, removed = self._late()
            self._full_tokens, self._base_tokens, self._removed = full, base, removed
            self._late = None

    @property
    def full_tokens(self) -> int:
        self._resolve()
        assert self._full_tokens is not None
        return self._full_tokens

    @property
    def base_tokens(self) -> int:
        self._resolve()
        assert self._base_tokens is not None
        return self._base_tokens

    @property
    def removed(self) -> tuple[RemovedItem, ...]:
        self._resolve()
        return self._removed or ()

    @property
    def refilled(self) -> bool:
        """True when refill gave back content compression had taken (an ``Action`` of kind ``"refill"``)."""
        return any(a.kind == "refill" for a in self.actions)

    @property
    def compression_ratio(self) -> float:
        """final / full (1.0 when nothing was lost)."""
        return 1.0 if self.full_tokens == 0 else self.final_tokens / self.full_tokens

    def __repr__(self) -> str:
        return (
            f"LaidOutSection(id={self.id!r}, status={self.status!r}, final_tokens={self.final_tokens}, "
            f"allocated_tokens={self.allocated_tokens}, critical={self.critical})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LaidOutSection):
            return NotImplemented
        return self.to_dict() == other.to_dict() and self.content == other.content

    __hash__ = None  # type: ignore[assignment]

    def decisions(self) -> dict[str, Any]:
        """The deterministic part of this section's record (no content)."""
        out = {
            "id": self.id,
            "status": self.status,
            "critical": self.critical,
            "priority": self.priority,
            "shrink": self.shrink,
            "grow": self.grow,
            "min_tokens": self.min_tokens,
            "full_tokens": self.full_tokens,
            "base_tokens": self.base_tokens,
            "allocated_tokens": self.allocated_tokens,
            "final_tokens": self.final_tokens,
            "actions": [a.to_dict() for a in self.actions],
            "removed": [r.to_dict() for r in self.removed],
        }
        if self.selection is not None:
            out["selection"] = dict(self.selection)
        return out

    def to_dict(self) -> dict[str, Any]:
        out = self.decisions()
        out["role"] = self.role
        out["text"] = self.text
        if isinstance(self.content, tuple):
            out["items"] = [it.id for it in self.content]
        return out
