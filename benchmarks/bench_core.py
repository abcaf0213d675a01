"""Core engine benchmark: Token Box layouts against the floor of one tiktoken encode pass (issues 2 §8, 16 §1).

Run on purpose: ``.venv/bin/python benchmarks/bench_core.py [ROUNDS] [words|mixed]`` (the big sections' text:
the corpus vocabulary, default, or prose + source code).  Prints a table; asserts nothing.
Every figure is CPU time of this process, runs interleaved with the floor they are compared to, and reported as
the median ratio with its range (min–max) over the runs, because the machine is shared and noisy.

Rows, each for the fast exact counter (``rs-bpe``, the default when the ``fast`` extra is installed) and for the
tiktoken counter (the fallback):
- cold layout of 1,000 sections (~200k tokens) into 128k (goal ≤ 0.8x one encode pass);
- warm re-layout (goal ≤ 0.05x cold), three ways: the identical input again (the box's layout memo answers),
  the input with one section replaced, and that input with a new section appended (the realistic next chat
  turn): the box re-decides only the window of the protection order the edit can reach, carrying the rest to
  its new positions (``tokenbox_core/box/incremental.py``, ``realign.py``); and that input under a new budget
  (claims do not depend on it: the window moves to where they cross the new target);
- a 1 MB and a 10 MB section that fits (goal ≤ 0.7x one encode pass over it) and one cut to 128k (goal ≤ 1.2x);
- peak traced memory relative to the input text (goal ≤ 3x).
"""

from __future__ import annotations

import dataclasses
import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable

from corpus import WORDS

from tokenbox_core import ContextBudget, Item, Section, TokenBox
from tokenbox_core.tokens import COUNT_CACHE, TiktokenCounter, TokenCounter, fast_cut
from tokenbox_core.tokens.fast import FastBpeCounter, fast_available


def make_text(rng: random.Random, n_words: int) -> str:
    lines = []
    line: list[str] = []
    for i in range(n_words):
        line.append(rng.choice(WORDS))
        if i % 17 == 16:
            lines.append(" ".join(line) + ".")
            line = []
    lines.append(" ".join(line))
    return "\n".join(lines)


