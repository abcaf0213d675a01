"""The visual report (HTML + SVG) and layout diffs."""

from __future__ import annotations

import re
from pathlib import Path

from tokenbox_core import ContextBudget, Item, Layout, Section, TokenBox
from tokenbox_core.report import COLOURS, LayoutDiff, diff_layouts, layout_html

WORDS = " ".join(f"w{i}" for i in range(40))


def _layout(budget: int = 25) -> Layout:
    """A whitespace-counted layout with critical, kept, truncated and dropped sections and removed items."""
    docs = [Item(f"d{i}", f"doc {i} " + "x " * 3, score=1.0 - i / 10) for i in range(5)]
    return TokenBox(ContextBudget(budget + 5, output_reserve=5), counter="whitespace").layout(
        [
            Section("policy", "be brief and exact"),
            Section("docs", docs, priority=2, shrink=1, eviction="lowest_score"),
            Section("notes", WORDS, priority=0, shrink=1, min_tokens=2),
            Section("extra", "alpha beta gamma delta", priority=1, shrink=1),
        ]
    )


def _segments(page: str, cls: str = "seg") -> list[str]:
    return re.findall(rf'<rect class="{cls}"[^>]*>.*?</rect>', page)


def test_bar_has_one_coloured_rect_per_emitted_section() -> None:
    """The SVG bar has one rect.seg per emitted section, filled with its status colour (critical: own colour)."""
    layout = _layout()
    page = layout_html(layout)
    assert "<svg" in page
    emitted = [s for s in layout.sections if s.final_tokens > 0]
    segs = _segments(page)
    assert len(segs) == len(emitted)
    for section, seg in zip(emitted, segs, strict=True):
        key = "critical" if section.critical else section.status
        assert f'data-section="{section.id}"' in seg
        assert f'fill="{COLOURS[key]}"' in seg


def test_every_segment_has_a_title_with_its_numbers() -> None:
    """Each bar segment carries a <title> (hover text) with the section's tokens and status."""
    layout = _layout()
    segs = _segments(layout_html(layout))
    emitted = [s for s in layout.sections if s.final_tokens > 0]
    for section, seg in zip(emitted, segs, strict=True):
        title = re.search(r"<title>(.*?)</title>", seg)
        assert title is not None
        assert f"{section.id}: {section.final_tokens:,} tokens" in title.group(1)
        assert section.status in title.group(1)


def test_removed_row_shows_dropped_and_truncated_sections() -> None:
    """The second row draws what each section lost, so a dropped section is visible in the bar."""
    layout = _layout()
    statuses = {s.id: s.status for s in layout.sections}
    assert "dropped" in statuses.values() and "truncated" in statuses.values()
    cuts = _segments(layout_html(layout), "cut")
    lost = [s for s in layout.sections if s.full_tokens > s.final_tokens]
    assert len(cuts) == len(lost)
    dropped = next(s for s in layout.sections if s.status == "dropped")
    assert any(f'data-section="{dropped.id}"' in c and COLOURS["dropped"] in c for c in cuts)


def test_legend_lists_every_status_with_its_colour() -> None:
    """The legend names every status next to a swatch of its colour."""
    page = layout_html(_layout())
    legend = re.search(r'<div class="tb-legend">(.*?)</div>', page)
    assert legend is not None
    for status in ("critical", "kept", "expanded", "compressed", "truncated", "dropped"):
        assert re.search(rf"background:{COLOURS[status]}\"></span>{status} \(\d+\)", legend.group(1)), status


def test_table_has_a_row_per_section_and_a_total() -> None:
    """The section table lists every section with its numbers and a total row."""
    layout = _layout()
    page = layout_html(layout)
    table = re.search(r'<table class="tb-sections">(.*?)</table>', page)
    assert table is not None
    rows = re.findall(r"<tr[ >].*?</tr>", table.group(1))
    assert len(rows) == 1 + len(layout.sections) + 1  # header, sections, total
    for section in layout.sections:
        assert f"<code>{section.id}</code>" in table.group(1)
    assert f'<td class="n">{layout.total_tokens:,}</td>' in rows[-1]


def test_removed_items_are_listed_with_reasons() -> None:
    """Every removed item appears with its section, tokens and score, the plain reason once per run of items that
    share it (not fourteen times); whole dropped sections too."""
    from tokenbox_core.report._style import REASONS, removed_groups

    layout = _layout()
    page = layout_html(layout)
    assert layout.removed
    for r in layout.removed:
        assert f"<td><code>{r.section}</code></td><td><code>{r.id}</code></td>" in page
    for _section, reason, items in removed_groups(layout):
        assert f'<td rowspan="{len(items)}">{REASONS.get(reason, reason)}</td>' in page
    assert page.count(REASONS["basis"]) <= len([g for g in removed_groups(layout) if g[1] == "basis"])
    dropped = [s for s in layout.sections if s.status == "dropped" and not s.removed]
    assert dropped
    for s in dropped:
        assert f"<td><code>{s.id}</code></td><td>(whole section)</td><td>dropped whole" in page
    assert f"Removed items ({len(layout.removed)})" in page


