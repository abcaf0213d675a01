"""check_output's leak checks: the shapes of a leaked canary caught, and benign texts flagged.

Run on purpose: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_output_check.py``.  Prints figures; asserts nothing.

Shapes: the eleven of issue 36 (item 5), from ``tests/core/defense/test_output_variants.py``.  Benign texts: every
benign item of ``benchmarks/data/injection/public.jsonl`` when ``prep_injection_data.py`` has built it (retrieved
emails, tables, code answers, documentation in 16 languages), CPython's reference documentation (``pydoc_data``),
the benign items of ``benchmarks/injection_heldout_set.jsonl``, and this repository's README, docs and notebook
cells; each is checked as a model's answer against a defended compile, and a text is flagged when the check reports
the canary, a boundary or the system prompt (secrets are another check).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenbox_core import Section
from tokenbox_core.defense import DefensePolicy, check_output, defensive_layout

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "core" / "defense"))
sys.path.insert(0, str(HERE))

from bench_injection_heldout import PUBLIC, _python_docs  # noqa: E402
from test_output_variants import POLICY_TEXT, VARIANTS  # noqa: E402


def benign() -> list[tuple[str, str]]:
    """(corpus, text) of every benign text read here."""
    rows: list[tuple[str, str]] = []
    if PUBLIC.exists():
        for line in PUBLIC.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["label"] == 0:
                rows.append((row["corpus"], row["text"]))
    rows += [("docs-python", r["text"]) for r in _python_docs()]
    for line in (HERE / "injection_heldout_set.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["label"] == 0:
            rows.append(("issue-27", row["text"]))
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        rows.append(("repo-docs", path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            rows.append(("repo-notebooks", "".join(cell["source"])))
    return rows


def main() -> None:
    sections = [
        Section("policy", POLICY_TEXT, metadata={"source_type": "system"}),
        Section("doc", "Refunds within 30 days.", shrink=1, metadata={"source_type": "retrieval"}),
    ]
    compiled = defensive_layout(sections, 1000, policy=DefensePolicy(secret="s" * 16), counter="whitespace")
    caught = [s for s, make in VARIANTS.items() if check_output(make(compiled.defense.canary), compiled).canary_leaked]
    print(f"canary shapes caught: {len(caught)}/{len(VARIANTS)} ({', '.join(caught)})")
    if not PUBLIC.exists():
        print(f"note: {PUBLIC} is missing: only the in-repository texts and docs-python are read")
    counts: dict[str, list[int]] = {}
    for corpus, text in benign():
        r = check_output(text, compiled)
        cell = counts.setdefault(corpus, [0, 0, 0, 0])
        cell[0] += r.canary_leaked
        cell[1] += bool(r.leaked_boundaries)
        cell[2] += r.system_leaked
        cell[3] += 1
    print(f"{'benign corpus':<20}{'texts':>7}{'canary':>8}{'boundary':>10}{'system':>8}")
    for corpus, (c, b, s, n) in sorted(counts.items()):
        print(f"{corpus:<20}{n:>7}{c:>8}{b:>10}{s:>8}")
    total = [sum(v[i] for v in counts.values()) for i in range(4)]
    print(f"{'all':<20}{total[3]:>7}{total[0]:>8}{total[1]:>10}{total[2]:>8}")


if __name__ == "__main__":
    main()
