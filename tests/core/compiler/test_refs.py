"""Reference compression (§6.7.3): duplicates become pointers to an earlier canonical instance."""

from __future__ import annotations

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler import Memory
from tokenbox_core.compiler._refs import find_duplicates, pointer_text

from .conftest import evidence

FACT = (
    "Quarterly revenue grew 12% year over year, driven by the enterprise segment, lower churn among mid-size "
    "customers, and the new usage-based pricing tier that launched in March across all European markets."
)


def test_exact_duplicate_across_sections_becomes_a_pointer() -> None:
    """A memory repeating a passage is replaced by a pointer to the (earlier, more authoritative) passage."""
    compiled = ContextCompiler(3000).compile(
        policy="P", evidence=[evidence("kb-3", FACT, authority=0.9)], memory=[Memory("m1", FACT.upper())]
    )
    (ref,) = compiled.references
    assert (ref.section, ref.item_id, ref.canonical_id, ref.similarity) == ("memory", "m1", "kb-3", 1.0)
    assert ref.saved_tokens > 0
    memory_message = compiled.messages[2]["content"]
    assert pointer_text("kb-3", FACT) in memory_message and FACT.upper() not in memory_message
    assert compiled.trace.references[0]["canonical_id"] == "kb-3"


def test_near_duplicates_by_shingles_and_history_pointers() -> None:
    """A history turn pasting the passage with one word changed is a near-duplicate (Jaccard >= threshold)."""
    pasted = FACT.replace("lower", "reduced")
    history = [{"role": "user", "content": pasted}, {"role": "assistant", "content": "Noted."}]
    config = CompilerConfig(dedupe_threshold=0.6)
    compiled = ContextCompiler(3000, config=config).compile(
        policy="P", evidence=[evidence("kb-3", FACT)], history=history, user="Summarise."
    )
    (ref,) = compiled.references
    assert ref.item_id == "m0" and 0.6 <= ref.similarity < 1.0
    assert compiled.messages[2] == {"role": "user", "content": pointer_text("kb-3", FACT)}


def test_canonical_is_the_most_authoritative_and_earlier_lower_copies_stay() -> None:
    """Among passages, the higher authority is canonical; a copy placed before it stays verbatim."""
    low, high = (
        evidence("low", FACT, authority=0.2, relevance=0.9),
        evidence("high", FACT, authority=0.9, relevance=0.1),
    )
    late = evidence("late", FACT, authority=0.1, relevance=0.05)
    compiled = ContextCompiler(3000).compile(policy="P", evidence=[low, high, late])
    assert [(r.item_id, r.canonical_id) for r in compiled.references] == [("late", "high")]
    ev = compiled.messages[1]["content"]
    assert ev.index("[evidence low") < ev.index("[evidence high") < ev.index("[evidence late")
    assert compiled.metrics.duplication_rate > 0  # 'low' still duplicates 'high'


def test_dangling_pointers_get_their_text_back() -> None:
    """If the canonical passage is evicted, its pointer is restored to the original text (integrity holds)."""
    config = CompilerConfig(
        priorities={"evidence": 1, "memory": 3, "history": 2},
        overflow="truncate_lowest",
        minimums={"evidence": 400, "memory": 10},
        constraint_density_limit=None,
    )
    compiled = ContextCompiler(120, counter="whitespace", config=config).compile(
        policy="P", evidence=[evidence("kb", FACT)], memory=[Memory("m1", FACT)]
    )
    assert "evidence" not in compiled.sections and "memory" in compiled.sections
    assert compiled.references == ()
    assert FACT in compiled.text


def test_dedupe_off_and_embedder_plugin() -> None:
    """dedupe=False keeps duplicates; an embedder finds paraphrases the shingles miss."""
    data = {"policy": "P", "evidence": [evidence("kb", FACT)], "memory": [Memory("m1", FACT)]}
    assert ContextCompiler(3000, config=CompilerConfig(dedupe=False)).compile(**data).references == ()
    paraphrase = [Memory("m2", "Sales went up twelve percent compared with last year, " * 4)]

    def embed(text: str) -> list[float]:
        return [1.0, 0.0] if "twelve" in text or "12%" in text else [0.0, 1.0]

    config = CompilerConfig(embedder=embed, embedding_threshold=0.99)
    compiled = ContextCompiler(3000, config=config).compile(
        policy="P", evidence=[evidence("kb", FACT)], memory=paraphrase
    )
    assert [(r.item_id, r.canonical_id) for r in compiled.references] == [("m2", "kb")]


def test_find_duplicates_pairs_each_later_text_with_its_best_match() -> None:
    """Unrelated texts are never paired; exact copies have similarity 1.0."""
    texts = [
        "alpha beta gamma delta epsilon",
        "zeta eta theta",
        "Alpha beta gamma delta epsilon!",
        "alpha beta gamma delta omega",
    ]
    pairs = find_duplicates(texts, 0.5, 3)
    assert pairs == [(0, 2, 1.0), (0, 3, 0.5)]


def test_equal_shingle_sets_with_different_words_pair_with_the_first() -> None:
    """ "a b a b" and "b a b a" share every 3-shingle: the later one is a near-duplicate (Jaccard 1.0) of the
    first, and so is its exact copy (the first text with that shingle set is the canonical key)."""
    texts = ["a b a b", "b a b a", "b a b a", "A B A B!", "x"]
    assert find_duplicates(texts, 0.9, 3) == [(0, 1, 1.0), (0, 2, 1.0), (0, 3, 1.0)]
