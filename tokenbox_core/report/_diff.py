"""Layout diffs (context-engineering chapter §6.11.3): what changed from layout *a* to layout *b*."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tokenbox_core.report._style import COLOURS, STYLE, page

if TYPE_CHECKING:
    from tokenbox_core.layout import LaidOutSection, Layout

__all__ = ["LayoutDiff", "SectionDiff", "diff_layouts"]


@dataclass(frozen=True)
class SectionDiff:
    """How one section changed from layout *a* to layout *b* (``None`` status: absent)."""

    id: str
    status_a: str | None
    status_b: str | None
    tokens_a: int
    tokens_b: int
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    text_changed: bool = False
    reasons: Mapping[str, str] = field(default_factory=dict)
    """Why each removed item is missing from *b* (its ``RemovedItem.reason`` there), when *b* recorded one."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reasons", MappingProxyType(dict(self.reasons)))

    @property
    def token_delta(self) -> int:
        return self.tokens_b - self.tokens_a

    @property
    def changed(self) -> bool:
        return (
            self.status_a != self.status_b
            or self.tokens_a != self.tokens_b
            or bool(self.added or self.removed or self.modified)
            or self.text_changed
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status_a": self.status_a,
            "status_b": self.status_b,
            "tokens_a": self.tokens_a,
            "tokens_b": self.tokens_b,
            "token_delta": self.token_delta,
            "added": list(self.added),
            "removed": list(self.removed),
            "modified": list(self.modified),
            "text_changed": self.text_changed,
            "reasons": dict(self.reasons),
        }


