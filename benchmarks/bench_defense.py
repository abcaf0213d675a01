"""Defence benchmark: sanitise + detect 1 MB of mixed text, side by side with one tiktoken pass.

Run on purpose: ``.venv/bin/python benchmarks/bench_defense.py``.  Prints a table; asserts nothing.

Issue 12 goal: sanitising and detecting 1 MB of mixed text costs at most 1x one tiktoken
(o200k_base) encode pass over the same text.  The text is a deterministic mix of prose,
code, JSON, base64 images, multilingual text, markdown/HTML and the attack corpus, cut
into inputs of about 2 KB (the way a compile sees tool results and documents).  Each run
times both sides in the same process, alternating, and reports medians, the ratio and the
spread (min-max of the per-run ratios) because the machine is shared and noisy; the ratio is
given in wall-clock and in CPU time (``time.process_time``), the latter being steadier when
other processes compete for the cores.

The detector's rule prefilter runs natively (Aho-Corasick, the ``defense`` extra) when
``ahocorasick-rs`` is installed; the pure-Python fallback is timed in the same run for
comparison (both give identical decisions), and so is the detector as it was before the round-2
speed work (the reference copy in ``tests/core/defense/reference``, same decisions by property).

``--against COMMIT`` times this tree against ``COMMIT``'s detector (extracted with ``git archive``,
imported under another name) and tiktoken in the same alternating runs, after checking that both
decide identically on every input.  With ``--classes`` it also prints a table per input class (prose,
code, JSON, blobs, multilingual, attack-corpus chunks): each input timed several times in turn
(this tree, ``COMMIT``, tiktoken) and its minimum CPU time kept, which is steadier on a busy machine.

``--floor`` prints, per input class, the full sanitise + detect next to its unavoidable part (sanitise, the
detection view, case folding and the automaton pass alone) and tiktoken: what would remain if every rule and
analyzer cost nothing.

``--stages`` prints where the time goes instead: CPU time per MB of each stage of the detector
(each stage function wrapped with a timer, so the total is somewhat inflated), for the shipped
detector and for the pre-speed-work reference kept in ``tests/core/defense/reference``.
"""

from __future__ import annotations

import base64
import collections
import gc
import importlib
import io
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from corpus import WORDS

from tokenbox_core.defense import HeuristicDetector, obfuscate, sanitize
from tokenbox_core.defense.prefilter import native_available
from tokenbox_core.tokens import get_counter

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "core" / "defense" / "corpus"
TARGET = 1_000_000
CHUNK = 2_000