def make_sections(n: int, seed: int = 7, words: int = 190) -> list[Section]:
    rng = random.Random(seed)
    sections = []
    for i in range(n):
        if i < 5:
            sections.append(Section(f"s{i}", make_text(rng, 100)))
        elif i % 10 == 0:
            items = [Item(id=f"s{i}-{j}", content=make_text(rng, words // 5), score=rng.random()) for j in range(5)]
            sections.append(Section(f"s{i}", items, priority=rng.randint(0, 5), shrink=1, eviction="lowest_score"))
        else:
            sections.append(
                Section(
                    f"s{i}",
                    make_text(rng, words),
                    priority=rng.randint(0, 5),
                    shrink=rng.choice([1, 2]),
                    grow=rng.choice([0, 1]),
                )
            )
    return sections


def full_text(sections: list[Section]) -> str:
    parts = []
    for s in sections:
        parts.append(s.content if isinstance(s.content, str) else "\n".join(it.content for it in s.content))
    return "\n\n".join(parts)


def mixed_text(chars: int) -> str:
    """English prose (the specs in ../shared/seeds), this project's source code and JSON, repeated to ``chars``."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    seeds = [d / "shared" / "seeds" for d in (root.parent, root.parent.parent)]
    parts = [p.read_text() for d in seeds for p in sorted(d.glob("*.txt"))]
    parts += [p.read_text() for p in sorted((root / "tokenbox_core").rglob("*.py"))]
    text = "\n".join(parts) or make_text(random.Random(1), 10_000)
    return (text * (chars // len(text) + 1))[:chars]


BIG_TEXT = "words"
"""The text of the big sections: ``words`` (the corpus vocabulary) or ``mixed`` (prose, code, JSON)."""

CLOCK = time.process_time


def forget() -> None:
    """Cold: no counts cached, no ids or cuts remembered from an earlier run over the same text."""
    COUNT_CACHE.clear()
    fast_cut._memo.__dict__.clear()


def timed(fn: Callable[[], object], setup: Callable[[], object] | None = None) -> float:
    if setup is not None:
        setup()
    gc.collect()
    start = CLOCK()
    fn()
    return CLOCK() - start


def spread(ratios: list[float], goal: float | None = None) -> str:
    med = statistics.median(ratios)
    mark = "" if goal is None else ("  ok" if med <= goal else f"  MISSES goal {goal}")
    return f"{med:6.3f}x (range {min(ratios):.3f}-{max(ratios):.3f}){mark}"


def fresh(sections: list[Section]) -> list[Section]:
    """Equal sections as new objects: no measurements memoised on them."""
    return [dataclasses.replace(s) for s in sections]


def peak_memory(fn: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def bench_corpus(counter: TokenCounter, rounds: int) -> list[tuple[str, str]]:
    enc = TiktokenCounter("o200k_base").encoding
    sections = make_sections(1000)
    text = full_text(sections)
    budget = ContextBudget(max_tokens=128_000)
    box = TokenBox(budget, counter=counter)
    layout = box.layout(sections)
    cold: list[float] = []
    same: list[float] = []
    warm: list[float] = []
    turn: list[float] = []
    resized: list[float] = []
    cold_ratio: list[float] = []
    for r in range(rounds):
        encode_s = timed(lambda: enc.encode_ordinary(text))
        pending = fresh(sections)
        cold_box = TokenBox(budget, counter=counter)  # no layout memo, no measurement on the fresh sections
        cold_s = timed(lambda p=pending, b=cold_box: b.layout(p), setup=forget)
        cold.append(cold_s)
        cold_ratio.append(cold_s / encode_s)
        box.layout(sections)  # re-warm after the cold run cleared the count cache
        same.append(timed(lambda: box.layout(sections)))
        changed = list(sections)
        changed[500] = Section("s500", make_text(random.Random(r + 99), 150), priority=3, shrink=1)
        warm.append(timed(lambda c=changed: box.layout(c)))
        appended = [*changed, Section(f"turn{r}", make_text(random.Random(r + 7), 150), priority=5, shrink=1)]
        turn.append(timed(lambda a=appended: box.layout(a)))
        other = TokenBox(budget, counter=counter)  # its own box: ``box``'s state stays the chat's
        other.layout(appended)
        other.budget = ContextBudget(max_tokens=128_000 + (-1) ** r * (2_000 + 500 * r))  # smaller, larger, ...
        resized.append(timed(lambda a=appended, b=other: b.layout(a)))
    warm_ratio = [w / statistics.median(cold) for w in warm]
    same_ratio = [w / statistics.median(cold) for w in same]
    turn_ratio = [w / statistics.median(cold) for w in turn]
    resized_ratio = [w / statistics.median(cold) for w in resized]
    forget()
    cold_input = fresh(sections)
    peak = peak_memory(lambda: TokenBox(budget, counter=counter).layout(cold_input))
    return [
        ("input", f"{len(sections):,} sections, {len(enc.encode_ordinary(text)):,} tokens → {layout.total_tokens:,}"),
        ("cold layout / one encode pass", spread(cold_ratio, 0.8)),
        ("warm re-layout, identical input / cold", spread(same_ratio, 0.05)),
        ("warm re-layout, one section changed / cold", spread(warm_ratio, 0.05)),
        ("warm re-layout, one section appended / cold", spread(turn_ratio, 0.05)),
        ("warm re-layout, budget changed / cold", spread(resized_ratio)),
        ("peak memory / input text", f"{peak / sys.getsizeof(text):6.2f}x (goal 3x)"),
    ]


def bench_big(counter: TokenCounter, chars: int, rounds: int) -> list[tuple[str, str]]:
    enc = TiktokenCounter("o200k_base").encoding
    rng = random.Random(chars)
    body = make_text(rng, chars // 6)[:chars] if BIG_TEXT == "words" else mixed_text(chars)
    policy = Section("policy", "You are a careful assistant.")
    # a new box per run: a box remembers its last layouts (equal input, same answer), and these rows are cold
    fits = lambda: TokenBox(10 * chars, counter=counter)  # noqa: E731
    cut = lambda: TokenBox(128_000, counter=counter)  # noqa: E731
    fit_ratio: list[float] = []
    cut_ratio: list[float] = []
    floor: list[float] = []
    raw = getattr(counter, "_raw_count", None)
    for _ in range(rounds):
        encode_s = timed(lambda: enc.encode_ordinary(body))
        if isinstance(counter, FastBpeCounter) and raw is not None:
            floor.append(timed(lambda: raw(body)) / encode_s)
        box, doc = fits(), Section("doc", body, shrink=1)
        fit_ratio.append(timed(lambda b=box, d=doc: b.layout([policy, d]), forget) / encode_s)
        box, doc = cut(), Section("doc", body, shrink=1)
        cut_ratio.append(timed(lambda b=box, d=doc: b.layout([policy, d]), forget) / encode_s)
    forget()
    box, doc = cut(), Section("doc", body, shrink=1)
    peak = peak_memory(lambda: box.layout([policy, doc]))
    label = f"{chars / 1e6:g} MB section"
    rows = [(f"{label}: one fast count pass / one encode pass", spread(floor))] if floor else []
    return [
        *rows,
        (f"{label} that fits / one encode pass", spread(fit_ratio, 0.7)),
        (f"{label} cut to 128k / one encode pass", spread(cut_ratio, 1.2)),
        (f"{label} cut: peak memory / input text", f"{peak / sys.getsizeof(body):6.2f}x (goal 3x)"),
    ]


def main() -> None:
    global BIG_TEXT
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    BIG_TEXT = sys.argv[2] if len(sys.argv) > 2 else "words"
    counters: list[tuple[str, TokenCounter]] = []
    if fast_available():
        counters.append(("fast counter (rs-bpe)", FastBpeCounter("o200k_base")))
    counters.append(("tiktoken counter", TiktokenCounter("o200k_base")))
    print(f"TokenBox core benchmark: CPU time, median ratio (range) over {rounds} interleaved runs, o200k_base")
    print(f"big sections' text: {BIG_TEXT}")
    for name, counter in counters:
        rows = bench_corpus(counter, rounds)
        rows += bench_big(counter, 1_000_000, rounds)
        rows += bench_big(counter, 10_000_000, max(3, rounds // 2))
        width = max(len(r[0]) for r in rows)
        print(f"\n{name}")
        for label, value in rows:
            print(f"  {label:<{width}}  {value}")


if __name__ == "__main__":
    main()