@dataclass(frozen=True)
class LayoutDiff:
    """Context diff after the context-engineering chapter §6.11.3.

    Per section (the union of both layouts, *a*'s order first): items added,
    removed and modified (same id, different content), the token delta and
    both statuses; overall: the total token delta and each layout's
    utilisation of its effective budget.
    """

    sections: tuple[SectionDiff, ...]
    total_a: int
    total_b: int
    utilisation_a: float
    utilisation_b: float
    fingerprint_a: str
    fingerprint_b: str
    extra: dict[str, Any] = field(default_factory=dict)
    max_a: int = 0
    max_b: int = 0

    @property
    def total_token_delta(self) -> int:
        return self.total_b - self.total_a

    @property
    def identical(self) -> bool:
        return self.fingerprint_a == self.fingerprint_b

    @property
    def sections_added(self) -> tuple[str, ...]:
        return tuple(d.id for d in self.sections if d.status_a is None)

    @property
    def sections_removed(self) -> tuple[str, ...]:
        return tuple(d.id for d in self.sections if d.status_b is None)

    @property
    def changed(self) -> tuple[SectionDiff, ...]:
        """The section diffs with any change."""
        return tuple(d for d in self.sections if d.changed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_a": self.total_a,
            "total_b": self.total_b,
            "max_a": self.max_a,
            "max_b": self.max_b,
            "total_token_delta": self.total_token_delta,
            "utilisation_a": round(self.utilisation_a, 6),
            "utilisation_b": round(self.utilisation_b, 6),
            "fingerprint_a": self.fingerprint_a,
            "fingerprint_b": self.fingerprint_b,
            "identical": self.identical,
            "sections_added": list(self.sections_added),
            "sections_removed": list(self.sections_removed),
            "sections": [d.to_dict() for d in self.sections],
        }

    def __str__(self) -> str:
        lines = [
            f"layout diff: {self.total_a:,} → {self.total_b:,} tokens ({self.total_token_delta:+,}); "
            f"utilisation {self.utilisation_a:.1%} → {self.utilisation_b:.1%}"
        ]
        if self.identical:
            lines.append("identical (same fingerprint)")
        elif not self.changed:
            lines.append("no section changed (the budget or counter differs)")
        for d in self.changed:
            lines.append(
                f"  {d.id}: {d.status_a or '(absent)'} → {d.status_b or '(absent)'}  "
                f"{d.tokens_a:,} → {d.tokens_b:,} ({d.token_delta:+,})"
            )
            for label, ids in (("added", d.added), ("removed", d.removed), ("modified", d.modified)):
                if ids:
                    shown = [f"{i} ({d.reasons[i]})" if label == "removed" and i in d.reasons else i for i in ids]
                    lines.append(f"    {label}: {', '.join(shown)}")
            if d.text_changed and not (d.added or d.removed or d.modified):
                lines.append("    text changed")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for d in self.sections:
            delta_cls = "tb-plus" if d.token_delta > 0 else "tb-minus" if d.token_delta < 0 else ""
            removed = ", ".join(f"{i} ({d.reasons[i]})" if i in d.reasons else i for i in d.removed)
            sw_a = f'<span class="tb-sw" style="background:{COLOURS[d.status_a]}"></span>' if d.status_a else ""
            sw_b = f'<span class="tb-sw" style="background:{COLOURS[d.status_b]}"></span>' if d.status_b else ""
            row_cls = "" if d.changed else ' class="tb-same"'
            rows.append(
                f"<tr{row_cls}><td><code>{escape(d.id)}</code></td>"
                f"<td>{sw_a}{escape(d.status_a or '(absent)')}</td><td>{sw_b}{escape(d.status_b or '(absent)')}</td>"
                f'<td class="n">{d.tokens_a:,}</td><td class="n">{d.tokens_b:,}</td>'
                f'<td class="n {delta_cls}">{d.token_delta:+,}</td>'
                f"<td>{escape(', '.join(d.added))}</td><td>{escape(removed)}</td>"
                f"<td>{escape(', '.join(d.modified))}</td></tr>"
            )
        verdict = " · identical (same fingerprint)" if self.identical else ""
        return (
            f'<div class="tokenbox-report tokenbox-diff">{STYLE}'
            f'<div class="tb-head"><strong>Layout diff</strong>: {self.total_a:,} → {self.total_b:,} tokens '
            f"({self.total_token_delta:+,}) · utilisation {self.utilisation_a:.1%} → {self.utilisation_b:.1%}"
            f" · fingerprints <code>{self.fingerprint_a[:12]}</code> → <code>{self.fingerprint_b[:12]}</code>"
            f"{verdict}</div>"
            '<table class="tb-diff"><thead><tr><th>section</th><th>status a</th><th>status b</th>'
            '<th class="n">tokens a</th><th class="n">tokens b</th><th class="n">Δ</th><th>added</th>'
            f"<th>removed</th><th>modified</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )

    def to_html(self, path: str | None = None) -> str:
        """The diff as a complete HTML document; written to ``path`` when given."""
        doc = page("TokenBox layout diff", self._repr_html_())
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(doc)
        return doc


def _items(s: LaidOutSection | None) -> dict[str, str]:
    if s is None or not isinstance(s.content, tuple):
        return {}
    return {it.id: it.content for it in s.content}


def diff_layouts(a: Layout, b: Layout) -> LayoutDiff:
    """Sections and items added, removed and changed, token deltas and utilisation of each."""
    a_by = {s.id: s for s in a.sections}
    b_by = {s.id: s for s in b.sections}
    ids = [s.id for s in a.sections] + [s.id for s in b.sections if s.id not in a_by]
    diffs = []
    for sid in ids:
        sa, sb = a_by.get(sid), b_by.get(sid)
        ia, ib = _items(sa), _items(sb)
        removed = tuple(k for k in ia if k not in ib)
        why = {r.id: r.reason for r in sb.removed} if sb is not None else {}
        diffs.append(
            SectionDiff(
                id=sid,
                status_a=sa.status if sa else None,
                status_b=sb.status if sb else None,
                tokens_a=sa.final_tokens if sa else 0,
                tokens_b=sb.final_tokens if sb else 0,
                added=tuple(k for k in ib if k not in ia),
                removed=removed,
                modified=tuple(k for k in ib if k in ia and ia[k] != ib[k]),
                text_changed=(sa.text if sa else "") != (sb.text if sb else ""),
                reasons={k: why[k] for k in removed if k in why},
            )
        )
    return LayoutDiff(
        sections=tuple(diffs),
        total_a=a.total_tokens,
        total_b=b.total_tokens,
        utilisation_a=a.utilisation,
        utilisation_b=b.utilisation,
        fingerprint_a=a.fingerprint,
        fingerprint_b=b.fingerprint,
        max_a=a.max_tokens,
        max_b=b.max_tokens,
    )