def _corpus_texts() -> list[str]:
    texts = []
    for name in ("attacks", "benign"):
        for line in (CORPUS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            text = row["text"]
            if "transform" in row:
                text = text.replace("{payload}", obfuscate(row["payload"], row["transform"]))
            texts.append(text)
    return texts


def mixed_text(seed: int = 12) -> list[str]:
    """About 1 MB as a list of ~2 KB inputs: 60 % prose, then code, JSON, blobs, multilingual, corpus."""
    return [chunk for _, chunk in mixed_inputs(seed)]


def mixed_inputs(seed: int = 12) -> list[tuple[str, str]]:
    """The inputs of :func:`mixed_text`, each with its class (prose, code, json, blob, multilingual, attack)."""
    rng = random.Random(seed)
    corpus = _corpus_texts()
    multilingual = [
        "Die Anweisungen zur Installation finden Sie im Handbuch auf Seite vier. ",
        "Las instrucciones del vuelo están en el correo anterior. ",
        "Инструкция по сборке лежит в коробке вместе с деталями. ",
        "请按照说明书上的指示安装软件，之前的版本可以卸载。",
        "前回の会議の議事録を添付します。指示があれば修正します。",
    ]
    png = "data:image/png;base64," + base64.b64encode(bytes(rng.randrange(256) for _ in range(1200))).decode()
    code = 'def handler(event):\n    return {"role": "system", "content": event["body"]}\n'
    parts: list[tuple[str, str]] = []
    size = 0
    while size < TARGET:
        kind = rng.random()
        if kind < 0.6:
            words = [rng.choice(WORDS) for _ in range(300)]
            chunk, label = " ".join(words) + ".\n", "prose"
        elif kind < 0.7:
            chunk, label = code * 12, "code"
        elif kind < 0.78:
            chunk = json.dumps(
                {"results": [{"id": i, "snippet": " ".join(rng.choices(WORDS, k=20))} for i in range(8)]}
            )
            label = "json"
        elif kind < 0.84:
            chunk, label = f"![chart]({png})\n", "blob"
        elif kind < 0.92:
            chunk, label = "".join(rng.choice(multilingual) for _ in range(20)), "multilingual"
        else:
            chunk, label = "\n".join(rng.choice(corpus) for _ in range(10)), "attack"
        parts.append((label, chunk[: CHUNK * 2]))
        size += len(chunk[: CHUNK * 2].encode("utf-8"))
    return parts


def main(runs: int = 7) -> None:
    parts = mixed_text()
    total_bytes = sum(len(p.encode("utf-8")) for p in parts)
    encoding = get_counter("o200k_base").encoding  # type: ignore[attr-defined]
    detector = HeuristicDetector()
    pure = HeuristicDetector(native=False)
    flagged = sum(detector.detect(p, "tool").score >= 0.5 for p in parts)

    def defence() -> None:
        for p in parts:
            sanitize(p)
            detector.detect(p, "tool")

    def defence_pure() -> None:
        for p in parts:
            sanitize(p)
            pure.detect(p, "tool")

    sys.path.insert(0, str(ROOT / "tests" / "core" / "defense"))
    reference = importlib.import_module("reference")  # the detector before the round-2 speed work
    before = reference.HeuristicDetector()

    def defence_before() -> None:
        for p in parts:
            reference.sanitize_report(p)
            before.detect(p, "tool")

    def sanitise_only() -> None:
        for p in parts:
            sanitize(p)

    def tiktoken_pass() -> None:
        for p in parts:
            encoding.encode_ordinary(p)

    defence()
    tiktoken_pass()  # warm both
    ours: list[float] = []
    floor: list[float] = []
    clean: list[float] = []
    slow: list[float] = []
    old: list[float] = []
    cpu: dict[str, list[float]] = {"defence": [], "tiktoken": [], "pure": [], "before": []}
    names = {defence: "defence", tiktoken_pass: "tiktoken", defence_pure: "pure", defence_before: "before"}
    for _ in range(runs):
        for fn, out in (
            (defence, ours),
            (tiktoken_pass, floor),
            (sanitise_only, clean),
            (defence_pure, slow),
            (defence_before, old),
        ):
            gc.collect()
            c0 = time.process_time()
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
            if fn in names:
                cpu[names[fn]].append(time.process_time() - c0)
    ratios = [a / b for a, b in zip(ours, floor, strict=True)]
    print(
        f"python {sys.version.split()[0]}; {len(parts)} inputs, {total_bytes:,} bytes; {flagged} inputs flagged; "
        f"native prefilter: {'yes' if native_available() else 'no (ahocorasick-rs missing)'}"
    )
    print(f"{'':<28}{'median s':>10}{'min s':>10}{'max s':>10}")
    rows = (
        ("sanitize + detect", ours),
        ("  same, pure-Python gates", slow),
        ("sanitize alone", clean),
        ("  before (reference)", old),
        ("tiktoken o200k encode", floor),
    )
    for name, xs in rows:
        print(f"{name:<28}{statistics.median(xs):>10.3f}{min(xs):>10.3f}{max(xs):>10.3f}")
    print(
        f"ratio defence / tiktoken: median {statistics.median(ratios):.2f}x, "
        f"spread {min(ratios):.2f}x-{max(ratios):.2f}x over {runs} alternating runs (goal <= 1.00x)"
    )
    cpu_ratios = [a / b for a, b in zip(cpu["defence"], cpu["tiktoken"], strict=True)]
    print(
        f"ratio in CPU time (less sensitive to other processes on a shared machine): median "
        f"{statistics.median(cpu_ratios):.2f}x, spread {min(cpu_ratios):.2f}x-{max(cpu_ratios):.2f}x"
    )
    pure_ratios = [a / b for a, b in zip(cpu["pure"], cpu["tiktoken"], strict=True)]
    print(
        f"ratio in CPU time with the pure-Python gate fallback: median {statistics.median(pure_ratios):.2f}x, "
        f"spread {min(pure_ratios):.2f}x-{max(pure_ratios):.2f}x"
    )
    before_ratios = [a / b for a, b in zip(cpu["before"], cpu["tiktoken"], strict=True)]
    print(
        f"ratio in CPU time of the detector before the speed work (tests/core/defense/reference, prefilter "
        f"{'pyahocorasick' if before._rules.native else 'pure Python: pyahocorasick missing'}): median "
        f"{statistics.median(before_ratios):.2f}x, spread {min(before_ratios):.2f}x-{max(before_ratios):.2f}x"
    )
    speedup = [a / b for a, b in zip(cpu["before"], cpu["defence"], strict=True)]
    print(
        f"speed-up over the reference, CPU time: median {statistics.median(speedup):.2f}x, "
        f"spread {min(speedup):.2f}x-{max(speedup):.2f}x"
    )
    alone = [a / b for a, b in zip(clean, floor, strict=True)]
    print(
        f"ratio sanitize alone / tiktoken: median {statistics.median(alone):.2f}x, "
        f"spread {min(alone):.2f}x-{max(alone):.2f}x"
    )


_STAGES = ("detection_view", "fold_mixed_words", "find_overrides", "exfiltration_urls", "hidden_spans",
           "decoded_blobs", "_may_hold_leet", "_leet_candidate", "may_hold_leet", "leet_candidate",
           "rot13_candidate")  # fmt: skip
"""Stage functions as the detector module names them (the leet pair lost its underscore in a module of its own)."""


def stages(package: str, runs: int = 3) -> dict[str, float]:
    """CPU milliseconds per MB of each detector stage of ``package`` (``tokenbox_core.defense`` or the reference)."""
    detector_module = importlib.import_module(f"{package}.detector")
    prefilter_module = importlib.import_module(f"{package}.prefilter")
    sanitize_module = importlib.import_module(f"{package}.sanitize")
    parts = mixed_text()
    megabytes = sum(len(p.encode("utf-8")) for p in parts) / 1e6
    spent: dict[str, float] = collections.defaultdict(float)

    def timed(label: str, fn: object) -> object:
        def wrapper(*args: object, **kwargs: object) -> object:
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)  # type: ignore[operator]
            finally:
                spent[label] += time.process_time() - t0

        return wrapper

    saved = {name: getattr(detector_module, name) for name in _STAGES if hasattr(detector_module, name)}
    for name, fn in saved.items():
        setattr(detector_module, name, timed(name.lstrip("_"), fn))
    cls = prefilter_module.Prefilter
    gate_method = "scan" if hasattr(cls, "scan") else "open_rules"
    gate = getattr(cls, gate_method)
    apply = detector_module.HeuristicDetector._apply
    smuggling = detector_module.HeuristicDetector._smuggling
    try:
        setattr(cls, gate_method, timed("prefilter (gates)", gate))
        detector_module.HeuristicDetector._apply = staticmethod(timed("rules (regex)", apply))
        detector_module.HeuristicDetector._smuggling = timed("smuggling", smuggling)
        detector = detector_module.HeuristicDetector()
        sanitize_report = timed("sanitize", sanitize_module.sanitize_report)
        total = 0.0
        for _ in range(runs):
            t0 = time.process_time()
            for p in parts:
                sanitize_report(p)
                detector.detect(p, "tool")
            total += time.process_time() - t0
    finally:
        for name, fn in saved.items():
            setattr(detector_module, name, fn)
        setattr(cls, gate_method, gate)
        detector_module.HeuristicDetector._apply = staticmethod(apply)
        detector_module.HeuristicDetector._smuggling = smuggling
    out = {label: spent[label] * 1000 / runs / megabytes for label in sorted(spent)}
    out["rest (scan glue, discounts, findings)"] = total * 1000 / runs / megabytes - sum(out.values())
    out["total"] = total * 1000 / runs / megabytes
    return out


