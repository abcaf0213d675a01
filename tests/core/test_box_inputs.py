"""The layout's input_hash is sound: a canonical, length-prefixed encoding of every input (issue 10 item 13)."""

from __future__ import annotations

import datetime
import pickle

from tokenbox_core import Item, Section, TokenBox
from tokenbox_core.select import ReflexiveScorer, SelectionPolicy
from tokenbox_core.select._scorers import PriorityScorer


def digest(sections: list[Section], **box: object) -> str:
    return TokenBox(1_000, counter="whitespace", **box).layout(sections).input_hash  # type: ignore[arg-type]


def count_words(text: str) -> int:
    return len(text.split())


def test_a_nul_in_content_cannot_forge_a_section_boundary() -> None:
    """One section whose content imitates a boundary never hashes like two sections."""
    two = [Section("a", "A"), Section("b", "B", shrink=1)]
    forged = [Section("a", "A\x00('b', 0, 0, None, None, 0.0, 1.0, (), 'head', None, 'oldest', False, False, '\\n')B")]
    joined = [Section("a", "A\x00B")]
    hashes = {digest(two), digest(forged), digest(joined), digest([Section("a", "A"), Section("b", "\x00B", shrink=1)])}
    assert len(hashes) == 4


def test_every_input_that_can_change_the_output_is_hashed() -> None:
    """Section policy and metadata; item metadata, tags, timestamp, source, kind; box strict and mode."""
    item = Item("i", "text", score=0.5)
    base = [Section("s", [item], shrink=1)]
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    variants = [
        [Section("s", [item], shrink=1, policy=SelectionPolicy(scorer=ReflexiveScorer()))],
        [Section("s", [item], shrink=1, policy=SelectionPolicy(scorer=PriorityScorer()))],
        [Section("s", [item], shrink=1, metadata={"k": 1})],
        [Section("s", [Item("i", "text", score=0.5, metadata={"trust": 1})], shrink=1)],
        [Section("s", [Item("i", "text", score=0.5, tags=("a",))], shrink=1)],
        [Section("s", [Item("i", "text", score=0.5, timestamp=when)], shrink=1)],
        [Section("s", [Item("i", "text", score=0.5, source="kb")], shrink=1)],
        [Section("s", [Item("i", "text", score=0.5, kind="Document")], shrink=1)],
    ]
    hashes = [digest(base), *(digest(v) for v in variants), digest(base, strict=True), digest(base, mode="messages")]
    assert len(set(hashes)) == len(hashes)
    assert digest(base) == digest([Section("s", [Item("i", "text", score=0.5)], shrink=1)])


def test_a_counter_without_a_stable_identity_makes_the_trace_say_so() -> None:
    """Two lambdas never hash alike, and the trace says the hash covers this process only."""
    sections = [Section("a", "one two")]
    first = TokenBox(10, counter=lambda t: len(t.split())).layout(sections)
    second = TokenBox(10, counter=lambda t: len(t.split()) + 0).layout(sections)
    assert first.input_hash != second.input_hash
    assert first.trace["input_hash_stable"] is False
    assert "no stable identity" in first.trace["input_hash_notes"][0] and "lambda" in first.input_hash_notes[0]
    named = TokenBox(10, counter=count_words).layout(sections)
    assert named.trace["input_hash_stable"] is True and "input_hash_notes" not in named.trace
    assert named.input_hash == TokenBox(10, counter=count_words).layout(sections).input_hash
    clone = pickle.loads(pickle.dumps(first))
    assert clone.input_hash == first.input_hash and clone.input_hash_notes == first.input_hash_notes
