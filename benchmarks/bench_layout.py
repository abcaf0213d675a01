"""Layout benchmark: the Token Box against one tiktoken encode pass of the same text.

Cases (each trial on text no counter has seen, so "cold" means cold):

- ``cold layout``: 1,000 prose sections (about 203k o200k tokens) into a 128k budget, a new ``TokenBox``;
  floor: one tiktoken ``encode_ordinary`` pass over the same text (``tiktoken pass (sections)``);
- ``re-layout, one section changed``: the same box lays the sections out again with one of them replaced
  (measured against the cold layout: what a second turn pays);
- ``cut 1 MB section``: one 1 MB section cut to fit 128k; floor: one tiktoken pass over that MB.  Its peak
  Python memory (``tracemalloc``, so not what native tokenizers allocate) is reported over the text's size.

Both variants are run: with the ``fast`` extra's exact counter and with tiktoken alone (``TOKENBOX_FAST=0``).

Run: ``python benchmarks/bench_layout.py [--baseline PATH] [--rounds N] [--trials N]``.
"""

from __future__ import annotations

import itertools
import tracemalloc

from _prose import prose
from _timing import Measured, Row, main, tiktoken_encoding, trials

from tokenbox_core import ContextBudget, Section, TokenBox, get_counter

BUDGET = ContextBudget(max_tokens=128_000)
SECTIONS = 1_000
SECTION_CHARS = 850
"""Characters per section: 1,000 of them are about 203k o200k tokens of this prose."""
BIG = 1_000_000
_runs = itertools.count()


def _nonce() -> str:
    """A prefix no earlier trial used: every text is new to every cache."""
    return f"[run {next(_runs)}] "


def sections(text: str) -> list[Section]:
    """The layout's input: a critical system section, then 999 flexible ones of mixed priority."""
    nonce = _nonce()
    out = [Section("system", nonce + text[:SECTION_CHARS])]
    for i in range(1, SECTIONS):
        chunk = nonce + text[i * SECTION_CHARS : (i + 1) * SECTION_CHARS]
        out.append(Section(f"s{i}", chunk, priority=i % 10, shrink=1))
    return out


def measure(n: int) -> Measured:
    text = prose(BIG)  # the sections are its first 850 KB; the 1 MB section all of it (a new text by its nonce)
    encoding = tiktoken_encoding()
    big_text = text
    TokenBox(BUDGET, counter="o200k_base").layout(sections(text[:50_000]))  # load the encodings, untimed

    def cold() -> object:
        parts = sections(text)
        box = TokenBox(BUDGET, counter="o200k_base")
        return lambda: box.layout(parts)

    def floor() -> object:
        joined = "\n".join(s.content for s in sections(text))  # type: ignore[misc]
        return lambda: encoding.encode_ordinary(joined)

    def relayout() -> object:
        parts = sections(text)
        box = TokenBox(BUDGET, counter="o200k_base")
        box.layout(parts)
        changed = list(parts)
        changed[SECTIONS // 2] = Section(changed[SECTIONS // 2].id, _nonce() + text[:SECTION_CHARS], shrink=1)
        return lambda: box.layout(changed)

    def cut() -> object:
        doc = [Section("question", "Summarise the document."), Section("document", _nonce() + big_text, shrink=1)]
        box = TokenBox(BUDGET, counter="o200k_base")
        return lambda: box.layout(doc)

    def big_floor() -> object:
        doc = _nonce() + big_text
        return lambda: encoding.encode_ordinary(doc)

    ms = trials(
        {
            "cold layout": cold,
            "tiktoken pass (sections)": floor,
            "re-layout, one section changed": relayout,
            "cut 1 MB section": cut,
            "tiktoken pass (1 MB)": big_floor,
        },
        n,
    )
    doc = _nonce() + big_text
    box = TokenBox(BUDGET, counter="o200k_base")
    tracemalloc.start()
    layout = box.layout([Section("question", "Summarise the document."), Section("document", doc, shrink=1)])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    counter = get_counter("o200k_base")
    laid = box.layout(sections(text))
    return Measured(
        ms,
        {
            "section tokens (o200k)": sum(counter.count(s.content) for s in sections(text)),  # type: ignore[arg-type]
            "laid out tokens": laid.total_tokens,
            "1 MB cut: tokens kept": layout.total_tokens,
            "1 MB cut: peak Python memory / text bytes": peak / len(doc.encode("utf-8")),
            "counter": type(counter).__name__,
        },
    )


ROWS = (
    Row("cold layout", "tiktoken pass (sections)"),
    Row("tiktoken pass (sections)"),
    Row("re-layout, one section changed", "cold layout"),
    Row("cut 1 MB section", "tiktoken pass (1 MB)"),
    Row("tiktoken pass (1 MB)"),
)

if __name__ == "__main__":
    main(
        "bench_layout: 1,000 sections (~203k tokens) into 128k, and a 1 MB section cut to 128k, vs tiktoken",
        measure,
        ROWS,
        variants={"fast counter (the fast extra)": {}, "tiktoken only (TOKENBOX_FAST=0)": {"TOKENBOX_FAST": "0"}},
    )
