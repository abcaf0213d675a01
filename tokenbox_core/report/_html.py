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

from html import escape
from typing import TYPE_CHECKING, Any

from tokenbox_core.report._style import (
    COLOURS,
    LEGEND,
    REASONS,
    STATUS_KEYS,
    STYLE,
    colour_key,
    fmt,
    page,
    pct,
    plural,
    prio,
    removed_groups,
    status_label,
    window_of,
)

if TYPE_CHECKING:
    from tokenbox_core.layout import LaidOutSection, Layout

__all__ = ["budget_bar_svg", "layout_html"]


def _rect(cls: str, x: float, y: int, w: float, h: int, fill: str, title: str, extra: str = "") -> str:
    return (
        f'<rect class="{cls}" x="{x:.2f}" y="{y}" width="{w:.2f}" height="{h}" fill="{fill}" stroke="#ffffff" '
        f'stroke-width="1"{extra}><title>{escape(title)}</title></rect>'
    )


def _fits(w: float, text: str) -> bool:
    """Whether ``text`` fits inside a bar segment ``w`` pixels wide (narrower ones are named under the bar)."""
    return w >= 7 * len(text) + 8


def _label(x: float, w: float, y: int, text: str, colour: str = "#ffffff") -> str:
    if not _fits(w, text):
        return ""
    return (
        f'<text x="{x + 4:.2f}" y="{y}" fill="{colour}" font-size="11" font-family="system-ui,sans-serif" '
        f'pointer-events="none">{escape(text)}</text>'
    )


