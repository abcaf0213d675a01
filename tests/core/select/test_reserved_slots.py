"""``ContextBudget.reserved_slots`` guarantees items per kind in every slicer (issue 10 item 23)."""

from __future__ import annotations

import pytest

from tokenbox_core import ContextBudget, Item
from tokenbox_core.select import GreedySlicer, QuotaEntry, QuotaSlicer, ReflexiveScorer, SelectionPolicy


def _items() -> list[Item]:
    messages = [Item(f"m{i}", f"message {i}", kind="Message", score=0.9 - i / 100, tokens=10) for i in range(3)]
    return [*messages, Item("d1", "a document", kind="Document", score=0.1, tokens=10)]


@pytest.mark.parametrize(
    "slicer", [GreedySlicer(), QuotaSlicer([QuotaEntry("Message", cap=100)])], ids=["greedy", "quota"]
)
def test_reserved_slot_selects_a_document(slicer: object) -> None:
    """With reserved_slots={"Document": 1} a document is selected, even when higher-scored messages fill the rest."""
    policy = SelectionPolicy(ReflexiveScorer(), slicer=slicer)  # type: ignore[arg-type]
    without = policy.select(_items(), ContextBudget(max_tokens=30))
    assert "d1" not in without.ids
    selection = policy.select(_items(), ContextBudget(max_tokens=30, reserved_slots={"document": 1}))
    assert "d1" in selection.ids and selection.ids == ["m0", "m1", "d1"]
    assert selection.report.shortfalls == ()


def test_reserved_slot_that_cannot_fit_is_a_shortfall() -> None:
    """A reserved kind whose items do not fit the budget is reported as a shortfall, nothing overflows."""
    items = [*_items()[:3], Item("d1", "a long document", kind="Document", score=0.1, tokens=25)]
    selection = SelectionPolicy(ReflexiveScorer()).select(
        items, ContextBudget(max_tokens=30, reserved_slots={"Document": 1})
    )
    assert "d1" not in selection.ids
    assert [s.to_dict() for s in selection.report.shortfalls] == [
        {"kind": "document", "required_count": 1, "satisfied_count": 0}
    ]


def test_reserved_tokens_for_kinds_outside_the_list_are_only_subtracted() -> None:
    """A reservation for a kind no item has (tool schemas, chat format) only reduces the slicer's budget."""
    selection = SelectionPolicy(ReflexiveScorer()).select(
        _items(), ContextBudget(max_tokens=40, reserved_slots={"tools": 15})
    )
    assert selection.ids == ["m0", "m1"] and selection.report.shortfalls == ()
