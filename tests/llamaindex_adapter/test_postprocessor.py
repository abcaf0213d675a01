"""TokenBoxNodePostprocessor: nodes fitted into a token budget, best score first."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.chat_engine import ContextChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from tokenbox_core import BudgetError, SectionError, get_counter
from tokenbox_core.select import rag_policy
from tokenbox_llamaindex import TokenBoxMemory, TokenBoxNodePostprocessor


def node(words: int, score: float | None, tag: str = "w", **metadata: str) -> NodeWithScore:
    """A node of ``words`` distinct words ending in sentences of five words."""
    text = " ".join(f"{tag}{i}." if i % 5 == 4 else f"{tag}{i}" for i in range(words))
    return NodeWithScore(node=TextNode(text=text, metadata=metadata), score=score)


def cost(nodes: list[NodeWithScore], counter: str = "whitespace", separator: str = "\n\n") -> int:
    """What the kept nodes cost as the LLM sees them, joined as a synthesizer joins them."""
    return get_counter(counter).count(separator.join(n.node.get_content(MetadataMode.LLM) for n in nodes))


def test_keeps_highest_scores_in_input_order() -> None:
    """Lowest scores go first; kept nodes come back in their original order."""
    nodes = [node(10, 0.2, "a"), node(10, 0.9, "b"), node(10, 0.5, "c"), node(10, 0.7, "d")]
    post = TokenBoxNodePostprocessor(token_budget=30, counter="whitespace")
    kept = post.postprocess_nodes(nodes)
    assert [n.score for n in kept] == [0.9, 0.5, 0.7]
    assert [r.score for r in post.last_layout.removed] == [0.2]


def test_short_nodes_leave_room_for_more() -> None:
    """The budget is shared by actual sizes, not equal shares: short nodes let more nodes in."""
    nodes = [node(40, 0.9, "a"), node(2, 0.8, "b"), node(2, 0.7, "c"), node(40, 0.6, "d")]
    kept = TokenBoxNodePostprocessor(token_budget=45, counter="whitespace").postprocess_nodes(nodes)
    assert [n.score for n in kept] == [0.9, 0.8, 0.7]


def test_counts_metadata_the_llm_sees() -> None:
    """A node is counted with its LLM metadata header, and without metadata excluded from the LLM."""
    visible = node(10, 0.9, source="a b c d e")
    hidden = node(10, 0.9, source="a b c d e")
    hidden.node.excluded_llm_metadata_keys = ["source"]
    post = TokenBoxNodePostprocessor(token_budget=12, counter="whitespace")
    assert post.postprocess_nodes([visible]) == []
    assert post.postprocess_nodes([hidden]) == [hidden]


def test_metadata_is_not_polluted() -> None:
    """The report lives on last_layout; kept nodes are the same objects with untouched metadata."""
    nodes = [node(10, 0.9, source="x"), node(10, 0.1, source="y")]
    post = TokenBoxNodePostprocessor(token_budget=15, counter="whitespace")
    kept = post.postprocess_nodes(nodes)
    assert kept == [nodes[0]] and kept[0] is nodes[0]
    assert kept[0].node.metadata == {"source": "x"}
    assert post.last_layout is not None and post.last_layout["nodes"].status == "truncated"


def test_boundary_node_dropped_by_default() -> None:
    """With truncation='none' the node at the boundary is dropped whole."""
    nodes = [node(10, 0.9, "a"), node(10, 0.8, "b")]
    kept = TokenBoxNodePostprocessor(token_budget=17, counter="whitespace").postprocess_nodes(nodes)
    assert kept == [nodes[0]]


def test_token_truncation_cuts_boundary_node_to_fill_budget() -> None:
    """truncation='tokens' cuts the boundary node's text (a copy), keeping its header, to fill the budget."""
    nodes = [node(10, 0.9, "a"), node(20, 0.8, "b", source="s")]
    budget = cost(nodes[:1], "cl100k_base") + 15
    post = TokenBoxNodePostprocessor(token_budget=budget, counter="cl100k_base", truncation="tokens")
    kept = post.postprocess_nodes(nodes)
    assert len(kept) == 2 and kept[0] is nodes[0]
    cut = kept[1]
    assert cut.node.node_id == nodes[1].node.node_id and cut.score == 0.8
    assert nodes[1].node.text.startswith(cut.node.text) and len(cut.node.text) < len(nodes[1].node.text)
    assert cut.node.get_content(MetadataMode.LLM).startswith("source: s")
    assert nodes[1].node.text.endswith("b19.")  # the original node is untouched
    assert cost(kept, "cl100k_base") <= budget


