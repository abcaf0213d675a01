"""What every report shares: status colours, plain-language reasons, the scoped stylesheet, small formatters."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenbox_core.layout import LaidOutSection, Layout, RemovedItem

__all__ = [
    "COLOURS",
    "LEGEND",
    "REASONS",
    "STATUS_KEYS",
    "removed_groups",
    "status_label",
    "STYLE",
    "colour_key",
    "fmt",
    "page",
    "pct",
    "plural",
    "prio",
    "window_of",
]

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
    "basis": "over the tokens the section claims (its basis); free space did not reach them",
    "max_tokens": "over the section's max_tokens",
    "section dropped": "its whole section was dropped",
    "atomic group": "its atomic group (a tool call and its results) lost a member in another section",
    "outranked": "higher-priority sections already filled the budget",
}
"""Plain-language explanations of the removal reasons the engine records."""

STYLE = """<style>
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


def status_label(s: LaidOutSection) -> str:
    """The status column: the layout's status and, for a list section that lost items, how many it kept.

    A list section can keep its claim (``kept``) while most of its items lie beyond that claim; the label says
    ``kept 6 of 20 items`` so that the table agrees with the removed items and the bar.
    """
    if not s.removed or not isinstance(s.content, tuple):
        return s.status
    kept = len(s.content)
    return f"{s.status} {kept:,} of {kept + len(s.removed):,} items"


def removed_groups(layout: Layout) -> list[tuple[str, str, list[RemovedItem]]]:
    """Removed items grouped by section and reason, in removal order: ``(section, reason, items)``.

    Fourteen documents evicted for the same reason are one line in a report, not fourteen.
    """
    groups: list[tuple[str, str, list[RemovedItem]]] = []
    for r in layout.removed:
        if groups and groups[-1][0] == r.section and groups[-1][1] == r.reason:
            groups[-1][2].append(r)
        else:
            groups.append((r.section, r.reason, [r]))
    return groups


def colour_key(s: LaidOutSection) -> str:
    return "critical" if s.critical and s.status != "dropped" else s.status


def fmt(n: float) -> str:
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.3g}"


def pct(part: int, whole: int) -> str:
    return "–" if whole <= 0 else f"{part / whole:.1%}"


def window_of(layout: Layout) -> int:
    return max(layout.budget.max_tokens, layout.max_tokens, layout.total_tokens, 1)


def page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head><body>{body}</body></html>\n"
    )


LEGEND = (
    "prio: lower is lost first (critical sections are never cut) · full: the whole content · claim: what the "
    "section asks for before free space is shared (its basis or max_tokens, else full) · alloc: what the layout "
    "granted · final: what it emits"
)
"""The one-line legend under every section table (text and HTML)."""


def prio(s: LaidOutSection) -> str:
    """The priority column: a number, or ``critical`` (never cut, whatever its number)."""
    return "critical" if s.critical else str(s.priority)


def plural(n: int, word: str) -> str:
    """``1 item``, ``2 items``."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"
