"""Visual reports: the layout's HTML (a stacked budget bar, a table, removed items) and layout diffs.

Everything is self-contained HTML and inline SVG: no script or stylesheet is
fetched from anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenbox_core.layout import LaidOutSection, Layout

__all__ = ["LayoutDiff", "SectionDiff", "diff_layouts", "layout_html"]

COLOURS = {
    "critical": "#4c6ef5",
    "kept": "#37b24d",
    "expanded": "#0ca678",
    "compressed": "#f59f00",
    "truncated": "#f76707",
    "dropped": "#adb5bd",
    "free": "#f1f3f5",
}


def _colour_key(s: LaidOutSection) -> str:
    return "critical" if s.critical and s.status != "dropped" else s.status


def budget_bar_svg(layout: Layout, width: int = 720, height: int = 28) -> str:
    """A stacked bar: one segment per emitted section, coloured by status, then free space."""
    total = max(layout.max_tokens, layout.total_tokens, 1)
    x = 0.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="token budget: {layout.total_tokens} of {layout.max_tokens}">'
    ]
    for s in layout.sections:
        if s.final_tokens <= 0:
            continue
        w = width * s.final_tokens / total
        title = escape(f"{s.id}: {s.final_tokens:,} tokens ({s.status}{', critical' if s.critical else ''})")
        parts.append(
            f'<rect class="seg" x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" '
            f'fill="{COLOURS[_colour_key(s)]}" stroke="#fff" stroke-width="1"><title>{title}</title></rect>'
        )
        x += w
    if x < width:
        free = max(0, layout.max_tokens - layout.total_tokens)
        parts.append(
            f'<rect x="{x:.2f}" y="0" width="{width - x:.2f}" height="{height}" fill="{COLOURS["free"]}">'
            f"<title>free: {free:,} tokens</title></rect>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    items = "".join(
        f'<span style="margin-right:12px"><span style="display:inline-block;width:10px;height:10px;'
        f'background:{c};margin-right:4px"></span>{k}</span>'
        for k, c in COLOURS.items()
    )
    return f'<div style="font-size:12px;margin:4px 0 8px">{items}</div>'


def layout_html(layout: Layout, *, standalone: bool = False) -> str:
    """The layout as HTML: a budget bar, a legend, a table and the removed items."""
    rows = []
    for s in layout.sections:
        notes = "; ".join(f"{a.kind}:{a.name} {a.before}→{a.after}" for a in s.actions)
        rows.append(
            "<tr>"
            f"<td>{escape(s.id)}</td>"
            f'<td><span style="color:{COLOURS[_colour_key(s)]};font-weight:600">{escape(s.status)}</span>'
            f"{' (critical)' if s.critical else ''}</td>"
            f'<td style="text-align:right">{s.priority}</td>'
            f'<td style="text-align:right">{s.full_tokens:,}</td>'
            f'<td style="text-align:right">{s.base_tokens:,}</td>'
            f'<td style="text-align:right">{s.allocated_tokens:,}</td>'
            f'<td style="text-align:right">{s.final_tokens:,}</td>'
            f"<td>{escape(notes)}</td>"
            "</tr>"
        )
    removed = layout.removed
    removed_html = ""
    if removed:
        lis = "".join(
            f"<li><code>{escape(r.section)}/{escape(r.id)}</code>: {escape(r.reason)} ({r.tokens:,} tokens"
            f"{'' if r.score is None else f', score {r.score:g}'})</li>"
            for r in removed
        )
        removed_html = f"<details><summary>{len(removed)} removed items</summary><ul>{lis}</ul></details>"
    body = (
        '<div class="tokenbox-layout" style="font-family:system-ui,sans-serif;font-size:13px">'
        f"<div><strong>TokenBox layout</strong>: {layout.total_tokens:,} / {layout.max_tokens:,} tokens "
        f"({layout.utilisation:.1%}) · counter <code>{escape(layout.counter_name)}</code> · "
        f"fingerprint <code>{layout.fingerprint[:12]}</code></div>"
        f"{budget_bar_svg(layout)}{_legend()}"
        '<table style="border-collapse:collapse" border="1" cellpadding="3">'
        "<thead><tr><th>section</th><th>status</th><th>prio</th><th>full</th><th>base</th><th>alloc</th>"
        "<th>final</th><th>actions</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{removed_html}</div>"
    )
    if not standalone:
        return body
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>TokenBox layout</title></head>'
        f"<body>{body}</body></html>"
    )


@dataclass(frozen=True)
class SectionDiff:
    id: str
    status_a: str | None
    status_b: str | None
    tokens_a: int
    tokens_b: int
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    text_changed: bool = False

    @property
    def token_delta(self) -> int:
        return self.tokens_b - self.tokens_a


@dataclass(frozen=True)
class LayoutDiff:
    """Context diff (context-engineering chapter §6.11.3)."""

    sections: tuple[SectionDiff, ...]
    total_a: int
    total_b: int
    utilisation_a: float
    utilisation_b: float
    fingerprint_a: str
    fingerprint_b: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def total_token_delta(self) -> int:
        return self.total_b - self.total_a

    @property
    def identical(self) -> bool:
        return self.fingerprint_a == self.fingerprint_b

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_a": self.total_a,
            "total_b": self.total_b,
            "total_token_delta": self.total_token_delta,
            "utilisation_a": round(self.utilisation_a, 6),
            "utilisation_b": round(self.utilisation_b, 6),
            "identical": self.identical,
            "sections": [
                {
                    "id": d.id,
                    "status_a": d.status_a,
                    "status_b": d.status_b,
                    "tokens_a": d.tokens_a,
                    "tokens_b": d.tokens_b,
                    "token_delta": d.token_delta,
                    "added": list(d.added),
                    "removed": list(d.removed),
                    "modified": list(d.modified),
                    "text_changed": d.text_changed,
                }
                for d in self.sections
            ],
        }

    def __str__(self) -> str:
        lines = [
            f"layout diff: {self.total_a:,} → {self.total_b:,} tokens ({self.total_token_delta:+,}); "
            f"utilisation {self.utilisation_a:.1%} → {self.utilisation_b:.1%}"
        ]
        if self.identical:
            lines.append("identical (same fingerprint)")
        for d in self.sections:
            if d.status_a == d.status_b and not (d.added or d.removed or d.modified or d.text_changed):
                continue
            lines.append(
                f"  {d.id}: {d.status_a or '—'} → {d.status_b or '—'}  {d.tokens_a:,} → {d.tokens_b:,} ({d.token_delta:+,})"
            )
            for label, ids in (("added", d.added), ("removed", d.removed), ("modified", d.modified)):
                if ids:
                    lines.append(f"    {label}: {', '.join(ids)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{escape(d.id)}</td><td>{escape(d.status_a or '—')}</td><td>{escape(d.status_b or '—')}</td>"
            f'<td style="text-align:right">{d.tokens_a:,}</td><td style="text-align:right">{d.tokens_b:,}</td>'
            f'<td style="text-align:right">{d.token_delta:+,}</td>'
            f"<td>{escape(', '.join(d.added))}</td><td>{escape(', '.join(d.removed))}</td>"
            f"<td>{escape(', '.join(d.modified))}</td></tr>"
            for d in self.sections
        )
        return (
            '<div style="font-family:system-ui,sans-serif;font-size:13px">'
            f"<div><strong>Layout diff</strong>: {self.total_a:,} → {self.total_b:,} tokens "
            f"({self.total_token_delta:+,})</div>"
            '<table border="1" cellpadding="3" style="border-collapse:collapse"><thead><tr><th>section</th>'
            "<th>status a</th><th>status b</th><th>tokens a</th><th>tokens b</th><th>Δ</th><th>added</th>"
            f"<th>removed</th><th>modified</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )


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
        diffs.append(
            SectionDiff(
                id=sid,
                status_a=sa.status if sa else None,
                status_b=sb.status if sb else None,
                tokens_a=sa.final_tokens if sa else 0,
                tokens_b=sb.final_tokens if sb else 0,
                added=tuple(k for k in ib if k not in ia),
                removed=tuple(k for k in ia if k not in ib),
                modified=tuple(k for k in ib if k in ia and ia[k] != ib[k]),
                text_changed=(sa.text if sa else "") != (sb.text if sb else ""),
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
    )
