"""The box's measuring step: a negative ``Item.tokens`` is refused, naming the item, the section and the fix."""

from __future__ import annotations

import pytest

from tokenbox_core import Item, Section, SectionError, TokenBox


@pytest.mark.parametrize("mode", ["text", "messages"])
def test_a_negative_item_size_is_named(mode: str) -> None:
    """A negative ``Item.tokens`` is refused with a message naming the item, the section and the fix."""
    section = Section("notes", [Item("a", "one"), Item("b", "two", tokens=-3)], shrink=1)
    with pytest.raises(SectionError) as error:
        TokenBox(100, mode=mode).layout([section])  # type: ignore[arg-type]
    message = str(error.value)
    assert "'b'" in message and "'notes'" in message and "(-3)" in message and "Item.tokens must be >= 0" in message