def budget_bar_svg(layout: Layout, width: int = 760, height: int = 26) -> str:
    """The stacked budget bar (one ``rect.seg`` per emitted section) and the row of removed tokens."""
    window = window_of(layout)
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
            f"{s.id}: {s.final_tokens:,} tokens ({pct(s.final_tokens, window)} of the window) · {status_label(s)}"
            f"{' · critical' if s.critical else ''} · full {s.full_tokens:,}, claim {s.base_tokens:,}, "
            f"allocated {s.allocated_tokens:,}"
        )
        extra = f' data-section="{escape(s.id)}" data-status="{s.status}"'
        parts.append(_rect("seg", x, 0, w, height, COLOURS[colour_key(s)], title, extra))
        parts.append(_label(x, w, height // 2 + 4, s.id))
        x += w
    free = max(0, layout.max_tokens - layout.total_tokens)
    reserved = max(0, window - max(layout.max_tokens, layout.total_tokens))
    reserved_for = "reserved for the answer" + (" and reserved slots" if layout.budget.reserved_tokens else "")
    for cls, amount, what in (("free", free, "free"), ("reserved", reserved, reserved_for)):
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
        title = f"{s.id}: {lost:,} of {s.full_tokens:,} tokens removed ({status_label(s)})"
        fill = COLOURS[s.status if s.status != "kept" else "truncated"]
        parts.append(_rect("cut", x, y2, w, row2, fill, title, f' data-section="{escape(s.id)}"'))
        x += w
    parts.append("</svg>")
    return "".join(parts)


def _unlabelled(layout: Layout, width: int = 760) -> str:
    """The sections whose bar segments are too narrow for their names, named under the bar."""
    scale = width / max(window_of(layout), sum(max(0, s.full_tokens - s.final_tokens) for s in layout.sections))
    small = [s for s in layout.sections if s.final_tokens > 0 and not _fits(s.final_tokens * scale, s.id)]
    if not small:
        return ""
    names = " · ".join(f"{escape(s.id)} {s.final_tokens:,}" for s in small)
    return f'<p class="tb-small">narrow segments, left to right: {names}</p>'


def _legend(layout: Layout) -> str:
    counts = {k: 0 for k in STATUS_KEYS}
    for s in layout.sections:
        counts[colour_key(s)] += 1
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
        notes.append(f"{plural(len(s.removed), 'item')} removed")
    return "; ".join(notes)


def _section_table(layout: Layout) -> str:
    window = window_of(layout)
    rows = []
    for s in layout.sections:
        colour = COLOURS[colour_key(s)]
        rows.append(
            "<tr>"
            f"<td><code>{escape(s.id)}</code></td>"
            f'<td class="st"><span class="tb-sw" style="background:{colour}"></span>{escape(status_label(s))}'
            f"{' · critical' if s.critical else ''}</td>"
            f'<td class="n">{prio(s)}</td><td class="n">{fmt(s.shrink)}</td><td class="n">{fmt(s.grow)}</td>'
            f'<td class="n">{s.full_tokens:,}</td><td class="n">{s.base_tokens:,}</td>'
            f'<td class="n">{s.allocated_tokens:,}</td><td class="n">{s.final_tokens:,}</td>'
            f'<td class="n">{pct(s.final_tokens, window)}</td>'
            f"<td>{escape(_notes(s))}</td>"
            "</tr>"
        )
    total_full = sum(s.full_tokens for s in layout.sections)
    rows.append(
        f'<tr class="tb-total"><td>total</td><td></td><td></td><td></td><td></td><td class="n">{total_full:,}</td>'
        f'<td></td><td></td><td class="n">{layout.total_tokens:,}</td>'
        f'<td class="n">{pct(layout.total_tokens, window)}</td><td></td></tr>'
    )
    return (
        '<table class="tb-sections"><thead><tr><th>section</th><th>status</th><th class="n">prio</th>'
        '<th class="n">shrink</th><th class="n">grow</th><th class="n">full</th><th class="n">claim</th>'
        '<th class="n">alloc</th><th class="n">final</th><th class="n">of window</th><th>actions</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        f'<p class="tb-legend-line">{escape(LEGEND)} · of window: share of the model\'s whole window</p>'
    )


def _removed_html(layout: Layout) -> str:
    rows = []
    for s in layout.sections:
        if s.status == "dropped" and not s.removed:
            drop = next((a for a in s.actions if a.kind == "drop"), None)
            why = REASONS.get(drop.name, drop.name) if drop else ""
            reason = f"dropped whole — {why}" if why else "dropped whole"
            rows.append(
                f"<tr><td><code>{escape(s.id)}</code></td><td>(whole section)</td><td>{escape(reason)}</td>"
                f'<td class="n">{s.full_tokens:,}</td><td></td><td></td></tr>'
            )
    for _section, reason, items in removed_groups(layout):  # the reason once per run of items that share it
        why = escape(REASONS.get(reason, reason))
        for n, r in enumerate(items):
            cell = f'<td rowspan="{len(items)}">{why}</td>' if n == 0 else ""
            rows.append(
                f"<tr><td><code>{escape(r.section)}</code></td><td><code>{escape(r.id)}</code></td>{cell}"
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


def _reserve_words(budget: Any) -> str:
    """``, 1,024 reserved for the answer, 200 for reserved slots`` (each part only when non-zero)."""
    parts = []
    if budget.output_reserve:
        parts.append(f"{budget.output_reserve:,} reserved for the answer")
    if budget.reserved_tokens:
        parts.append(f"{budget.reserved_tokens:,} for reserved slots ({', '.join(sorted(budget.reserved_slots))})")
    return "".join(f", {p}" for p in parts)


def layout_html(layout: Layout, *, standalone: bool = False, extra: str = "") -> str:
    """The layout as HTML: header, budget bar, legend, section table and removed items.

    ``standalone=True`` wraps it in a complete HTML document.  ``extra`` is an
    HTML fragment the caller appends inside the report (a compile's defence
    report, chapter §6.9 / §6.11.1); it is inserted as given, so it must be
    trusted, escaped markup.
    """
    budget = layout.budget
    window = window_of(layout)
    head = (
        f'<div class="tb-head"><strong>TokenBox layout</strong>: {layout.total_tokens:,} of the '
        f"{layout.max_tokens:,} tokens allowed ({layout.utilisation:.1%}) · {pct(layout.total_tokens, window)} of the "
        f"{window:,}-token window{_reserve_words(budget)}"
        f" · counter <code>{escape(layout.counter_name)}</code> · mode {escape(layout.mode)}"
        f" · fingerprint <code>{layout.fingerprint[:12]}</code></div>"
    )
    body = (
        f'<div class="tokenbox-report">{STYLE}{head}{budget_bar_svg(layout)}{_unlabelled(layout)}{_legend(layout)}'
        f"{_section_table(layout)}{_removed_html(layout)}{extra}</div>"
    )
    return page("TokenBox layout", body) if standalone else body


def compiled_html(compiled: Any, *, standalone: bool = False, path: str | None = None) -> str:
    """A compile's HTML report: its layout's report plus, when it has one, its defence report.

    ``compiled`` is a :class:`~tokenbox_core.compiler.CompiledContext`; under
    ``CompilerConfig(defense=...)`` its ``defense`` report (trust level per input,
    quarantined spans highlighted, key origin, canary, injection surface; chapter
    §6.9) is appended through its ``_repr_html_``.  Written to ``path`` when given.
    """
    defense = compiled.defense
    extra = defense._repr_html_() if defense is not None and hasattr(defense, "_repr_html_") else ""
    html = layout_html(compiled.layout, standalone=standalone, extra=extra)
    if path is not None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(html)
    return html
