"""A defended compile's HTML report carries trust levels and quarantined spans (issue 12, chapter §6.9)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from html import escape

from test_compiler_integration import POLICY, T, _compile, _evidence

from tokenbox_core import CompilerConfig, ContextCompiler


def test_defended_compile_html_shows_trust_levels_and_quarantined_spans(tmp_path: Path) -> None:
    """Fragment and page both hold the layout report, every input's trust level and the marked spans; no script."""
    out = _compile()
    report = out.defense
    fragment = out._repr_html_()
    page = out.to_html(str(tmp_path / "report.html"))
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == page
    assert page.startswith("<!DOCTYPE html>") and fragment in page
    for html in (fragment, page):
        assert "TokenBox layout" in html and '<section class="tbx-def">' in html
        assert html.index("TokenBox layout") < html.index('<section class="tbx-def">')
        assert "<script" not in html.lower()
        for event in report.events:
            assert f"<td>{escape(event.id)}</td><td>{escape(event.source)}</td><td>{escape(event.trust)}</td>" in html
        assert {"semi_trusted", "untrusted"} <= {e.trust for e in report.events}
        quarantined = [e for e in report.events if e.action == "quarantined"]
        assert {e.id for e in quarantined} == {"evidence/web-7", "history/2"}
        for event in quarantined:
            assert f"<mark>{escape(event.findings[0].match)}</mark>" in html
        assert "<mark>" not in html.split("<td>evidence/kb-1</td>")[1].split("</tr>")[0]  # clean input: no marks


def test_undefended_compile_html_is_the_layout_report() -> None:
    """Without a defence policy the compile's HTML is exactly its layout's HTML."""
    out = ContextCompiler(3000, config=CompilerConfig(clock=T)).compile(policy=POLICY, evidence=_evidence())
    assert out.defense is None
    assert out._repr_html_() == out.layout._repr_html_()
    assert out.to_html() == out.layout.to_html()
