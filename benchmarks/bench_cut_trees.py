"""Cold cut of a 1 MB / 10 MB section to 128k, and of short passages, two source trees side by side (issue 16 §1).

Run on purpose: ``.venv/bin/python benchmarks/bench_cut_trees.py OLD_TREE NEW_TREE [TRIALS] [fast|tiktoken]
[--passages]`` — e.g. OLD_TREE from ``git archive <commit> | tar -x -C /tmp/old``.  Each (text, size, tree) runs in
its own process with that tree on PYTHONPATH, alternating which tree goes first; every process times CPU cuts against
one tiktoken encode pass over the same text (cold: ``bench_core.forget`` and a new box per run) and traces peak
memory.  The text is built by OLD_TREE's ``bench_core`` for both trees (its ``mixed`` text reads the tree's own
sources), and each row prints the layout's total and a digest of its text, so equal outputs are visible.  The
``passages`` row cuts 400 one-line passages to half their tokens each (``--passages``: only that row).  Prints medians
(min–max); asserts nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import subprocess
import sys

CASES = [("words", 1_000_000, 3), ("mixed", 1_000_000, 3), ("words", 10_000_000, 1), ("mixed", 10_000_000, 1)]
PASSAGES = [("passages", 400, 5)]
"""400 single-line passages (~1.3k characters, no newline: only the letter rule gives neutral positions) each cut to
half its tokens, cold — the cut a compile makes of its boundary passage; ``--passages`` runs only these."""


def one_passages(text_tree: str, n: int, rounds: int, which: str) -> None:
    """In a child process: cold cuts of ``n`` passages to half their size against one encode pass over them."""
    sys.path.insert(0, os.path.join(text_tree, "benchmarks"))
    import bench_core as b

    from tokenbox_core.tokens import TiktokenCounter
    from tokenbox_core.tokens.fast import FastBpeCounter

    rng = random.Random(n)
    passages = [b.make_text(rng, 180 + rng.randrange(60)).replace("\n", " ") for _ in range(n)]
    counter = FastBpeCounter("o200k_base") if which == "fast" else TiktokenCounter("o200k_base")
    enc = TiktokenCounter("o200k_base").encoding
    limits = [len(enc.encode_ordinary(p)) // 2 for p in passages]
    cuts = [counter.truncate(p, k) for p, k in zip(passages, limits, strict=True)]  # imports, code paths
    ratios = []
    for _ in range(rounds):
        encode_s = b.timed(lambda: [enc.encode_ordinary(p) for p in passages])
        cut_s = b.timed(lambda: [counter.truncate(p, k) for p, k in zip(passages, limits, strict=True)], b.forget)
        ratios.append(cut_s / encode_s)
    digest = hashlib.sha256("\x00".join(cuts).encode()).hexdigest()[:12]
    print(json.dumps({"ratios": ratios, "peak": 0.0, "out": [sum(map(len, cuts)), digest]}))


def one(text_tree: str, kind: str, chars: int, rounds: int, which: str) -> None:
    """In a child process: the cold cut ratios and peak memory of the tree on PYTHONPATH, as one JSON line."""
    sys.path.insert(0, os.path.join(text_tree, "benchmarks"))
    import bench_core as b

    from tokenbox_core import Section, TokenBox
    from tokenbox_core.tokens import TiktokenCounter
    from tokenbox_core.tokens.fast import FastBpeCounter

    b.BIG_TEXT = kind
    body = b.make_text(random.Random(chars), chars // 6)[:chars] if kind == "words" else b.mixed_text(chars)
    counter = FastBpeCounter("o200k_base") if which == "fast" else TiktokenCounter("o200k_base")
    enc = TiktokenCounter("o200k_base").encoding
    policy = Section("policy", "You are a careful assistant.")
    TokenBox(128_000, counter=counter).layout([policy, Section("doc", body[1:], shrink=1)])  # imports, code paths
    ratios = []
    for _ in range(rounds):
        encode_s = b.timed(lambda: enc.encode_ordinary(body))
        box, doc = TokenBox(128_000, counter=counter), Section("doc", body, shrink=1)
        ratios.append(b.timed(lambda b_=box, d=doc: b_.layout([policy, d]), b.forget) / encode_s)
    b.forget()
    box, doc = TokenBox(128_000, counter=counter), Section("doc", body, shrink=1)
    out: list[object] = []
    peak = b.peak_memory(lambda: out.append(box.layout([policy, doc])))
    layout = out[0]
    digest = hashlib.sha256(layout.text.encode()).hexdigest()[:12]  # type: ignore[attr-defined]
    total = layout.total_tokens  # type: ignore[attr-defined]
    print(json.dumps({"ratios": ratios, "peak": peak / sys.getsizeof(body), "out": [total, digest]}))


def main() -> None:
    argv = [a for a in sys.argv if a != "--passages"]
    old, new = argv[1], argv[2]
    trials = int(argv[3]) if len(argv) > 3 else 2
    which = argv[4] if len(argv) > 4 else "fast"
    trees = {"old": old, "new": new}
    res: dict[tuple[str, int, str], dict[str, list[object]]] = {}
    for t in range(trials):
        for kind, chars, rounds in PASSAGES if "--passages" in sys.argv else CASES + PASSAGES:
            for name in ("old", "new") if t % 2 == 0 else ("new", "old"):
                args = [sys.executable, __file__, "--one", old, kind, str(chars), str(rounds), which]
                env = {**os.environ, "PYTHONPATH": trees[name]}
                proc = subprocess.run(args, env=env, capture_output=True, text=True, cwd=trees[name], check=True)
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                row = res.setdefault((kind, chars, name), {"ratios": [], "peak": [], "out": []})
                row["ratios"] += r["ratios"]
                row["peak"].append(r["peak"])
                if r["out"] not in row["out"]:
                    row["out"].append(r["out"])
    for (kind, chars, name), row in sorted(res.items()):
        rs = [float(x) for x in row["ratios"]]  # type: ignore[arg-type]
        peak = statistics.median(float(x) for x in row["peak"])  # type: ignore[arg-type]
        size = f"{chars} x ~1.3k chars" if kind == "passages" else f"{chars / 1e6:g} MB"
        print(
            f"{which} {kind:5} {size} {name}: cut / one encode pass {statistics.median(rs):.2f} "
            f"({min(rs):.2f}-{max(rs):.2f}, n={len(rs)}); peak memory {peak:.2f}x; outputs {row['out']}"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one" and sys.argv[3] == "passages":
        one_passages(sys.argv[2], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    elif len(sys.argv) > 1 and sys.argv[1] == "--one":
        one(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        main()
