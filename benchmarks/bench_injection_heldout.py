"""Injection detection on text the detector was not tuned on: detection and false positives per corpus and language.

Run on purpose: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_injection_heldout.py [--split heldout|tune]``.
Prints a table; asserts nothing.

"Kept out of the model's view" means the :class:`~tokenbox_core.defense.DefensePolicy` default for retrieved text
acts on it (quarantine at a score of at least its threshold, 0.5).  Reported per corpus and language: attacks kept
out (detection) and benign texts kept out (false positives).

The split is fixed by a hash of each item's *key* (SHA-256, first 32 bits, odd: held out; even: tune): the key of
an attack built by inserting an instruction into a document is the instruction, so one instruction is never in
both splits.  Only the tune split may be read while changing the detector (``--split tune --misses N`` prints what
it misses there); the held-out split prints rates only.

Corpora (public, not written by this project; data files are not committed: they live in the git-ignored
``benchmarks/data/injection/public.jsonl``, one JSON object a line with ``corpus``, ``lang``, ``label`` (1 attack,
0 benign), ``kind``, ``text`` and ``key``):

- ``bipia-text-attack`` / ``bipia-code-attack``: the 150 text and 100 code attack instructions of Microsoft's BIPIA
  benchmark (github.com/microsoft/BIPIA at 1a2a91d, MIT), each inserted as BIPIA inserts them (start, a sentence
  start in the middle, end, joined by newlines) into a BIPIA email or table context, or a code context;
- ``bipia-email`` / ``bipia-table`` / ``bipia-code``: those contexts, clean (retrieved emails, tables, Stack Overflow
  answers with code);
- ``llmail-satml``: attacker emails for the LLMail-Inject challenge written by a third party
  (github.com/yunwei37/satml-llmail-injection at 133e9be), in English and other languages;
- ``owasp-llm-top10``: the OWASP Top 10 for LLM Applications 2025 (CC BY-SA 4.0) and its translations, cut into
  1.5 KB chunks at paragraph ends: prose that discusses injection, per language;
- ``docs-python`` (built here): CPython's reference documentation (``pydoc_data``), 2 KB chunks;
- ``issue-27`` (in the repository, ``benchmarks/injection_heldout_set.jsonl``): paraphrased attacks and risky benign
  texts written for issue 27 from its list of misses, never tuned on; all of it counts as held out.

Figures (held-out split, ``DefensePolicy()`` defaults; "before" is the detector before the detached-request rules of
:mod:`tokenbox_core.defense._detached`, "after" with them):

=====================  ==================  ==================
corpus (en)            before              after
=====================  ==================  ==================
bipia-text-attack      144/222 (64.9 %)    189/222 (85.1 %)
bipia-code-attack      73/138 (52.9 %)     130/138 (94.2 %)
llmail-satml           6/14 (42.9 %)       6/14 (42.9 %)
issue-27 attacks       20/23 (87.0 %)      20/23 (87.0 %)
all English attacks    243/397 (61.2 %)    345/397 (86.9 %)
bipia-email (benign)   0/39                0/39
bipia-table (benign)   0/90                0/90
bipia-code (benign)    0/46                1/46 (2.2 %)
docs-python (benign)   0/121               0/121
owasp-llm-top10 en     1/33 (3.0 %)        1/33 (3.0 %)
issue-27 benign        2/13                2/13
all English benign     3/342 (0.9 %)       4/342 (1.2 %)
=====================  ==================  ==================

The tune split went from 325/397 (81.9 %) to 385/397 (97.0 %) of English attacks at 0/351 English benign: the
held-out 86.9 % is what generalised, short of the issue's 95 %.  Other languages: the OWASP translations stay at
0-2.7 % flagged; the one or two LLMail attacks per other language are mostly missed (they are multilingual
paraphrases of the English ones, without the structures the rules read).

The classifier extra on issue 27's in-repo set (default retrieval policy): ``NanoGuardDetector`` keeps out 18/30
attacks and flags 9/20 benign texts; the heuristic 27/30 and 2/20; both (a max) 29/30 and 10/20.

``--detector module:factory`` measures another :class:`~tokenbox_core.defense.InjectionDetector` on the same items,
for instance the classifier extra: ``--detector tokenbox_core.defense:NanoGuardDetector`` (slow: a 16.8M-parameter
model on the CPU, about half a second per 512-token window).

Rebuilding the public data: clone (or fetch) github.com/microsoft/BIPIA, github.com/yunwei37/satml-llmail-injection
and github.com/OWASP/www-project-top-10-for-large-language-model-applications, then run a script that writes
``public.jsonl`` as described above (BIPIA's insertion: the attack on a line of its own at the start, at a sentence
start in the middle, or at the end of a context, joined by newlines; its context chosen by the attack's hash).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tokenbox_core.defense import DefensePolicy, HeuristicDetector, InjectionDetector

HERE = Path(__file__).resolve().parent
PUBLIC = HERE / "data" / "injection" / "public.jsonl"
IN_REPO = HERE / "injection_heldout_set.jsonl"
CHUNK = 2_000
DIRECT = frozenset({"cse-direct"})
"""Corpora of messages written to the model rather than documents with an injection inside: reported apart."""


def split_of(key: str) -> str:
    """``"heldout"`` or ``"tune"``, fixed by the SHA-256 of ``key`` (never changes with the detector)."""
    return "heldout" if int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 2 else "tune"


def _python_docs() -> Iterator[dict[str, Any]]:
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[k] for k in sorted(topics))
    start = 0
    while start < len(text):
        end = text.find("\n", start + CHUNK)
        end = len(text) if end < 0 else end + 1
        chunk = text[start:end]
        yield {"corpus": "docs-python", "lang": "en", "label": 0, "kind": "documentation", "text": chunk, "key": chunk}
        start = end


def items(split: str) -> list[dict[str, Any]]:
    """Every item of ``split`` (``"heldout"``, ``"tune"`` or ``"all"``); the in-repo set only when held out."""
    rows: list[dict[str, Any]] = []
    if PUBLIC.exists():
        rows += [json.loads(line) for line in PUBLIC.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows += list(_python_docs())
    rows = [r for r in rows if split == "all" or split_of(r["key"]) == split]
    if split in ("heldout", "all"):
        for line in IN_REPO.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows.append({"corpus": "issue-27", "kind": row["id"], "key": row["text"], **row})
    return rows


def _detector(spec: str | None) -> InjectionDetector:
    if spec is None:
        return HeuristicDetector()
    module, _, factory = spec.partition(":")
    made = getattr(importlib.import_module(module), factory)()
    if not isinstance(made, InjectionDetector):
        raise SystemExit(f"{spec} did not make an InjectionDetector")
    return made


def _sweep(scored: list[tuple[dict[str, Any], float]]) -> None:
    """Kept-out rates at lower thresholds than the policy's: how far below it the misses score."""
    print("threshold  indirect attacks (en)    benign (en)             benign (other languages)")
    for threshold in (0.2, 0.3, 0.4, 0.5):
        cells = []
        for label, english in ((1, True), (0, True), (0, False)):
            rows = [(r, s) for r, s in scored if r["label"] == label and r["corpus"] not in DIRECT]
            hits = [s >= threshold for r, s in rows if (r["lang"] == "en") == english]
            cells.append(f"{sum(hits)}/{len(hits)} ({100 * sum(hits) / max(1, len(hits)):.1f} %)")
        print(f"{threshold:<11}{cells[0]:<25}{cells[1]:<24}{cells[2]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("heldout", "tune", "all"), default="heldout")
    parser.add_argument("--detector", help="module:factory of another InjectionDetector")
    parser.add_argument("--misses", type=int, default=0, help="print up to N misses and false positives (tune only)")
    parser.add_argument("--corpus", help="only the corpora whose name starts with this")
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="also: indirect attacks and benign texts kept out at "
        "thresholds 0.2-0.5, English and other languages (are the misses near the threshold?)",
    )
    args = parser.parse_args()
    if args.misses and args.split != "tune":
        raise SystemExit("--misses reads the items: only the tune split may be read")
    if not PUBLIC.exists():
        print(f"note: {PUBLIC} is missing; only docs-python and the in-repo set are measured (see the docstring)")
    detector = _detector(args.detector)
    policy = DefensePolicy().source_policy("retrieval")
    table: dict[tuple[str, str, int], list[int]] = defaultdict(lambda: [0, 0])
    scored: list[tuple[dict[str, Any], float]] = []
    wrong: list[tuple[str, float, str]] = []
    for row in items(args.split):
        if args.corpus and not row["corpus"].startswith(args.corpus):
            continue
        score = detector.detect(row["text"], "retrieval").score
        scored.append((row, score))
        out = policy.action != "allow" and score >= policy.threshold
        cell = table[(row["corpus"], row["lang"], row["label"])]
        cell[0] += out
        cell[1] += 1
        if out != bool(row["label"]):
            wrong.append((f"{row['corpus']}/{row['kind']}", score, row["text"]))
    print(f"split: {args.split}; detector: {type(detector).__name__}; kept out at score >= {policy.threshold}")
    print(f"{'corpus':<20}{'lang':<7}{'attacks kept out':>20}{'benign kept out':>20}")
    for corpus, lang in sorted({(c, g) for c, g, _ in table}):
        cells = []
        for label in (1, 0):
            hit, n = table.get((corpus, lang, label), (0, 0))
            cells.append(f"{hit}/{n} ({100 * hit / n:.1f} %)" if n else "-")
        print(f"{corpus:<20}{lang:<7}{cells[0]:>20}{cells[1]:>20}")
    for label, direct, name in ((1, False, "indirect attacks kept out"), (1, True, "direct attacks kept out"),
                                (0, False, "benign kept out")):  # fmt: skip
        per_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for (corpus, lang, lab), (hit, n) in table.items():
            if lab == label and (corpus in DIRECT) == direct:
                per_lang[lang][0] += hit
                per_lang[lang][1] += n
        figures = ", ".join(f"{lang} {h}/{n} ({100 * h / n:.1f} %)" for lang, (h, n) in sorted(per_lang.items()))
        print(f"{name}, per language: {figures}")
    if args.sweep:
        _sweep(scored)
    for where, score, text in wrong[: args.misses]:
        print(f"--- {where} score {score:.3f}\n{text[:600]}")


if __name__ == "__main__":
    main()
