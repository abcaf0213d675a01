"""Every corpus item's detection is pinned (score, findings), so speed work cannot change a decision.

``corpus/decisions.json`` maps each id to ``[score, [[rule, family, weight, offset], ...]]``.
A deliberate detector change regenerates it with
``PYTHONPATH=. python tests/core/defense/test_decisions_pinned.py`` and the diff shows what moved.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import pytest

from conftest import CORPUS, load_corpus
from tokenbox_core.defense import HeuristicDetector
from tokenbox_core.defense._prefilter import native_available

PINNED = CORPUS / "decisions.json"
SETS = ("attacks", "benign", "holdout_attacks", "holdout_benign", "heldout2_attacks", "heldout2_benign")


def decisions(native: bool | None = None) -> dict[str, Any]:
    """Id -> [score, findings] for every item of every corpus file."""
    detector = HeuristicDetector(native=native)
    out: dict[str, Any] = {}
    for name in SETS:
        for row in load_corpus(name):
            d = detector.detect(row["text"], row["source"])
            out[row["id"]] = [d.score, [[f.rule, f.family, round(f.weight, 6), f.offset] for f in d.findings]]
    return out


@pytest.mark.parametrize(
    "native",
    [
        False,
        pytest.param(True, marks=pytest.mark.skipif(not native_available(), reason="ahocorasick-rs not installed")),
    ],
    ids=["pure-python", "aho-corasick"],
)
def test_every_corpus_decision_is_pinned(native: bool) -> None:
    """Both prefilter paths give exactly the pinned score and findings for all corpus items."""
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    now = decisions(native)
    assert sorted(now) == sorted(pinned)
    changed = {k: (pinned[k], now[k]) for k in sorted(now) if now[k] != pinned[k]}
    assert not changed, changed


if __name__ == "__main__":
    PINNED.write_text(json.dumps(decisions(), ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