def print_stages() -> None:
    """The stage table, reference (before) and shipped (after) side by side, with one tiktoken pass for scale."""
    sys.path.insert(0, str(ROOT / "tests" / "core" / "defense"))
    parts = mixed_text()
    megabytes = sum(len(p.encode("utf-8")) for p in parts) / 1e6
    encoding = get_counter("o200k_base").encoding  # type: ignore[attr-defined]
    floor = []
    for _ in range(3):
        t0 = time.process_time()
        for p in parts:
            encoding.encode_ordinary(p)
        floor.append((time.process_time() - t0) * 1000 / megabytes)
    before, after = stages("reference"), stages("tokenbox_core.defense")
    print(f"CPU ms per MB (mixed text, {megabytes:.2f} MB; stage timers inflate the total)")
    print(f"{'stage':<40}{'before':>10}{'after':>10}")
    for label in sorted(set(before) | set(after), key=lambda k: (k == "total", k.startswith("rest"), k)):
        print(f"{label:<40}{before.get(label, 0.0):>10.1f}{after.get(label, 0.0):>10.1f}")
    print(f"{'tiktoken o200k encode (median of 3)':<40}{statistics.median(floor):>20.1f}")


def against(commit: str, runs: int = 15) -> None:
    """This tree's sanitise + detect vs ``commit``'s, side by side with tiktoken, alternating, CPU time.

    ``commit``'s ``tokenbox_core`` is extracted with ``git archive`` into a temporary directory and
    imported as ``tokenbox_core_at`` (every import renamed), so both versions run in one process.
    The decisions are checked equal on every input first.
    """
    tmp = Path(tempfile.mkdtemp(prefix="tokenbox-bench-"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "tokenbox_core"], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        package = tmp / "tokenbox_core_at"
        (tmp / "tokenbox_core").rename(package)
        for path in package.rglob("*.py"):
            path.write_text(re.sub(r"\btokenbox_core\b", "tokenbox_core_at", path.read_text()))
        sys.path.insert(0, str(tmp))
        then = importlib.import_module("tokenbox_core_at.defense")
        _compare(then, commit, runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _compare(then: object, commit: str, runs: int) -> None:
    parts = mixed_text()
    encoding = get_counter("o200k_base").encoding  # type: ignore[attr-defined]
    now_detector, then_detector = HeuristicDetector(), then.HeuristicDetector()  # type: ignore[attr-defined]
    then_sanitize = then.sanitize  # type: ignore[attr-defined]
    for p in parts:
        a, b = now_detector.detect(p, "tool"), then_detector.detect(p, "tool")
        assert a.to_dict() == b.to_dict() and [f.offset for f in a.findings] == [f.offset for f in b.findings]
        assert sanitize(p) == then_sanitize(p)

    def now() -> None:
        for p in parts:
            sanitize(p)
            now_detector.detect(p, "tool")

    def before() -> None:
        for p in parts:
            then_sanitize(p)
            then_detector.detect(p, "tool")

    def floor() -> None:
        for p in parts:
            encoding.encode_ordinary(p)

    spent: dict[str, list[float]] = {"this tree": [], commit: [], "tiktoken o200k encode": []}
    for fn in (now, before, floor):
        fn()  # warm
    for _ in range(runs):
        for label, fn in zip(spent, (now, before, floor), strict=True):
            gc.collect()
            t0 = time.process_time()
            fn()
            spent[label].append(time.process_time() - t0)
    print(f"{len(parts)} inputs, decisions identical; CPU ms over {runs} alternating runs")
    print(f"{'':<24}{'median':>10}{'min':>10}{'max':>10}")
    for label, xs in spent.items():
        print(f"{label:<24}{statistics.median(xs) * 1000:>10.1f}{min(xs) * 1000:>10.1f}{max(xs) * 1000:>10.1f}")
    if "--classes" in sys.argv:
        _by_class(now_detector, then_detector, then_sanitize, encoding, commit)
    tik = spent["tiktoken o200k encode"]
    for label, xs, ys in (
        ("this tree / tiktoken", spent["this tree"], tik),
        (f"{commit} / tiktoken", spent[commit], tik),
        (f"speed-up ({commit} / this tree)", spent[commit], spent["this tree"]),
    ):
        ratios = [x / y for x, y in zip(xs, ys, strict=True)]
        print(f"{label}: median {statistics.median(ratios):.2f}x, spread {min(ratios):.2f}x-{max(ratios):.2f}x")


def _best(fn: Any, text: str, reps: int) -> float:
    """The least CPU time of ``reps`` calls ``fn(text)`` (other processes on the machine can only raise it)."""
    out = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        fn(text)
        out = min(out, time.process_time() - t0)
    return out


def _sanitised_and_detected(detector: Any) -> Any:
    """``text -> None``: :func:`sanitize` then ``detector.detect(text, "tool")`` (what the bench times)."""

    def run(text: str) -> None:
        sanitize(text)
        detector.detect(text, "tool")

    return run


def _by_class(now_detector: object, then_detector: object, then_sanitize: object, encoding: object, commit: str,
              reps: int = 7) -> None:  # fmt: skip
    """Per input class: CPU ms summed over its inputs, each input timed ``reps`` times (this tree, ``commit``,
    tiktoken in turn) and its minimum kept, which other processes on the machine can only raise."""

    now = _sanitised_and_detected(now_detector)

    def then(text: str) -> None:
        then_sanitize(text)  # type: ignore[operator]
        then_detector.detect(text, "tool")  # type: ignore[attr-defined]

    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])
    for label, text in mixed_inputs():
        row = totals[label]
        row[0] += 1
        row[1] += len(text.encode("utf-8"))
        row[2] += _best(now, text, reps)
        row[3] += _best(then, text, reps)
        row[4] += _best(encoding.encode_ordinary, text, reps)  # type: ignore[attr-defined]
    print(f"per input class, CPU ms (sum over inputs of the minimum of {reps} runs each)")
    header = ("class", "inputs", "KB", "this tree", commit, "tiktoken", "tree/tik", "speed-up")
    print("".join(f"{h:<14}" if i == 0 else f"{h:>{max(7, len(h) + 2)}}" for i, h in enumerate(header)))
    grand = [0.0] * 5
    for label in [*sorted(totals, key=lambda k: -totals[k][2]), "all"]:
        row = grand if label == "all" else totals[label]
        if label != "all":
            grand = [a + b for a, b in zip(grand, row, strict=True)]
        n, size, ours, theirs, tik = row
        cells = (f"{int(n)}", f"{size / 1000:.0f}", f"{ours * 1000:.1f}", f"{theirs * 1000:.1f}", f"{tik * 1000:.1f}",
                 f"{ours / tik:.2f}x", f"{theirs / ours:.2f}x")  # fmt: skip
        print(f"{label:<14}" + "".join(f"{c:>{max(7, len(h) + 2)}}" for c, h in zip(cells, header[1:], strict=True)))