def test_nothing_removed_says_so() -> None:
    """A layout that removed nothing says 'Nothing was removed.'"""
    layout = TokenBox(100, counter="whitespace").layout([Section("a", "x y z")])
    assert "Nothing was removed." in layout_html(layout)


def test_report_is_self_contained() -> None:
    """No script and no remote src/href: the only URL is the SVG namespace."""
    page = _layout().to_html()
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert not re.search(r"@import|url\(", page)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}


def test_to_html_writes_a_full_document(tmp_path: Path) -> None:
    """Layout.to_html(path) writes a complete UTF-8 HTML document and returns it; _repr_html_ is a fragment."""
    layout = _layout()
    path = tmp_path / "report.html"
    page = layout.to_html(str(path))
    assert path.read_text(encoding="utf-8") == page
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert '<meta charset="utf-8">' in page
    fragment = layout._repr_html_()
    assert "<!DOCTYPE" not in fragment and fragment.startswith('<div class="tokenbox-report">')


def test_ids_and_content_are_escaped() -> None:
    """Section and item ids are HTML-escaped in every part of the report."""
    layout = TokenBox(3, counter="whitespace").layout(
        [Section("<b>x</b>", "a b"), Section("s&t", [Item("<i>", "p q r")], shrink=1)]
    )
    page = layout_html(layout)
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert "<i>" not in page and "&lt;i&gt;" in page
    assert "s&amp;t" in page


def test_bar_shows_free_and_reserved_space() -> None:
    """Free space and the output reserve are drawn after the sections, with their sizes in the title."""
    layout = TokenBox(ContextBudget(100, output_reserve=20), counter="whitespace").layout([Section("a", "x y z")])
    page = layout_html(layout)
    assert f"<title>free: {layout.max_tokens - layout.total_tokens:,} tokens</title>" in page
    assert "<title>reserved for the answer: 20 tokens</title>" in page


# --------------------------------------------------------------------------- diff


def _turn(history: list[Item], budget: int = 40) -> Layout:
    return TokenBox(budget, counter="whitespace").layout(
        [
            Section("policy", "be brief"),
            Section("history", history, shrink=1, eviction="oldest"),
        ]
    )


def test_diff_reports_added_removed_and_modified_items() -> None:
    """Items only in b are added, only in a removed, same id with new content modified; deltas add up."""
    a = _turn([Item("m1", "hello there"), Item("m2", "how are you"), Item("m3", "fine thanks")])
    b = _turn([Item("m2", "how are you today"), Item("m3", "fine thanks"), Item("m4", "good to hear")])
    diff = a.diff(b)
    assert isinstance(diff, LayoutDiff)
    history = next(d for d in diff.sections if d.id == "history")
    assert (history.added, history.removed, history.modified) == (("m4",), ("m1",), ("m2",))
    assert history.token_delta == b["history"].final_tokens - a["history"].final_tokens
    assert diff.total_token_delta == b.total_tokens - a.total_tokens
    assert diff.utilisation_a == a.utilisation and diff.utilisation_b == b.utilisation
    policy = next(d for d in diff.sections if d.id == "policy")
    assert not policy.changed
    text = str(diff)
    assert "added: m4" in text and "removed: m1" in text and "modified: m2" in text and "policy" not in text


def test_diff_names_why_an_item_left() -> None:
    """A removed item that b evicted carries b's reason."""
    items = [Item(f"m{i}", "word " * 5) for i in range(6)]
    a = _turn(items, budget=100)
    b = _turn(items, budget=20)
    history = next(d for d in a.diff(b).sections if d.id == "history")
    assert history.removed
    assert all(history.reasons[i] == "budget" for i in history.removed)
    assert f"{history.removed[0]} (budget)" in str(a.diff(b))


def test_diff_sections_added_and_removed() -> None:
    """A section present in only one layout is reported as added or removed, with its tokens."""
    a = TokenBox(50, counter="whitespace").layout([Section("x", "one two"), Section("old", "three")])
    b = TokenBox(50, counter="whitespace").layout([Section("x", "one two"), Section("new", "four five")])
    diff = diff_layouts(a, b)
    assert diff.sections_added == ("new",) and diff.sections_removed == ("old",)
    new = next(d for d in diff.sections if d.id == "new")
    assert (new.status_a, new.status_b, new.token_delta) == (None, "kept", b["new"].final_tokens)
    assert "(absent) → kept" in str(diff)


def test_identical_layouts_diff_as_identical() -> None:
    """Two layouts of the same input have the same fingerprint and no changed section."""
    a, b = _layout(), _layout()
    diff = a.diff(b)
    assert diff.identical and not diff.changed and diff.total_token_delta == 0
    assert "identical (same fingerprint)" in str(diff)


