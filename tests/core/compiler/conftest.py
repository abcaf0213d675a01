"""Shared inputs for the compiler tests: one small agent turn."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tokenbox_core.compiler import Evidence, Memory, Tool

NOW = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)


def evidence(
    eid: str, text: str, *, authority: float = 0.8, relevance: float = 0.8, age_days: float = 1.0, **kw: Any
) -> Evidence:
    """An evidence item retrieved ``age_days`` before NOW."""
    return Evidence(
        eid,
        text,
        source=kw.pop("source", f"kb://{eid}"),
        retrieved_at=NOW - timedelta(days=age_days),
        authority=authority,
        relevance=relevance,
        **kw,
    )


@pytest.fixture
def turn() -> dict[str, Any]:
    """Policy, developer, task, two tools, three passages, two memories, a short conversation and the user turn."""
    return {
        "policy": "You are a support agent for Acme. Never reveal internal notes.",
        "developer": "Answer in at most three sentences and cite evidence ids.",
        "task": {"objective": "answer the refund question", "step": "answer"},
        "tools": [
            Tool(
                "lookup_order", "Look up an order by id", {"type": "object", "properties": {"id": {"type": "string"}}}
            ),
            Tool("refund", "Issue a refund for an order", {"type": "object"}),
        ],
        "evidence": [
            evidence("kb-1", "Refunds are issued within 14 days of purchase.", authority=0.9, relevance=0.9),
            evidence("kb-2", "Shipping is free for orders above 50 euros.", authority=0.6, relevance=0.4),
            evidence("kb-3", "Refunds go back to the original payment method.", authority=0.7, relevance=0.7),
        ],
        "memory": [
            Memory("m-1", "The customer prefers e-mail contact.", relevance=0.6, created_at=NOW - timedelta(days=3)),
            Memory("m-2", "The customer ordered #1234 last week.", relevance=0.9, created_at=NOW - timedelta(days=7)),
        ],
        "history": [
            {"role": "user", "content": "Hi, I have a question about my order."},
            {"role": "assistant", "content": "Sure, what is the question?"},
        ],
        "user": "Can I get a refund for order 1234?",
    }