def floor_table(reps: int = 7) -> None:
    """Per input class: sanitise + detect, its unavoidable part, and tiktoken (CPU ms, minimum of ``reps`` each).

    The unavoidable part is what every input pays before any rule runs: :func:`sanitize`, the detection
    view, case folding and the automaton pass (the prefilter's literal search).
    """
    from tokenbox_core.defense.sanitize import detection_view

    encoding = get_counter("o200k_base").encoding  # type: ignore[attr-defined]
    detector = HeuristicDetector()
    automaton = detector._rules._automaton
    if automaton is None:
        raise SystemExit('--floor needs the native prefilter: pip install "tokenbox-context[defense]"')

    full = _sanitised_and_detected(detector)

    def floor(text: str) -> None:
        sanitize(text)
        automaton.find_matches_as_indexes(detection_view(text).casefold(), overlapping=True)

    columns = {"sanitize + detect": full, "unavoidable part": floor, "tiktoken": encoding.encode_ordinary}
    totals: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for label, text in mixed_inputs():
        for name, fn in columns.items():
            best = _best(fn, text, reps)
            totals[label][name] += best
            totals["all"][name] += best
    print(f"per input class, CPU ms (sum over inputs of the minimum of {reps} runs each)")
    print(f"{'class':<14}" + "".join(f"{name:>26}" for name in columns))
    for label in [*sorted((k for k in totals if k != "all"), key=lambda k: -totals[k]["sanitize + detect"]), "all"]:
        row = totals[label]
        cells = (f"{row[n] * 1000:.1f} ({row[n] / row['tiktoken']:.2f}x)" for n in columns)
        print(f"{label:<14}" + "".join(f"{c:>26}" for c in cells))


if __name__ == "__main__":
    if "--floor" in sys.argv:
        floor_table()
    elif "--stages" in sys.argv:
        print_stages()
    elif "--against" in sys.argv:
        against(sys.argv[sys.argv.index("--against") + 1])
    else:
        main()
