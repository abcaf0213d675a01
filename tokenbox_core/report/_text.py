"""The layout as a plain-text table (``Layout.explain()``, ``str(layout)``, ``tokenbox layout --explain``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenbox_core.report._style import LEGEND, REASONS, plural, prio, removed_groups, status_label

if TYPE_CHECKING:
    from tokenbox_core.layout import Layout

__all__ = ["explain"]


SHOWN = 12
"""How many lines of removed items ``explain`` shows before "… and N more" (``explain(all=True)``: every one)."""


def explain(layout: Layout, *, all: bool = False) -> str:
    """A readable table of every section and decision; removed items grouped by section and reason."""
    lines = [
        f"TokenBox layout: {layout.total_tokens:,} of the {layout.max_tokens:,} tokens allowed "
        f"({layout.utilisation:.1%}) · counter {layout.counter_name} · fingerprint {layout.fingerprint[:12]}",
    ]
    header = ("section", "status", "prio", "shrink", "full", "claim", "alloc", "final", "notes")
    rows = []
    for s in layout.sections:
        notes = [a.summary() for a in s.actions]
        if s.removed:
            notes.append(f"{plural(len(s.removed), 'item')} removed")
        rows.append(
            (
                s.id,
                status_label(s),
                prio(s),
                f"{s.shrink:g}",
                f"{s.full_tokens:,}",
                f"{s.base_tokens:,}",
                f"{s.allocated_tokens:,}",
                f"{s.final_tokens:,}",
                "; ".join(notes),
            )
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header[:-1])]
    fmt = "  ".join(f"{{:{'<' if i < 2 else '>'}{w}}}" for i, w in enumerate(widths)) + "  {}"
    lines.append(fmt.format(*header))
    lines.append(fmt.format(*("-" * w for w in widths), "-----"))
    lines.extend(fmt.format(*r) for r in rows)
    lines.append(LEGEND)
    removed = layout.removed
    if removed:
        lines.append("")
        lines.append(f"removed items ({len(removed):,}):")
        if all:  # every item on its own line, with its own numbers
            for r in removed:
                score = "" if r.score is None else f", score {r.score:g}"
                lines.append(f"  {r.section}/{r.id} ({r.tokens:,} tokens{score}): {REASONS.get(r.reason, r.reason)}")
            return "\n".join(lines)
        groups = removed_groups(layout)
        for section, reason, items in groups[:SHOWN]:
            why = REASONS.get(reason, reason)
            tokens = sum(r.tokens for r in items)
            if len(items) == 1:
                score = "" if items[0].score is None else f", score {items[0].score:g}"
                lines.append(f"  {section}/{items[0].id} ({tokens:,} tokens{score}): {why}")
            else:
                shown = [r.id for r in items] if len(items) <= 4 else [items[0].id, items[1].id, "…", items[-1].id]
                lines.append(f"  {section}: {len(items)} items ({', '.join(shown)}; {tokens:,} tokens): {why}")
        hidden = sum(len(items) for _, _, items in groups[SHOWN:])
        more = f"… and {plural(hidden, 'more item')}; " if hidden else ""
        lines.append(f"  ({more}every item: explain(all=True), or --all on the command line)")
    return "\n".join(lines)
