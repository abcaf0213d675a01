"""Item selection: which items of a list fill a budget, and in which order.

A faithful Python implementation of the Cupel selection pipeline
(``wollax/cupel``, ``spec/src/``): classify, score, deduplicate, sort, slice,
place, with a report of every decision.  It passes Cupel's conformance vectors
(see :mod:`tokenbox_core.testing.cupel`).  Where the spec's prose and its
vectors disagree, the vectors win; each such place says so in its docstring.

>>> from tokenbox_core import Item
>>> from tokenbox_core.select import CompositeScorer, PriorityScorer, ReflexiveScorer, SelectionPolicy
>>> docs = [Item(f"doc-{i}", f"text {i}", tokens=100, score=s, priority=i) for i, s in enumerate([0.9, 0.2, 0.7])]
>>> policy = SelectionPolicy(CompositeScorer([(ReflexiveScorer(), 2.0), (PriorityScorer(), 1.0)]))
>>> policy.select(docs, 200).ids
['doc-2', 'doc-0']

A list :class:`~tokenbox_core.Section` takes a policy (``Section(..., policy=...)``):
the Token Box decides the section's allocation, the policy fills it, and the
section's ``selection`` carries the report.
"""

from tokenbox_core.select._analysis import marginal_items, min_budget_for
from tokenbox_core.select._decay import DecayScorer, ExponentialDecay, StepDecay, WindowDecay
from tokenbox_core.select._metadata import MetadataKeyScorer, MetadataTrustScorer
from tokenbox_core.select._pipeline import Selection, SelectionPolicy
from tokenbox_core.select._placers import ChronologicalPlacer, UShapedPlacer
from tokenbox_core.select._presets import agent_policy, chat_policy, code_review_policy, rag_policy, tool_use_policy
from tokenbox_core.select._quota import (
    CountConstrainedKnapsackSlicer,
    CountQuotaEntry,
    CountQuotaSlicer,
    QuotaEntry,
    QuotaSlicer,
)
from tokenbox_core.select._report import SelectionReport
from tokenbox_core.select._scorers import (
    CompositeScorer,
    FrequencyScorer,
    KindScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    TagScorer,
)
from tokenbox_core.select._slicers import GreedySlicer, KnapsackSlicer

__all__ = [
    "ChronologicalPlacer",
    "CompositeScorer",
    "CountConstrainedKnapsackSlicer",
    "CountQuotaEntry",
    "CountQuotaSlicer",
    "DecayScorer",
    "ExponentialDecay",
    "FrequencyScorer",
    "GreedySlicer",
    "KindScorer",
    "KnapsackSlicer",
    "MetadataKeyScorer",
    "MetadataTrustScorer",
    "PriorityScorer",
    "QuotaEntry",
    "QuotaSlicer",
    "RecencyScorer",
    "ReflexiveScorer",
    "ScaledScorer",
    "Selection",
    "SelectionPolicy",
    "SelectionReport",
    "StepDecay",
    "TagScorer",
    "UShapedPlacer",
    "WindowDecay",
    "agent_policy",
    "chat_policy",
    "code_review_policy",
    "marginal_items",
    "min_budget_for",
    "rag_policy",
    "tool_use_policy",
]
