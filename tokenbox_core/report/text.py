"""The layout as a plain-text table (``Layout.explain()``, ``str(layout)``, ``tokenbox layout --explain``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenbox_core.report.style import LEGEND, plural, prio

if TYPE_CHECKING:
    from tokenbox_core.layout import Layout

__all__ = ["explain"]


def explain(layout: Layout) -> str:
    """A readable table of every section and decision."""
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
                s.status,
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
        for r in removed[:20]:
            score = "" if r.score is None else f" score={r.score:g}"
            lines.append(f"  {r.section}/{r.id}: {r.reason} ({r.tokens} tokens{score})")
        if len(removed) > 20:
            lines.append(f"  … and {len(removed) - 20} more")
    return "\n".join(lines)
