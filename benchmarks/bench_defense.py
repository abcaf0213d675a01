"""Defence benchmark: sanitising and scanning 1 MB of English prose against one tiktoken pass over it.

The text is 1 MB of prose that does not repeat (``_prose.py``: this repository's docs and README, the specs,
the Python reference manual and the standard library's docstrings), cut at paragraph boundaries into inputs
of about 2 KB, the way a compile sees retrieved documents and tool results.  Each trial's inputs carry a new
nonce, so nothing is served from a memo.

- ``sanitize + detect``: ``tokenbox_core.defense._sanitize(text)`` and ``HeuristicDetector().detect(text, "tool")``
  on every input; floor: ``tiktoken pass``, one tiktoken o200k ``encode_ordinary`` over the whole MB;
- ``sanitize``: the sanitiser alone, beside the same floor.

The number of inputs the detector flags (score >= 0.5) is reported too: on clean prose, each one is a false
positive.

Spotlighting's token cost (``DefensePolicy(spotlight=...)``, Hines et al. 2024, arXiv 2403.14720) is reported on
the same MB, in o200k tokens: the inputs as they are (``"delimit"``: boundaries only, which cost the same per block
whatever the mode), datamarked (``"datamark"``: every run of blanks becomes the marker ``ˆ``) and base64-encoded
(``"encode"``), each as a percentage over plain; plus the tokens of the system-tier hierarchy statement per mode
(paid once per prompt).

Run: ``python benchmarks/bench_defense.py [--baseline PATH] [--rounds N] [--trials N]``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from _prose import paragraphs
from _timing import Measured, Row, main, tiktoken_encoding, trials

from tokenbox_core.defense import HeuristicDetector, hierarchy_statement, sanitize
from tokenbox_core.defense._spotlight import spotlight

SIZE = 1_000_000
INPUT = 2_000
_runs = itertools.count()


def inputs(source: list[str]) -> list[str]:
    """The MB as inputs of about 2 KB (whole paragraphs), each led by this run's nonce."""
    nonce = f"[run {next(_runs)}] "
    out: list[str] = []
    current: list[str] = []
    size = 0
    for paragraph in source:
        current.append(paragraph)
        size += len(paragraph) + 2
        if size >= INPUT:
            out.append(nonce + "\n\n".join(current))
            current, size = [], 0
    if current:
        out.append(nonce + "\n\n".join(current))
    return out


def measure(n: int) -> Measured:
    source = paragraphs(SIZE)
    encoding = tiktoken_encoding()
    detector = HeuristicDetector()
    for text in inputs(source)[:20]:  # imports and compiled patterns, untimed
        detector.detect(sanitize(text), "tool")

    def scanned() -> Callable[[], Any]:
        texts = inputs(source)

        def run() -> None:
            for text in texts:
                sanitize(text)
                detector.detect(text, "tool")

        return run

    def sanitised() -> Callable[[], Any]:
        texts = inputs(source)
        return lambda: [sanitize(text) for text in texts]

    def floor() -> Callable[[], Any]:
        whole = "\n\n".join(inputs(source))
        return lambda: encoding.encode_ordinary(whole)

    ms = trials({"sanitize + detect": scanned, "sanitize": sanitised, "tiktoken pass": floor}, n)
    texts = inputs(source)
    return Measured(
        ms,
        {
            "inputs": len(texts),
            "bytes": sum(len(t.encode("utf-8")) for t in texts),
            "inputs flagged (score >= 0.5)": sum(detector.detect(t, "tool").score >= 0.5 for t in texts),
            **spotlight_cost(texts, lambda text: len(encoding.encode_ordinary(text))),
        },
    )


def spotlight_cost(texts: list[str], count: Callable[[str], int]) -> dict[str, str]:
    """Tokens of ``texts`` per spotlighting mode, and of the hierarchy statement each mode adds to the system tier."""
    plain = sum(count(t) for t in texts)
    out = {"spotlight tokens, delimit (plain)": f"{plain:,}"}
    for mode in ("datamark", "encode"):
        marked = sum(count(spotlight(t, mode)) for t in texts)
        out[f"spotlight tokens, {mode}"] = f"{marked:,} (+{100 * (marked - plain) / plain:.1f} %)"
    statements = ", ".join(f"{mode} {count(hierarchy_statement(mode))}" for mode in ("delimit", "datamark", "encode"))
    out["hierarchy statement tokens (once per prompt)"] = statements
    return out


ROWS = (Row("sanitize + detect", "tiktoken pass"), Row("sanitize", "tiktoken pass"), Row("tiktoken pass"))

if __name__ == "__main__":
    main("bench_defense: sanitise and scan 1 MB of distinct English prose, vs one tiktoken pass", measure, ROWS)
