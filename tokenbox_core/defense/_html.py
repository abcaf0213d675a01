"""An HTML fragment of a defence report: trust levels and quarantined spans (chapter §6.9, §6.11.1).

:func:`defense_html` renders a :class:`~tokenbox_core.defense.DefenseReport`
as a self-contained ``<section>`` the layout report can embed, and that
notebooks show through ``DefenseReport._repr_html_``: one row per input with
its trust level, the action taken, the score and the evidence, the matched
spans of quarantined inputs highlighted, and the key origin, the canary and
the injection surface in the header.
"""

from __future__ import annotations

from html import escape

from tokenbox_core.defense._trace import DefenseReport, InputEvent

__all__ = ["defense_html"]

_COLOURS = {"trusted": "#dcfce7", "semi_trusted": "#fef9c3", "untrusted": "#fee2e2"}
_STYLE = (
    "<style>.tbx-def{font:13px system-ui,sans-serif}.tbx-def table{border-collapse:collapse}"
    ".tbx-def td,.tbx-def th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}"
    ".tbx-def mark{background:#fca5a5}</style>"
)


def _evidence(event: InputEvent) -> str:
    if not event.findings:
        return ""
    rows = []
    for f in event.findings[:6]:
        span = f"<mark>{escape(f.match)}</mark>" if event.action == "quarantined" else escape(f.match)
        rows.append(f"{escape(f.rule)} ({f.weight:.2f}): {span}")
    return "<br>".join(rows)


def defense_html(report: DefenseReport) -> str:
    """The report as an HTML fragment (a ``<section class="tbx-def">``)."""
    head = (
        f"<p><b>Defensive compilation</b> — key: {escape(report.key.note)}; spotlighting: "
        f"{escape(report.spotlight)}; canary: {'yes' if report.canary else 'no'}; injection surface: "
        f"{report.surface if report.surface is not None else '–'} tokens"
        f"{'' if report.surface_ratio is None else f' ({report.surface_ratio:.1%} of the context)'}; "
        f"quarantined: {len(report.quarantined)}</p>"
    )
    rows = [
        "<tr><th>input</th><th>source</th><th>trust</th><th>action</th><th>score</th><th>sanitised</th>"
        "<th>evidence</th></tr>"
    ]
    for e in report.events:
        removed = ", ".join(f"{k} ×{v}" for k, v in dict(e.sanitized.get("removed", {})).items())
        extra = [removed] if removed else []
        extra += [f"cut {e.cut_tokens} tokens"] if e.cut_tokens else []
        extra += [f"{e.neutralised} boundary strings neutralised"] if e.neutralised else []
        rows.append(
            f'<tr style="background:{_COLOURS.get(e.trust, "#fff")}"><td>{escape(e.id)}</td>'
            f"<td>{escape(e.source)}</td><td>{escape(e.trust)}</td><td>{escape(e.action)}</td>"
            f"<td>{e.score:.2f}</td><td>{escape('; '.join(extra))}</td><td>{_evidence(e)}</td></tr>"
        )
    return f'<section class="tbx-def">{_STYLE}{head}<table>{"".join(rows)}</table></section>'
