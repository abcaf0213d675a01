"""Fast exact BPE counters against tiktoken: exactness and speed, side by side in one run (issue 16 §1).

Run on purpose: ``.venv/bin/python benchmarks/bench_counters.py``.  Needs the ``fast`` extra and, to compare both
candidates, ``rs-bpe`` (``pip install bpe-openai rs-bpe``).  Prints a table; asserts nothing.

For each encoding (o200k_base, cl100k_base) and each candidate library it checks that counts equal tiktoken's
``len(encode_ordinary(text))`` on English prose, source code, JSON, CJK, emoji, whitespace runs, adversarial long
runs and 10,000 random Unicode strings, and that count-up-to-a-limit agrees with the exact count; then it times
counting a ~1 MB mixed corpus and count-up-to-a-limit (8k) on it, reporting the median and spread of 5 runs as a
ratio to tiktoken's time.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tokenbox_core.tokens import get_counter  # noqa: E402

SEEDS = Path("/work/shared/seeds")


def corpus() -> dict[str, list[str]]:
    rng = random.Random(16)
    english = [p.read_text() for p in sorted(SEEDS.glob("*.txt"))] or ["The quick brown fox. " * 500]
    code = [p.read_text() for p in sorted((ROOT / "tokenbox_core").rglob("*.py"))]
    data = [json.dumps({"id": i, "name": f"item {i}", "tags": ["a", "b"], "v": i / 7}, indent=2) for i in range(200)]
    cjk = ["日本語のテキストを数えます。中文文本也需要计算。한국어 문장도 있습니다。" * 40]
    emoji = ["👩‍👩‍👧‍👦🏳️‍🌈 ok 👍🏽👍🏽 " * 200, "🙂" * 3000]
    spaces = [" " * n + "x" for n in (1, 2, 3, 17, 1000)] + ["\n" * 50 + "a", "\t \n " * 300, "a \n\n  b\r\n\r\n c   "]
    long_runs = ["a" * 100_000, "1" * 50_000, "ab" * 40_000, "\u00e9" * 20_000, "!" * 30_000, " " * 60_000]
    alphabet = [chr(c) for c in range(32, 0x2FFF) if not 0xD800 <= c <= 0xDFFF] + ["\n", "\t", " ", "🙂", "𝔘"]
    randoms = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(10_000)]
    return {
        "english": english,
        "code": code,
        "json": data,
        "cjk": cjk,
        "emoji": emoji,
        "whitespace": spaces,
        "long runs": long_runs,
        "random unicode (10k)": randoms,
    }


def candidates(encoding: str) -> dict[str, tuple[Callable[[str], int], Callable[[str, int], int | None]]]:
    out = {}
    try:
        from bpe_openai import _bindings

        tok = _bindings.tokenizer_for_encoding(encoding)
        out["bpe-openai"] = (tok.count, tok.count_till_limit)
    except ImportError:
        pass
    try:
        from rs_bpe.bpe import openai

        rs = getattr(openai, encoding)()
        out["rs-bpe"] = (rs.count, rs.count_till_limit)
    except ImportError:
        pass
    return out


def timed(fn: Callable[[], object], repeat: int = 5) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    texts = corpus()
    big = "\n".join(texts["english"] + texts["code"][:40] + texts["json"][:100] + texts["cjk"] + texts["emoji"])
    while len(big) < 1_000_000:
        big += "\n" + big
    big = big[:1_000_000]
    print(f"speed corpus: {len(big):,} characters")
    for encoding in ("o200k_base", "cl100k_base"):
        enc = get_counter(encoding).encoding  # type: ignore[attr-defined]
        reference = enc.encode_ordinary
        for name, (count, upto) in candidates(encoding).items():
            mismatches = 0
            checked = 0
            for kind, group in texts.items():
                for text in group:
                    want = len(reference(text))
                    got = count(text)
                    limit = max(0, want - 1)
                    capped = upto(text, limit)
                    ok_upto = capped is None if want > limit else capped == want
                    full = upto(text, want)
                    checked += 1
                    if got != want or not ok_upto or full != want:
                        mismatches += 1
                        if mismatches <= 5:
                            print(f"  MISMATCH {encoding} {name} {kind}: tiktoken {want}, {name} {got} {capped} {full}")
            base = timed(lambda r=reference: len(r(big)))
            mine = timed(lambda c=count: c(big))
            limited = timed(lambda u=upto: u(big, 8_000))
            med = statistics.median(base)
            print(
                f"{encoding:12} {name:11} exact on {checked - mismatches}/{checked} texts | "
                f"count {statistics.median(mine) / med:.2f}x tiktoken "
                f"(range {min(mine) / med:.2f}-{max(mine) / med:.2f}; tiktoken {med * 1000:.0f} ms) | "
                f"count-up-to 8k {statistics.median(limited) * 1000:.2f} ms"
            )


if __name__ == "__main__":
    main()
