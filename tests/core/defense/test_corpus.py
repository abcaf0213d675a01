"""Detection and false-positive rates on the corpus, overall and per class (issue 12 goals)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tokenbox_core.defense import DefensePolicy, HeuristicDetector

THRESHOLD = DefensePolicy().default.threshold


def _flag_rates(rows: list[dict[str, Any]]) -> tuple[float, dict[str, tuple[int, int]]]:
    detector = HeuristicDetector()
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        flagged = detector.detect(row["text"], row["source"]).score >= THRESHOLD
        per[row["class"]][0] += flagged
        per[row["class"]][1] += 1
    total = sum(v[0] for v in per.values()) / len(rows)
    return total, {k: (v[0], v[1]) for k, v in sorted(per.items())}


def test_corpus_size_and_classes(attacks: list[dict[str, Any]], benign: list[dict[str, Any]]) -> None:
    """At least 150 attacks across the issue's classes and 150 benign texts; ids are unique."""
    assert len(attacks) >= 150 and len(benign) >= 150
    assert {r["class"] for r in attacks} >= {
        "direct", "indirect", "json_smuggle", "invisible", "encoding", "multilingual", "delimiter_forgery",
        "role_forgery", "hidden_comment", "exfiltration", "homoglyph",
    }  # fmt: skip
    ids = [r["id"] for r in attacks + benign]
    assert len(ids) == len(set(ids))


def test_attacks_are_quarantined_at_the_default_threshold(attacks: list[dict[str, Any]]) -> None:
    """>= 95 % of attacks reach the default threshold, and every class reaches 90 %."""
    rate, per = _flag_rates(attacks)
    assert rate >= 0.95, per
    for cls, (hit, n) in per.items():
        assert hit / n >= 0.9, (cls, hit, n)


def test_benign_texts_are_rarely_flagged(benign: list[dict[str, Any]]) -> None:
    """<= 2 % of the risky-looking benign texts reach the default threshold."""
    rate, per = _flag_rates(benign)
    assert rate <= 0.02, per


def test_holdout_floor(holdout: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    """The held-out set (never tuned on after its first run) stays at or above its measured figures.

    Measured: 31/43 attacks flagged, 2/40 benign flagged; after the general rules written for the
    misses of held-out set 2 (not for these items): 33/43 and 0/40.  This pins a floor, not the goal.
    """
    attacks, benign = holdout
    hit, _ = _flag_rates(attacks)
    fp, _ = _flag_rates(benign)
    assert hit >= 33 / 43 - 1e-9
    assert fp <= 0 / 40 + 1e-9


def test_heldout2_floor(heldout2: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    """Held-out set 2: 69 attacks and 60 benign texts across every class, written without reading the rules.

    Before any change: 57/69 attacks (83 %), 5/60 benign flagged (8 %).  The detector was then
    improved with general rules for its misses, so the figure after (69/69, 2/60) is no longer a
    held-out figure; this test pins it so later changes cannot regress.  The two benign texts still
    flagged are documentation quoting chat-template tokens, which count in full by design
    (``test_structural_findings_are_not_discounted``).
    """
    attacks, benign = heldout2
    hit, per = _flag_rates(attacks)
    fp, fper = _flag_rates(benign)
    assert len(attacks) >= 60 and len(benign) >= 60
    assert hit == 1.0, per
    assert fp <= 2 / 60 + 1e-9, fper


def test_corpus_through_the_policy_quarantines(attacks: list[dict[str, Any]]) -> None:
    """Through defend_sections, a flagged attack is wrapped in an UNTRUSTED_INPUT block."""
    from tokenbox_core import Section
    from tokenbox_core.defense import defend_sections
    from tokenbox_core.tokens import get_counter

    rows = attacks[:20]
    sections = [Section(r["id"], r["text"], shrink=1, metadata={"source_type": r["source"]}) for r in rows]
    defended = defend_sections(sections, DefensePolicy(secret="k" * 16), counter=get_counter("whitespace"))
    actions = {e.id: e.action for e in defended.report.events}
    assert all(actions[r["id"]] == "quarantined" for r in rows), actions
    assert sum("UNTRUSTED_INPUT" in s.content for s in defended.sections if isinstance(s.content, str)) >= 40
