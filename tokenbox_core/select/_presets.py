"""Ready-made selection policies for common jobs: plain configurations, meant
to be read and copied as much as called.

======================  ==============================================  ===========  ==============
preset                  scorer (weights)                                slicer       placer
======================  ==============================================  ===========  ==============
chat_policy             recency 3, priority 1                           greedy       chronological
rag_policy              relevance hint 3, metadata trust 1              greedy       U-shaped
tool_use_policy         recency 2, kind 1 (no deduplication)            greedy       chronological
agent_policy            decay 2, priority 1, relevance hint 1           knapsack     chronological
code_review_policy      relevance hint 2, priority 1, tag frequency 1   knapsack     input order
======================  ==============================================  ===========  ==============

All truncate on overflow (the lowest-scored unpinned items go first) rather
than raise.  The "relevance hint" is ``Item.score`` (a retrieval score, or a
model's own judgement); priority is ``Item.priority``.

>>> chat_policy().name
'chat'
"""

from __future__ import annotations

from datetime import timedelta

from tokenbox_core.select._decay import Clock, DecayScorer, ExponentialDecay
from tokenbox_core.select._metadata import MetadataTrustScorer
from tokenbox_core.select._pipeline import SelectionPolicy
from tokenbox_core.select._placers import ChronologicalPlacer, UShapedPlacer
from tokenbox_core.select._scorers import (
    CompositeScorer,
    FrequencyScorer,
    KindScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
)
from tokenbox_core.select._slicers import GreedySlicer, KnapsackSlicer

__all__ = ["agent_policy", "chat_policy", "code_review_policy", "rag_policy", "tool_use_policy"]


def chat_policy() -> SelectionPolicy:
    """Conversation history: the newest turns first, raised by ``Item.priority``; read in time order."""
    return SelectionPolicy(
        CompositeScorer([(RecencyScorer(), 3.0), (PriorityScorer(), 1.0)]),
        GreedySlicer(),
        ChronologicalPlacer(),
        overflow="truncate",
        name="chat",
    )


def rag_policy() -> SelectionPolicy:
    """Retrieved documents: by retrieval score (``Item.score``) and source trust
    (``metadata["cupel:trust"]``), duplicates removed, best at both edges of the block."""
    return SelectionPolicy(
        CompositeScorer([(ReflexiveScorer(), 3.0), (MetadataTrustScorer(), 1.0)]),
        GreedySlicer(),
        UShapedPlacer(),
        overflow="truncate",
        name="rag",
    )


def tool_use_policy() -> SelectionPolicy:
    """Tool calls and results: recent first, system and memory kinds favoured; identical
    results of different calls are all kept (no deduplication)."""
    return SelectionPolicy(
        CompositeScorer([(RecencyScorer(), 2.0), (KindScorer(), 1.0)]),
        GreedySlicer(),
        ChronologicalPlacer(),
        deduplication=False,
        overflow="truncate",
        name="tool_use",
    )


def agent_policy(clock: Clock, *, half_life: timedelta = timedelta(hours=1), bucket_size: int = 50) -> SelectionPolicy:
    """Long-running agent memory: freshness against ``clock`` (halving every ``half_life``),
    priority and the agent's own relevance hint, packed tightly by a knapsack."""
    return SelectionPolicy(
        CompositeScorer(
            [(DecayScorer(clock, ExponentialDecay(half_life)), 2.0), (PriorityScorer(), 1.0), (ReflexiveScorer(), 1.0)]
        ),
        KnapsackSlicer(bucket_size=bucket_size),
        ChronologicalPlacer(),
        overflow="truncate",
        name="long_running_agent",
    )


def code_review_policy(*, bucket_size: int = 50) -> SelectionPolicy:
    """Diff hunks and files: relevance hint, priority, and how many other items share a tag
    (tag files by path or module); kept in the order given (no timestamps → input order)."""
    return SelectionPolicy(
        CompositeScorer([(ReflexiveScorer(), 2.0), (PriorityScorer(), 1.0), (FrequencyScorer(), 1.0)]),
        KnapsackSlicer(bucket_size=bucket_size),
        ChronologicalPlacer(),
        overflow="truncate",
        name="code_review",
    )
