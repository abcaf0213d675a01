"""Counting accuracy: chars/4 with its 30 % margin, and the same after usage calibration, against a real Claude
tokenizer, on text held out from calibration.

Truth: Anthropic's own tokenizer for its older models, the ``tokenizer.json`` the ``anthropic`` Python SDK
shipped until it removed the local ``client.count_tokens()`` (anthropic-sdk-python at commit 7ca6923, the parent
of 3407630 "remove legacy client.count_tokens()", 2024-11-04; its docstring: "only accurate for older models,
e.g. claude-2.1"; sha256 c241737d…).  Claude 3 and later count with tokenizers that are not published, so these
figures measure the method on a real Claude tokenizer, not Claude 4's counts.  The counts are recorded in
``benchmarks/data/claude21_counts.jsonl`` (one line per text: kind, source, sha256 prefix, characters, count);
the texts are rebuilt from this Python's standard library, and a text whose hash does not match is skipped.

Corpus (nothing downloaded, nothing from this repository): four kinds of text, chunked at 200–2,000 characters,

- ``prose``: the Python reference manual's topics (``pydoc_data``), paragraph groups;
- ``code``: top-level functions and classes of the standard library's modules (``Lib/*.py``);
- ``json``: ``unicodedata`` records of code-point blocks (Latin, Greek, Cyrillic, CJK, symbols) as JSON;
- ``cjk``: the Chinese, Japanese and Korean sample texts in ``Lib/test/cjkencodings/*-utf8.txt``.

Protocol: each source (a topic, a module, a block, a file) goes wholly to the calibration half or the held-out
half (by a hash of its name); the calibrator sees only the calibration half, as plain (text, count) pairs, and
every figure is measured on the held-out half.  Errors are (estimate − truth) / truth per text: mean, mean
absolute, the share of texts under-counted (the unsafe direction for a budget), the worst under-count, and the
error of the total.

Run: ``python benchmarks/bench_calibration.py``.
Re-record the counts: ``git -C anthropic-sdk-python show 7ca6923:src/anthropic/tokenizer.json > tokenizer.json``
then ``python benchmarks/bench_calibration.py --record tokenizer.json`` (needs the ``tokenizers`` package).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import statistics
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tokenbox_core.models import UsageCalibrator
from tokenbox_core.models._counting import MarginApproximateCounter

DATA = Path(__file__).resolve().parent / "data" / "claude21_counts.jsonl"
MODEL = "claude-2.1"
LO, HI = 200, 2_000
PER_KIND = {"prose": 300, "code": 300, "json": 150, "cjk": 150}
BLOCKS = (0x0041, 0x00C0, 0x0391, 0x0410, 0x2190, 0x2200, 0x3041, 0x4E00, 0x5E00, 0xAC00, 0x1F600)


@dataclass(frozen=True)
class Sample:
    kind: str
    source: str
    text: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]


def _chunks(pieces: list[str]) -> Iterator[str]:
    """Consecutive pieces grouped into chunks of LO..HI characters (a longer piece is cut at HI)."""
    current = ""
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if len(current) + len(piece) + 2 > HI and len(current) >= LO:
            yield current
            current = ""
        current = f"{current}\n\n{piece}" if current else piece
        while len(current) > HI:
            yield current[:HI]
            current = current[HI:]
    if len(current) >= LO:
        yield current


def _prose() -> Iterator[Sample]:
    import pydoc_data.topics

    topics = pydoc_data.topics.topics
    for key in sorted(topics):
        for text in _chunks(topics[key].split("\n\n")):
            yield Sample("prose", f"pydoc:{key}", text)


def _code() -> Iterator[Sample]:
    for path in sorted(Path(os.__file__).parent.glob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                segment = ast.get_source_segment(source, node) or ""
                if LO <= len(segment) <= HI:
                    yield Sample("code", f"lib:{path.name}", segment)


def _json() -> Iterator[Sample]:
    for start in BLOCKS:
        rows = []
        for cp in range(start, start + 480):
            ch = chr(cp)
            rows.append(
                {
                    "cp": f"U+{cp:04X}",
                    "char": ch,
                    "name": unicodedata.name(ch, ""),
                    "category": unicodedata.category(ch),
                    "bidi": unicodedata.bidirectional(ch),
                }
            )
        for i in range(0, len(rows), 12):
            yield Sample("json", f"unicodedata:{start:04X}", json.dumps(rows[i : i + 12], ensure_ascii=False, indent=1))


def _cjk() -> Iterator[Sample]:
    folder = Path(os.__file__).parent / "test" / "cjkencodings"
    for path in sorted(folder.glob("*-utf8.txt")):
        text = path.read_bytes().decode("utf-8", errors="replace")
        for chunk in _chunks(text.split("\n")):
            yield Sample("cjk", f"cjk:{path.name}", chunk)


def corpus() -> list[Sample]:
    """The samples, deterministic for a given Python installation; duplicates removed."""
    out: list[Sample] = []
    seen: set[str] = set()
    for kind, make in (("prose", _prose), ("code", _code), ("json", _json), ("cjk", _cjk)):
        taken = [s for s in make() if not (s.text in seen or seen.add(s.text))]  # type: ignore[func-returns-value]
        step = max(1, len(taken) // PER_KIND[kind])
        out.extend(taken[::step][: PER_KIND[kind]])
    return out


def record(tokenizer_file: str) -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_file)
    digest = hashlib.sha256(Path(tokenizer_file).read_bytes()).hexdigest()
    DATA.parent.mkdir(exist_ok=True)
    lines = [json.dumps({"tokenizer_sha256": digest, "source": "anthropic-sdk-python@7ca6923 tokenizer.json"})]
    for s in corpus():
        count = len(tokenizer.encode(s.text).ids)
        lines.append(
            json.dumps({"kind": s.kind, "source": s.source, "sha": s.digest, "chars": len(s.text), "count": count})
        )
    DATA.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"recorded {len(lines) - 1} counts in {DATA}")


def _held_out(source: str) -> bool:
    return hashlib.sha256(source.encode()).digest()[0] % 2 == 1


def _errors(estimate: Callable[[str], int], samples: list[tuple[Sample, int]]) -> dict[str, float]:
    rel = [estimate(s.text) / truth - 1 for s, truth in samples]
    total = sum(estimate(s.text) for s, _ in samples) / sum(t for _, t in samples) - 1
    return {
        "mean": statistics.fmean(rel),
        "mean_abs": statistics.fmean(abs(r) for r in rel),
        "under": sum(r < 0 for r in rel) / len(rel),
        "worst_under": min(0.0, min(rel)),
        "total": total,
    }


def _row(name: str, e: dict[str, float]) -> str:
    return (
        f"{name:<48} {e['mean']:>+7.1%} {e['mean_abs']:>7.1%} {e['under']:>7.1%} {e['worst_under']:>+8.1%} "
        f"{e['total']:>+7.1%}"
    )


def evaluate() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    header, recorded = rows[0], {(r["source"], r["sha"]): r["count"] for r in rows[1:]}
    samples = [(s, recorded[(s.source, s.digest)]) for s in corpus() if (s.source, s.digest) in recorded]
    print(f"truth: {header['source']} (sha256 {header['tokenizer_sha256'][:16]}…)")
    print(f"{len(samples)} of {len(rows) - 1} recorded texts rebuilt from this Python's standard library")
    calibrate = [(s, t) for s, t in samples if not _held_out(s.source)]
    held = [(s, t) for s, t in samples if _held_out(s.source)]
    kinds = sorted({s.kind for s, _ in samples})
    for kind in kinds:
        c = sum(s.kind == kind for s, _ in calibrate)
        h = sum(s.kind == kind for s, _ in held)
        print(f"  {kind:<6} {c:>4} to calibrate, {h:>4} held out")
    margin = MarginApproximateCounter(0.30)

    def calibrated(pairs: list[tuple[Sample, int]], base: str = "o200k_base") -> Callable[[str], int]:
        cal = UsageCalibrator(base=base)
        for s, truth in pairs:
            cal.observe(MODEL, s.text, truth)
        counter = cal.counter(MODEL)
        got = cal.calibration(MODEL)
        print(f"    [{base}, {got.observations} observations: ratio {got.ratio:.3f}, factor {float(got.factor):.4f}]")
        return counter.count

    o200k = tiktoken_count()
    title = f"{'held-out texts, estimate':<48} {'mean':>7} {'|mean|':>7} {'under':>7} {'worst':>8} {'total':>7}"
    print("\nAll kinds mixed (calibrated on all kinds of the calibration half):")
    print(title)
    print(_row("chars/4 (no margin)", _errors(lambda t: -(-len(t) // 4), held)))
    print(_row("chars/4 + 30 % (today's estimate)", _errors(margin.count, held)))
    print(_row("o200k_base (no margin)", _errors(o200k, held)))
    print(_row("o200k_base + 30 % (uncalibrated)", _errors(lambda t: -(-o200k(t) * 13 // 10), held)))
    print(_row("calibrated chars/4", _errors(calibrated(calibrate, "approximate"), held)))
    print(_row("calibrated o200k_base", _errors(calibrated(calibrate), held)))
    print("\nPer kind (held-out texts of one kind):")
    print(title)
    for kind in kinds:
        mine = [(s, t) for s, t in held if s.kind == kind]
        own = [(s, t) for s, t in calibrate if s.kind == kind]
        print(_row(f"{kind}: chars/4 + 30 %", _errors(margin.count, mine)))
        for base in ("approximate", "o200k_base"):
            name = "chars/4" if base == "approximate" else base
            print(_row(f"{kind}: calibrated {name}, mixed calibration", _errors(calibrated(calibrate, base), mine)))
            print(_row(f"{kind}: calibrated {name}, same kind", _errors(calibrated(own, base), mine)))
    print("\nHow many observations it takes (prose, calibrated on the first n prose texts of the calibration half):")
    print(title)
    prose_cal = sorted(((s, t) for s, t in calibrate if s.kind == "prose"), key=lambda p: p[0].digest)
    prose_held = [(s, t) for s, t in held if s.kind == "prose"]
    for base in ("approximate", "o200k_base"):
        for n in (0, 1, 5, 20, 80, len(prose_cal)):
            name = "chars/4" if base == "approximate" else base
            print(_row(f"{name}, n = {n}", _errors(calibrated(prose_cal[:n], base), prose_held)))


def tiktoken_count() -> Callable[[str], int]:
    from tokenbox_core import get_counter

    return get_counter("o200k_base").count  # the local copy TokenBox finds (never downloaded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", metavar="TOKENIZER_JSON", help="re-record the counts with this tokenizer.json")
    args = parser.parse_args()
    if args.record:
        record(args.record)
    else:
        evaluate()


if __name__ == "__main__":
    main()
