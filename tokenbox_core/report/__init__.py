"""Reports on a layout: the text table, the HTML report (budget bar, legend, tables) and layout diffs.

- :mod:`.text` — ``Layout.explain()``;
- :mod:`.html` — ``Layout._repr_html_()`` / ``to_html()``;
- :mod:`.diff` — ``Layout.diff()`` (:class:`LayoutDiff`);
- :mod:`.style` — the colours, reasons and stylesheet they share.

Nothing here imports :mod:`tokenbox_core.layout` at run time (``Layout``
calls in, lazily), so the two never form an import cycle.
"""

from tokenbox_core.report.diff import LayoutDiff, SectionDiff, diff_layouts
from tokenbox_core.report.html import budget_bar_svg, layout_html
from tokenbox_core.report.style import COLOURS, REASONS
from tokenbox_core.report.text import explain

__all__ = [
    "COLOURS",
    "REASONS",
    "LayoutDiff",
    "SectionDiff",
    "budget_bar_svg",
    "diff_layouts",
    "explain",
    "layout_html",
]
