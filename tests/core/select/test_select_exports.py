"""The public API of tokenbox_core.select is exactly what ``__all__`` says."""

from __future__ import annotations

import types

import tokenbox_core.select as select


def test_select_all_is_sorted_and_exists() -> None:
    """Every name in select.__all__ exists, without duplicates, in sorted order."""
    names = list(select.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(select, name), name


def test_select_public_attributes_are_in_all() -> None:
    """Every public, non-module attribute of tokenbox_core.select is listed in __all__."""
    public = {n for n, v in vars(select).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == set(select.__all__)


def test_select_exports_the_issue_names() -> None:
    """The scorers, slicers, placers, report, presets and analysis helpers of issue 3 are exported."""
    expected = {
        "RecencyScorer", "PriorityScorer", "KindScorer", "TagScorer", "FrequencyScorer", "ReflexiveScorer",
        "CompositeScorer", "ScaledScorer", "MetadataTrustScorer", "MetadataKeyScorer", "DecayScorer",
        "GreedySlicer", "KnapsackSlicer", "QuotaSlicer", "CountQuotaSlicer", "CountConstrainedKnapsackSlicer",
        "ChronologicalPlacer", "UShapedPlacer", "SelectionPolicy", "SelectionReport", "marginal_items",
        "min_budget_for", "chat_policy", "rag_policy", "tool_use_policy", "agent_policy", "code_review_policy",
    }  # fmt: skip
    assert expected <= set(select.__all__)
