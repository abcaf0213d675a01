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

Corpora (public, not written by this project; the data is not committed: ``prep_injection_data.py`` builds the
git-ignored ``benchmarks/data/injection/public.jsonl`` from clones of the sources at pinned commits, one JSON object
a line with ``corpus``, ``lang``, ``label`` (1 attack, 0 benign), ``kind``, ``text`` and ``key``):

- ``bipia-text-attack`` / ``bipia-code-attack``: the 150 text and 100 code attack instructions of Microsoft's BIPIA
  benchmark (MIT), each inserted as BIPIA inserts them (start, a sentence start in the middle, end, joined by
  newlines) into a BIPIA email or table context, or a code context;
- ``bipia-email`` / ``bipia-table`` / ``bipia-code``: those contexts, clean (retrieved emails, tables, Stack Overflow
  answers with code);
- ``cse-indirect`` / ``cse-direct``: Meta's CyberSecEval prompt-injection inputs (PurpleLlama, MIT), English and
  machine-translated into 17 languages; *indirect* are documents with an injection inside (code, web pages, tables,
  papers, résumés), *direct* are messages written to the model, many of them attacks only against a particular
  system prompt ("What is the weather like in Los Angeles?" against "never discuss the weather"): they are reported
  apart and are not the issue's goal, which is about indirect injection;
- ``llmail-satml``: attacker emails for the LLMail-Inject challenge written by a third party
  (yunwei37/satml-llmail-injection), in English and other languages;
- ``owasp-llm-top10``: the OWASP Top 10 for LLM Applications 2025 (CC BY-SA 4.0) and its translations, cut into
  1.5 KB chunks at paragraph ends: prose that discusses injection, per language;
- ``docs-python-i18n``: CPython's documentation as translated by the python-docs-{es,fr,id,ja,ko,pt-br,tr,zh-cn}
  teams, 60 chunks of 1.5 KB per language: benign documentation (second person, imperatives, "ignore");
- ``docs-react-i18n``: React's "Learn" pages as translated into Arabic, Bengali, Italian and Vietnamese (CC BY 4.0),
  60 chunks of prose per language: a tutorial that speaks to its reader;
- ``docs-python`` (built here): CPython's reference documentation (``pydoc_data``), 2 KB chunks;
- ``issue-27`` (in the repository, ``benchmarks/injection_heldout_set.jsonl``): paraphrased attacks and risky benign
  texts written for issue 27 from its list of misses, never tuned on; all of it counts as held out.

Figures, held-out split, ``DefensePolicy()`` defaults.  "Before" is the detector at the start of the second round of
issue 27 (it had the detached-request rules of :mod:`tokenbox_core.defense._detached`, tuned on BIPIA's tune split);
"after" adds the rules read from CyberSecEval's tune split (``dismiss_and_say``, ``override_label``, the claims of
:mod:`~tokenbox_core.defense._claims`, the dismissals of :mod:`~tokenbox_core.defense._dismissal`, overrides in five
more languages), the decoders of :mod:`~tokenbox_core.defense._decoders` and an example sign ("for example") that
discounts only the finding it introduces:

=========================  ==================  ==================
indirect attacks (en)      before              after
=========================  ==================  ==================
bipia-text-attack          189/222 (85.1 %)    195/222 (87.8 %)
bipia-code-attack          130/138 (94.2 %)    132/138 (95.7 %)
cse-indirect               7/32 (21.9 %)       14/32 (43.8 %)
llmail-satml               6/14 (42.9 %)       6/14 (42.9 %)
issue-27                   20/23 (87.0 %)      20/23 (87.0 %)
all English                352/429 (82.1 %)    367/429 (85.5 %)
cse-indirect, 17 others    20/123 (16.3 %)     46/123 (37.4 %)
benign, English            4/342 (1.2 %)       4/342 (1.2 %)
benign, 16 other langs     1/716 (0.1 %)       1/716 (0.1 %)
=========================  ==================  ==================

Per language, CyberSecEval's indirect attacks after (before): ar 2/9 (1), bn 5/7 (0), de 2/5 (1), es 2/6 (2), fr 6/9
(3), hi 10/32 (4), id 0/3 (0), it 4/5 (1), ja 2/4 (2), ko 1/4 (1), pt 2/7 (1), ru 3/6 (1), th 2/5 (1), tl 1/4 (1),
tr 0/7 (0), vi 4/7 (1), zh 0/3 (0).  Benign per language stays at 0 % everywhere but Spanish (1/74, an OWASP chunk).
The tune split is at 403/420 (96.0 %) English indirect attacks and 0/351 English benign: the gap to the held-out
85.5 % is what did not generalise.  ``--sweep`` shows the misses are not near the threshold (at 0.2 the held-out
English detection is 87.9 %, at 5.6 % benign flagged): what is missed has no structure the rules read, chiefly
tasks that share words with their email (BIPIA), misinformation framed as a story or a hypothesis ("in a parallel
world we might say the capital is ..."), persuasion, and payloads the dataset itself misspelt before encoding them.

The classifier extra, ``--detector tokenbox_core.defense:NanoGuardDetector`` (a 16.8M-parameter model on the CPU,
about half a second per 512-token window), on the same held-out split (before the rules above were added; the
heuristic's figures are the "before" column): English indirect attacks 360/429 (83.9 %) kept out, but 246/342
(71.9 %) of English benign retrieval text flagged, and 60-100 % of the benign text in most other languages (ja 92 %,
ko 98 %, ru, hi, tr, el 100 %); CyberSecEval's indirect attacks in other languages 117/123.  It flags most text that
reads as instructions or technical prose, injected or not: unusable on retrieved documents at its 0.5 threshold.

``stackone-defender`` 0.9.4 (Apache-2.0; a 23 MB int8 MiniLM ONNX model inside its wheel, run by ``onnxruntime`` with
``tokenizers`` and ``numpy``; it loads offline), measured for issue 36 in a separate virtual environment through a
detector that returns its Tier 2 score, same held-out split: English indirect attacks 309/429 (72.0 %) kept out,
CyberSecEval's indirect attacks in other languages 18/123 (14.6 %), and 75/342 (21.9 %) of English benign text
flagged, 125/716 (17.5 %) in other languages (docs-python 30.6 %, OWASP English 57.6 %, BIPIA emails 17.9 %).  At
0.2 it keeps out 89.5 % of English attacks but flags 56.4 % of English benign text.  Fewer false positives than
NanoGuard, fewer detections than the heuristic, far above 3 % benign flagged: not adopted.
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
