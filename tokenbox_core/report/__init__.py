"""Reports on a layout: the text table, the HTML report (budget bar, legend, tables) and layout diffs.

- :mod:`._text` — ``Layout.explain()``;
- :mod:`._html` — ``Layout._repr_html_()`` / ``to_html()``;
- :mod:`._diff` — ``Layout.diff()`` (:class:`LayoutDiff`);
- :mod:`._style` — the colours, reasons and stylesheet they share.

Nothing here imports :mod:`tokenbox_core.layout` at run time (``Layout``
calls in, lazily), so the two never form an import cycle.
"""

from tokenbox_core.report._diff import LayoutDiff, SectionDiff, diff_layouts
from tokenbox_core.report._html import budget_bar_svg, layout_html
from tokenbox_core.report._style import COLOURS, REASONS
from tokenbox_core.report._text import explain

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