def test_sentence_truncation_keeps_whole_sentences() -> None:
    """truncation='sentences' keeps only whole leading sentences of the boundary node."""
    nodes = [node(10, 0.9, "a"), node(20, 0.8, "b")]
    post = TokenBoxNodePostprocessor(token_budget=18, counter="whitespace", truncation="sentences")
    kept = post.postprocess_nodes(nodes)
    assert kept[1].node.text == "b0 b1 b2 b3 b4."
    assert cost(kept) <= 18


def test_sentence_truncation_drops_node_without_a_whole_sentence() -> None:
    """If not one whole sentence of the boundary node fits, it is dropped rather than cut mid-sentence."""
    nodes = [node(10, 0.9, "a"), node(20, 0.8, "b")]
    kept = TokenBoxNodePostprocessor(token_budget=13, counter="whitespace", truncation="sentences").postprocess_nodes(
        nodes
    )
    assert kept == [nodes[0]]


def test_budget_from_llm_window_minus_reserves() -> None:
    """Without token_budget the budget is the LLM's window minus the prompt and output reserves."""
    llm = MockLLM(max_tokens=100)  # context window 3,900
    nodes = [node(1000, 0.9, "a"), node(1000, 0.8, "b"), node(1000, 0.7, "c"), node(1000, 0.6, "d")]
    post = TokenBoxNodePostprocessor(llm=llm, prompt_reserve=800, counter="whitespace")
    kept = post.postprocess_nodes(nodes)
    assert [n.score for n in kept] == [0.9, 0.8, 0.7]
    assert post.last_layout.max_tokens == 3900 - 100 - 800
    wide = TokenBoxNodePostprocessor(llm=llm, prompt_reserve=0, output_reserve=0, counter="whitespace")
    assert len(wide.postprocess_nodes(nodes)) == 3  # 3,900 tokens hold three 1,000-word nodes plus separators


def test_budget_from_settings_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """With neither token_budget nor llm, Settings.llm sets the budget."""
    monkeypatch.setattr(Settings, "_llm", MockLLM(max_tokens=900))
    post = TokenBoxNodePostprocessor(counter="whitespace")
    post.postprocess_nodes([node(10, 0.5)])
    assert post.last_layout.max_tokens == 3000


