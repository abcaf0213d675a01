"""The cache simulator's report: a self-contained HTML page with a per-turn chart (inline SVG, no script)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from tokenbox_core.cache._simulate import CacheSimulation

__all__ = ["simulations_html"]

_CACHED, _WRITTEN, _UNCACHED = "#2e7d32", "#f9a825", "#c62828"


def _chart(sim: CacheSimulation, width: int = 900, height: int = 160) -> str:
    turns = sim.turns
    top = max((t.prompt_tokens for t in turns), default=1) or 1
    bar = width / max(1, len(turns))
    rects: list[str] = []
    for i, t in enumerate(turns):
        x = i * bar
        parts = (
            (t.cached_tokens, _CACHED),
            (t.written_tokens, _WRITTEN),
            (t.prompt_tokens - t.cached_tokens - t.written_tokens, _UNCACHED),
        )
        y = float(height)
        for tokens, colour in parts:
            h = height * tokens / top
            if h <= 0:
                continue
            y -= h
            rects.append(
                f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(bar - 0.5, 0.5):.2f}" height="{h:.2f}" fill="{colour}">'
                f"<title>turn {t.turn}: {t.prompt_tokens:,} prompt tokens, {t.cached_tokens:,} cached, "
                f"{t.written_tokens:,} written</title></rect>"
            )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="prompt tokens per turn, cached share in green">{"".join(rects)}</svg>'
    )


def simulations_html(simulations: Sequence[CacheSimulation], title: str = "Prompt-cache simulation") -> str:
    """One page: for each simulation its headline numbers and the per-turn chart (green cached, amber written
    to the cache, red uncached)."""
    blocks = []
    for sim in simulations:
        blocks.append(
            f"<section><h2>{escape(sim.label or 'trimmer')}</h2>"
            f"<p>rules {escape(sim.rules.name or sim.rules.provider)}: "
            f"{sim.cached_share:.1%} of {sim.prompt_tokens:,} prompt tokens served from cache · "
            f"cost {sim.cost:.4f} ({sim.cost / sim.uncached_cost if sim.uncached_cost else 0:.2f}× uncached) · "
            f"{sim.mean_visible_turns:.1f} past turns visible on average "
            f"({sim.mean_direct_turns:.1f} directly)</p>{_chart(sim)}</section>"
        )
    legend = (
        f'<p><span style="color:{_CACHED}">■</span> cached &nbsp; <span style="color:{_WRITTEN}">■</span> '
        f'written to the cache &nbsp; <span style="color:{_UNCACHED}">■</span> uncached; one bar per turn.</p>'
    )
    names = dict.fromkeys(s.rules.name or s.rules.provider for s in simulations)
    provider = escape(", ".join(names))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "section{margin-bottom:2em}</style></head>"
        f"<body><h1>{escape(title)}</h1><p>Rules: {provider}</p>{legend}{''.join(blocks)}</body></html>"
    )