def test_diff_to_dict_and_html(tmp_path: Path) -> None:
    """The diff serialises to a dict and to self-contained HTML with the deltas."""
    a = _turn([Item("m1", "hello there")])
    b = _turn([Item("m1", "hello there"), Item("m2", "and more words")])
    diff = a.diff(b)
    data = diff.to_dict()
    assert data["total_token_delta"] == diff.total_token_delta
    assert data["sections"][1]["added"] == ["m2"]
    path = tmp_path / "diff.html"
    page = diff.to_html(str(path))
    assert path.read_text(encoding="utf-8") == page and page.startswith("<!DOCTYPE html>")
    assert f"{diff.total_token_delta:+,}" in page and "<td>m2</td>" in page
    assert "<script" not in page
    assert diff._repr_html_() in page


def test_reports_speak_plainly_critical_is_not_prio_0_and_plurals_agree() -> None:
    """Issue 10 item 16: a legend explains the columns, critical sections read `critical`, plurals are right."""
    docs = [Item(f"d{i}", "x " * 6, score=1.0 - i / 10) for i in range(3)]
    layout = TokenBox(18, counter="whitespace").layout(
        [Section("policy", "be brief"), Section("docs", docs, shrink=1, eviction="lowest_score", omission_marker=True)]
    )
    assert [r.id for r in layout.removed] == ["d2"]
    assert layout["docs"].marker == "[1 item omitted: d2]"
    text = layout.explain()
    policy_row = next(line for line in text.splitlines() if line.startswith("policy"))
    assert policy_row.split()[:3] == ["policy", "kept", "critical"] and " 0 " not in policy_row[:30]
    assert "1 item removed" in text and "1 items" not in text
    assert "claim" in text.splitlines()[1] and "base" not in text.splitlines()[1]
    assert "prio: lower is lost first (critical sections are never cut)" in text
    page = layout_html(layout)
    assert '<td class="n">critical</td>' in page and "1 item removed" in page and "1 items" not in page
    assert "lower is lost first" in page and "basis" not in page.split("<table")[0]


def test_html_header_and_total_row_agree() -> None:
    """The header's share of the window is the total row's; the header also states the share of the allowed max."""
    layout = _layout()
    page = layout_html(layout)
    head = re.search(r'<div class="tb-head">(.*?)</div>', page)
    assert head is not None
    window = max(layout.budget.max_tokens, layout.max_tokens, layout.total_tokens, 1)
    share = f"{layout.total_tokens / window:.1%}"
    assert f"{share} of the {window:,}-token window" in head.group(1)
    assert f"of the {layout.max_tokens:,} tokens allowed ({layout.utilisation:.1%})" in head.group(1)
    total_row = re.search(r'<tr class="tb-total">(.*?)</tr>', page)
    assert total_row is not None and f'<td class="n">{share}</td>' in total_row.group(1)


def test_unmeasured_drops_and_reasons_are_explained() -> None:
    """`outranked` and `basis` come with plain explanations in both reports."""
    layout = TokenBox(6, counter="whitespace", strict=True).layout(
        [
            Section("a", "one two three four five six", shrink=1, priority=2),
            Section("b", "x y", shrink=1),
            Section("c", "z", shrink=1, priority=-1),
        ]
    )
    assert "drop:outranked (higher priorities filled the budget; not measured)" in layout.explain()
    assert "dropped whole — higher-priority sections already filled the budget" in layout_html(layout)


def test_list_section_status_says_how_many_items_it_kept() -> None:
    """A list section that kept its claim but lost items says 'kept 2 of 5 items', in text and HTML."""
    items = [Item(f"d{i}", f"document {i} text", score=1 - i / 10) for i in range(5)]
    layout = TokenBox(40, counter="whitespace").layout(
        [Section("docs", items, shrink=1, basis=6, eviction="lowest_score")]
    )
    section = layout["docs"]
    assert section.status == "kept" and len(section.removed) == 3
    assert "kept 2 of 5 items" in layout.explain() and "kept 2 of 5 items" in layout_html(layout)


def test_explain_groups_removed_items_and_all_lists_every_one() -> None:
    """explain() puts items removed for one reason on one line; explain(all=True) lists each with its numbers."""
    turns = [Item(f"t{i}", "word " * 5, role="user") for i in range(30)]
    layout = TokenBox(20, counter="whitespace").layout([Section("history", turns, shrink=1)])
    short, full = layout.explain(), layout.explain(all=True)
    assert short.count("removed to fit the budget") == 1 and "t0, t1, …, t25" in short and "--all" in short
    assert all(f"history/{r.id} (" in full for r in layout.removed)


def test_html_names_segments_too_narrow_for_a_label() -> None:
    """Sections whose bar segments are too narrow for their names are named under the bar."""
    layout = TokenBox(1000, counter="whitespace").layout([Section("tiny", "a b"), Section("big", "w " * 900)])
    assert "narrow segments, left to right: tiny 2" in layout_html(layout)