def test_no_budget_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without token_budget, llm or Settings.llm the error says how to give a budget."""
    monkeypatch.setattr(Settings, "_llm", None)
    with pytest.raises(BudgetError, match="pass budget=<tokens>, or llm=<LLM>"):
        TokenBoxNodePostprocessor(counter="whitespace").postprocess_nodes([node(3, 0.5)])


def test_reserves_larger_than_window_are_an_error() -> None:
    """Reserves that leave no room for nodes are reported with the numbers."""
    post = TokenBoxNodePostprocessor(llm=MockLLM(max_tokens=100), prompt_reserve=3800, counter="whitespace")
    with pytest.raises(BudgetError, match=r"context window \(3,900 tokens\) leaves no room"):
        post.postprocess_nodes([node(3, 0.5)])


def test_empty_input_and_duplicate_nodes() -> None:
    """No nodes gives no nodes; the same node retrieved twice is handled as two items."""
    post = TokenBoxNodePostprocessor(token_budget=100, counter="whitespace")
    assert post.postprocess_nodes([]) == [] and post.last_layout is None
    twice = node(5, 0.5)
    again = NodeWithScore(node=twice.node, score=0.4)
    assert post.postprocess_nodes([twice, again]) == [twice, again]


def test_selection_policy_chooses_and_places_nodes() -> None:
    """A selection policy fills the budget and places the nodes (rag_policy: best at both edges, no duplicates)."""
    nodes = [node(10, s, f"n{i}x") for i, s in enumerate([0.5, 0.9, 0.7, 0.8, 0.6, 0.1])]
    nodes.append(NodeWithScore(node=TextNode(text=nodes[1].node.text), score=0.95))  # same text, other node
    post = TokenBoxNodePostprocessor(token_budget=40, counter="whitespace", policy=rag_policy())
    kept = post.postprocess_nodes(nodes)
    scores = [n.score for n in kept]
    assert sorted(scores) == [0.6, 0.7, 0.8, 0.95]  # the best four; the copy of 0.9's text is deduplicated
    assert (scores[0], scores[-1]) == (0.95, 0.8)  # U-shaped: the best two at the edges
    assert cost(kept) <= 40
    section = post.last_layout["nodes"]
    assert section.selection is not None
    assert {r.reason for r in section.removed} == {"BudgetExceeded", "Deduplicated"}


def test_policy_must_be_a_selection_policy() -> None:
    """Anything but a SelectionPolicy as policy is rejected by the core with the type it expects."""
    post = TokenBoxNodePostprocessor(token_budget=5, counter="whitespace", policy="rag")
    with pytest.raises(SectionError, match="policy must be a tokenbox_core.select.SelectionPolicy"):
        post.postprocess_nodes([node(10, 0.5)])


def test_sync_and_async_agree() -> None:
    """apostprocess_nodes returns what postprocess_nodes returns, with the same fingerprint."""
    nodes = [node(10 + i, 1 - i / 10, f"n{i}") for i in range(8)]
    post = TokenBoxNodePostprocessor(token_budget=50, counter="whitespace", truncation="tokens")
    sync = post.postprocess_nodes(nodes)
    fingerprint = post.last_layout.fingerprint
    result = asyncio.run(post.apostprocess_nodes(nodes))
    assert [n.node.get_content() for n in result] == [n.node.get_content() for n in sync]
    assert post.last_layout.fingerprint == fingerprint


def test_query_engine_sync_and_async(index: VectorStoreIndex, llm: MockLLM) -> None:
    """In index.as_query_engine(node_postprocessors=[...]) the retrieved nodes are cut to the budget."""
    post = TokenBoxNodePostprocessor(token_budget=300, counter="cl100k_base")
    engine = index.as_query_engine(llm=llm, similarity_top_k=8, node_postprocessors=[post])
    response = engine.query("what does doc 3 say?")
    assert 0 < len(response.source_nodes) < 8
    assert cost(response.source_nodes, "cl100k_base") <= 300
    layout = post.last_layout
    assert len(layout.removed) == 8 - len(response.source_nodes)
    async_response = asyncio.run(engine.aquery("what does doc 3 say?"))
    assert [n.node.node_id for n in async_response.source_nodes] == [n.node.node_id for n in response.source_nodes]


def test_context_chat_engine_takes_it(index: VectorStoreIndex, llm: MockLLM) -> None:
    """A ContextChatEngine with the postprocessor (and TokenBoxMemory) answers with budgeted sources."""
    post = TokenBoxNodePostprocessor(token_budget=300, counter="cl100k_base")
    engine = ContextChatEngine.from_defaults(
        retriever=index.as_retriever(similarity_top_k=6),
        llm=llm,
        memory=TokenBoxMemory.from_defaults(token_limit=500, llm=llm),
        node_postprocessors=[post],
    )
    reply = engine.chat("tell me about doc 2")
    assert reply.response and 0 < len(reply.source_nodes) < 6
    assert cost(reply.source_nodes, "cl100k_base") <= 300
    async_reply = asyncio.run(engine.achat("and doc 4?"))
    assert cost(async_reply.source_nodes, "cl100k_base") <= 300


node_specs = st.lists(
    st.tuples(st.integers(0, 40), st.one_of(st.none(), st.floats(0, 1, allow_nan=False))), min_size=1, max_size=12
)


@given(specs=node_specs, budget=st.integers(0, 200), truncation=st.sampled_from(["none", "tokens", "sentences"]))
def test_never_over_budget_best_scores_kept_deterministic(
    specs: list[tuple[int, float | None]], budget: int, truncation: str
) -> None:
    """Kept nodes fit the budget, no dropped node outscores a kept one, and the result is deterministic."""
    nodes = [node(words, score, f"n{i}x") for i, (words, score) in enumerate(specs)]
    post = TokenBoxNodePostprocessor(token_budget=budget, counter="whitespace", truncation=truncation)
    kept = post.postprocess_nodes(nodes)
    assert cost(kept) <= budget
    kept_ids = {n.node.node_id for n in kept}
    dropped = [n for n in nodes if n.node.node_id not in kept_ids]

    def rank(n: NodeWithScore) -> float:
        return float("-inf") if n.score is None else n.score

    whole = [n for n in kept if any(n is m for m in nodes)]
    if whole and dropped:
        assert min(rank(n) for n in whole) >= max(rank(n) for n in dropped)
    order = [next(i for i, m in enumerate(nodes) if m.node.node_id == n.node.node_id) for n in kept]
    assert order == sorted(order)
    fingerprint = post.last_layout.fingerprint
    again = post.postprocess_nodes(nodes)
    assert [n.node.get_content() for n in again] == [n.node.get_content() for n in kept]
    assert post.last_layout.fingerprint == fingerprint


def test_serialises_like_a_llama_index_component() -> None:
    """to_dict/from_dict round-trip the settings and a named counter; the LLM and policy objects are not
    serialised."""
    post = TokenBoxNodePostprocessor(token_budget=10, truncation="sentences", counter="whitespace", policy=rag_policy())
    data = post.to_dict()
    assert data["class_name"] == "TokenBoxNodePostprocessor"
    assert not {"llm", "policy"} & set(data)
    again = TokenBoxNodePostprocessor.from_dict(data)
    assert (again.budget, again.truncation, again.counter) == (10, "sentences", "whitespace")


def test_named_counter_survives_serialisation_and_an_unnamed_one_says_it_cannot() -> None:
    """Issue 10 item 14: from_dict(to_dict()) keeps a named counter; an unnamed counter makes to_dict raise
    ValueError with the fix instead of silently going back to the default counter."""
    post = TokenBoxNodePostprocessor(budget=10, counter="whitespace")
    assert TokenBoxNodePostprocessor.from_json(post.to_json()).resolve_counter().name == "whitespace"
    unnamed = TokenBoxNodePostprocessor(budget=10, counter=lambda text: len(text.split()))
    with pytest.raises(ValueError, match="cannot serialise the counter .*from_dict\\(data, counter=...\\)"):
        unnamed.to_dict()
    restored = TokenBoxNodePostprocessor.from_dict(
        TokenBoxNodePostprocessor(budget=10).to_dict(), counter=lambda text: len(text.split())
    )
    assert restored.resolve_counter().count("a b c") == 3


def test_budget_names_misspellings_and_aliases() -> None:
    """Issues 10 items 6 and 17: budget is the TokenBox name, token_budget a documented alias; a misspelt
    argument is rejected with a "did you mean" instead of silently laying out into the LLM's window."""
    assert TokenBoxNodePostprocessor(token_budget=7).budget == TokenBoxNodePostprocessor(budget=7).budget == 7
    with pytest.raises(TypeError, match="'token_budgt' \\(did you mean 'token_budget'\\?\\)"):
        TokenBoxNodePostprocessor(token_budgt=300)
    with pytest.raises(ValueError, match="'conter' \\(did you mean 'counter'\\?\\)"):
        TokenBoxNodePostprocessor(budget=3, conter="whitespace")
    with pytest.raises(ValueError, match="budget must be a number of tokens"):
        TokenBoxNodePostprocessor(budget=True)
