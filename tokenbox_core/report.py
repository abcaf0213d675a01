"""Visual reports: a layout as HTML (budget bar, legend, table, removed items) and layout diffs.

Everything is self-contained HTML with inline SVG and an inline, scoped
``<style>``: no script, stylesheet, font or image is fetched from anywhere, so
a report opens offline, in a notebook, or attached to a ticket.

The budget bar is drawn to the scale of the whole window
(``budget.max_tokens``): one segment per emitted section coloured by status
(critical sections in their own colour), then the free space, then what is
reserved for the answer.  A second row shows, on the same scale, what each
section lost, so dropped sections are visible too.  Every segment has a
``<title>`` with its numbers (shown on hover).

>>> from tokenbox_core import Section, TokenBox
>>> layout = TokenBox(6, counter="whitespace").layout([Section("a", "x y z"), Section("b", "p q r s", shrink=1)])
>>> page = layout_html(layout)
>>> page.count('class="seg"'), "<title>b: 3 tokens" in page
(2, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenbox_core.layout import LaidOutSection, Layout

__all__ = ["COLOURS", "LayoutDiff", "SectionDiff", "budget_bar_svg", "diff_layouts", "layout_html"]

COLOURS = {
    "critical": "#4c6ef5",
    "kept": "#37b24d",
    "expanded": "#0ca678",
    "compressed": "#f59f00",
    "truncated": "#f76707",
    "dropped": "#adb5bd",
    "free": "#f1f3f5",
    "reserved": "#dee2e6",
}
"""Fill colour of each status (and of free and reserved space) in every report."""

STATUS_KEYS = ("critical", "kept", "expanded", "compressed", "truncated", "dropped")

REASONS = {
    "budget": "removed to fit the budget",
    "deficit": "removed to fit the budget",
    "basis": "beyond the section's basis and not regained by expansion",
    "max_tokens": "over the section's max_tokens",
    "section dropped": "its whole section was dropped",
}
"""Plain-language explanations of the removal reasons the engine records."""

_STYLE = """<style>
.tokenbox-report{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:13px;line-height:1.4;
max-width:980px}
.tokenbox-report .tb-head{margin:0 0 6px}
.tokenbox-report code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.tokenbox-report svg{display:block;margin:4px 0}
.tokenbox-report svg rect.seg:hover,.tokenbox-report svg rect.cut:hover{opacity:.75}
.tokenbox-report .tb-legend{margin:4px 0 10px;font-size:12px}
.tokenbox-report .tb-legend span.tb-key{margin-right:14px;white-space:nowrap}
.tokenbox-report .tb-sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px;
border-radius:2px}
.tokenbox-report table{border-collapse:collapse;margin:6px 0 10px}
.tokenbox-report th,.tokenbox-report td{border:1px solid #ced4da;padding:3px 7px;text-align:left}
.tokenbox-report td.n,.tokenbox-report th.n{text-align:right;font-variant-numeric:tabular-nums}
.tokenbox-report tr.tb-total td{font-weight:600}
.tokenbox-report td.st{white-space:nowrap}
.tokenbox-report .tb-plus{color:#c92a2a}.tokenbox-report .tb-minus{color:#2b8a3e}
.tokenbox-report h4{margin:10px 0 4px;font-size:13px}
</style>"""


def _colour_key(s: LaidOutSection) -> str:
    return "critical" if s.critical and s.status != "dropped" else s.status


def _fmt(n: float) -> str:
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.3g}"


def _pct(part: int, whole: int) -> str:
    return "–" if whole <= 0 else f"{part / whole:.1%}"


def _window(layout: Layout) -> int:
    return max(layout.budget.max_tokens, layout.max_tokens, layout.total_tokens, 1)


def _rect(cls: str, x: float, y: int, w: float, h: int, fill: str, title: str, extra: str = "") -> str:
    return (
        f'<rect class="{cls}" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{h}" fill="{fill}" stroke="#ffffff" '
        f'stroke-width="1"{extra}><title>{escape(title)}</title></rect>'
    )


def _label(x: float, w: float, y: int, text: str, colour: str = "#ffffff") -> str:
    if w < 7 * len(text) + 8:
        return ""
    return (
        f'<text x="{x + 4:.2f}" y="{y}" fill="{colour}" font-size="11" font-family="system-ui,sans-serif" '
        f'pointer-events="none">{escape(text)}</text>'
    )


def budget_bar_svg(layout: Layout, width: int = 760, height: int = 26) -> str:
    """The stacked budget bar (one ``rect.seg`` per emitted section) and the row of removed tokens."""
    window = _window(layout)
    removed_total = sum(max(0, s.full_tokens - s.final_tokens) for s in layout.sections)
    scale = width / max(window, removed_total)
    gap, row2 = 16, 14
    total_h = height + gap + row2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" viewBox="0 0 {width} {total_h}" '
        f'role="img" aria-label="{escape(f"token budget: {layout.total_tokens:,} of {window:,} tokens used")}">'
    ]
    x = 0.0
    for s in layout.sections:
        if s.final_tokens <= 0:
            continue
        w = s.final_tokens * scale
        title = (
            f"{s.id}: {s.final_tokens:,} tokens ({_pct(s.final_tokens, window)} of the window) · {s.status}"
            f"{' · critical' if s.critical else ''} · full {s.full_tokens:,}, base {s.base_tokens:,}, "
            f"allocated {s.allocated_tokens:,}"
        )
        extra = f' data-section="{escape(s.id)}" data-status="{s.status}"'
        parts.append(_rect("seg", x, 0, w, height, COLOURS[_colour_key(s)], title, extra))
        parts.append(_label(x, w, height // 2 + 4, s.id))
        x += w
    free = max(0, layout.max_tokens - layout.total_tokens)
    reserved = max(0, window - max(layout.max_tokens, layout.total_tokens))
    for cls, amount, what in (("free", free, "free"), ("reserved", reserved, "reserved (answer and slots)")):
        if amount > 0:
            w = amount * scale
            parts.append(_rect(cls, x, 0, w, height, COLOURS[cls], f"{what}: {amount:,} tokens"))
            parts.append(_label(x, w, height // 2 + 4, what.split(" ")[0], "#495057"))
            x += w
    y2 = height + gap
    parts.append(
        f'<text x="0" y="{y2 - 4}" fill="#495057" font-size="11" font-family="system-ui,sans-serif">'
        f"removed: {removed_total:,} tokens</text>"
    )
    x = 0.0
    for s in layout.sections:
        lost = max(0, s.full_tokens - s.final_tokens)
        if lost <= 0:
            continue
        w = lost * scale
        title = f"{s.id}: {lost:,} of {s.full_tokens:,} tokens removed ({s.status}, {len(s.removed)} items)"
        fill = COLOURS[s.status if s.status != "kept" else "truncated"]
        parts.append(_rect("cut", x, y2, w, row2, fill, title, f' data-section="{escape(s.id)}"'))
        x += w
    parts.append("</svg>")
    return "".join(parts)


def _legend(layout: Layout) -> str:
    counts = {k: 0 for k in STATUS_KEYS}
    for s in layout.sections:
        counts[_colour_key(s)] += 1
    keys = "".join(
        f'<span class="tb-key"><span class="tb-sw" style="background:{COLOURS[k]}"></span>{k} ({counts[k]})</span>'
        for k in STATUS_KEYS
    )
    keys += "".join(
        f'<span class="tb-key"><span class="tb-sw" style="background:{COLOURS[k]};border:1px solid #adb5bd">'
        f"</span>{k}</span>"
        for k in ("free", "reserved")
    )
    return f'<div class="tb-legend">{keys}</div>'


def _notes(s: LaidOutSection) -> str:
    notes = [a.summary() for a in s.actions]
    if s.removed:
        notes.append(f"{len(s.removed)} items removed")
    return "; ".join(notes)


def _section_table(layout: Layout) -> str:
    window = _window(layout)
    rows = []
    for s in layout.sections:
        colour = COLOURS[_colour_key(s)]
        rows.append(
            "<tr>"
            f"<td><code>{escape(s.id)}</code></td>"
            f'<td class="st"><span class="tb-sw" style="background:{colour}"></span>{escape(s.status)}'
            f"{' · critical' if s.critical else ''}</td>"
            f'<td class="n">{s.priority}</td><td class="n">{_fmt(s.shrink)}</td><td class="n">{_fmt(s.grow)}</td>'
            f'<td class="n">{s.full_tokens:,}</td><td class="n">{s.base_tokens:,}</td>'
            f'<td class="n">{s.allocated_tokens:,}</td><td class="n">{s.final_tokens:,}</td>'
            f'<td class="n">{_pct(s.final_tokens, window)}</td>'
            f"<td>{escape(_notes(s))}</td>"
            "</tr>"
        )
    total_full = sum(s.full_tokens for s in layout.sections)
    rows.append(
        f'<tr class="tb-total"><td>total</td><td></td><td></td><td></td><td></td><td class="n">{total_full:,}</td>'
        f'<td></td><td></td><td class="n">{layout.total_tokens:,}</td>'
        f'<td class="n">{_pct(layout.total_tokens, window)}</td><td></td></tr>'
    )
    return (
        '<table class="tb-sections"><thead><tr><th>section</th><th>status</th><th class="n">prio</th>'
        '<th class="n">shrink</th><th class="n">grow</th><th class="n">full</th><th class="n">base</th>'
        '<th class="n">alloc</th><th class="n">final</th><th class="n">window</th><th>actions</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _removed_html(layout: Layout) -> str:
    rows = []
    for s in layout.sections:
        if s.status == "dropped" and not s.removed:
            drop = next((a for a in s.actions if a.kind == "drop"), None)
            reason = f"dropped whole ({drop.name})" if drop else "dropped whole"
            rows.append(
                f"<tr><td><code>{escape(s.id)}</code></td><td>(whole section)</td><td>{escape(reason)}</td>"
                f'<td class="n">{s.full_tokens:,}</td><td></td><td></td></tr>'
            )
        for r in s.removed:
            why = REASONS.get(r.reason, "")
            rows.append(
                f"<tr><td><code>{escape(r.section)}</code></td><td><code>{escape(r.id)}</code></td>"
                f"<td>{escape(r.reason)}{f' — {escape(why)}' if why else ''}</td>"
                f'<td class="n">{r.tokens:,}</td><td class="n">{"" if r.score is None else f"{r.score:g}"}</td>'
                f"<td>{escape(r.group or '')}</td></tr>"
            )
    if not rows:
        return '<h4 class="tb-removed">Removed items</h4><p>Nothing was removed.</p>'
    return (
        f'<h4 class="tb-removed">Removed items ({len(layout.removed)})</h4>'
        '<table class="tb-removed"><thead><tr><th>section</th><th>item</th><th>reason</th><th class="n">tokens</th>'
        f'<th class="n">score</th><th>group</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head><body>{body}</body></html>\n"
    )


def layout_html(layout: Layout, *, standalone: bool = False) -> str:
    """The layout as HTML: header, budget bar, legend, section table and removed items.

    ``standalone=True`` wraps it in a complete HTML document.
    """
    budget = layout.budget
    reserve = budget.output_reserve + budget.reserved_tokens
    head = (
        f'<div class="tb-head"><strong>TokenBox layout</strong>: {layout.total_tokens:,} / {layout.max_tokens:,} '
        f"tokens ({layout.utilisation:.1%})"
        f"{f' · window {budget.max_tokens:,}, {reserve:,} reserved' if reserve else ''}"
        f" · counter <code>{escape(layout.counter_name)}</code> · mode {escape(layout.mode)}"
        f" · fingerprint <code>{layout.fingerprint[:12]}</code></div>"
    )
    body = (
        f'<div class="tokenbox-report">{_STYLE}{head}{budget_bar_svg(layout)}{_legend(layout)}'
        f"{_section_table(layout)}{_removed_html(layout)}</div>"
    )
    return _page("TokenBox layout", body) if standalone else body


# --------------------------------------------------------------------------- diff


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
            f'<div class="tokenbox-report tokenbox-diff">{_STYLE}'
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
        page = _page("TokenBox layout diff", self._repr_html_())
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(page)
        return page


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
