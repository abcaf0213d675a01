"""The compiler behind a LlamaIndex query engine and chat engine: the whole compiled prompt is shown."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, TextNode

from tokenbox_core import CompiledContext, ContextBudget, ContextCompiler
from tokenbox_core.errors import CompilerInputError
from tokenbox_llamaindex._compiler import TokenBoxChatEngine, TokenBoxQueryEngine, nodes_to_evidence

NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)


def compiler(window: int = 3900) -> ContextCompiler:
    return ContextCompiler(ContextBudget(max_tokens=window, output_reserve=256))


def test_query_engine_compiles_the_whole_prompt(index: VectorStoreIndex, llm: MockLLM) -> None:
    """Policy, task and retrieved evidence are compiled into one prompt; the response shows it and its sources."""
    engine = TokenBoxQueryEngine(
        retriever=index.as_retriever(similarity_top_k=4),
        llm=llm,
        compiler=compiler(),
        policy="Answer from the evidence only.",
        task={"objective": "answer the question"},
        clock=lambda: NOW,
    )
    response = engine.query("What is fact 3 of document 2?")
    messages = response.metadata["tokenbox_messages"]
    assert [m["role"] for m in messages] == ["system", "system", "user", "user"]
    assert messages[2]["content"].count("[evidence ") == 4 and "source: file-" in messages[2]["content"]
    assert messages[-1]["content"].endswith("What is fact 3 of document 2?")
    compiled = response.metadata["tokenbox_compiled"]
    assert isinstance(compiled, CompiledContext) and engine.last_compiled is compiled
    assert len(response.source_nodes) == 4 and compiled.total_tokens + 256 <= 3900
    assert response.metadata["tokenbox"]["provenance_coverage"] == 1.0


def test_query_engine_keeps_only_what_fits(index: VectorStoreIndex, llm: MockLLM) -> None:
    """With a small window, fewer passages fit; source_nodes lists only those in the prompt."""
    engine = TokenBoxQueryEngine(
        retriever=index.as_retriever(similarity_top_k=8),
        llm=llm,
        compiler=compiler(900),
        policy="Answer briefly.",
        clock=lambda: NOW,
    )
    response = engine.query("fact 1")
    compiled = response.metadata["tokenbox_compiled"]
    assert 0 < len(response.source_nodes) < 8
    assert {n.node.node_id for n in response.source_nodes} == {i.id for i in compiled.layout["evidence"].content}
    assert asyncio.run(engine.aquery("fact 1")).metadata["tokenbox_messages"] == response.metadata["tokenbox_messages"]


def test_chat_engine_keeps_the_conversation_and_compiles_each_turn(index: VectorStoreIndex, llm: MockLLM) -> None:
    """Each turn's prompt holds the earlier turns; stream and async paths record the exchange too."""
    engine = TokenBoxChatEngine(
        llm=llm,
        compiler=compiler(),
        retriever=index.as_retriever(similarity_top_k=2),
        policy="Be helpful.",
        clock=lambda: NOW,
    )
    engine.chat("first question")
    second = engine.chat("second question")
    roles = [m["role"] for m in second.metadata["tokenbox_messages"]]
    assert roles == ["system", "user", "user", "assistant", "user"]
    assert len(engine.chat_history) == 4
    streamed = engine.stream_chat("third question")
    text = "".join(streamed.response_gen)
    assert engine.chat_history[-1].content == text.strip() and len(engine.chat_history) == 6
    asyncio.run(engine.achat("fourth"))
    assert len(engine.chat_history) == 8
    engine.reset()
    assert engine.chat_history == [] and engine.last_compiled is None


def test_async_stream_chat_records_the_answer(llm: MockLLM) -> None:
    """astream_chat streams the answer and remembers it once consumed."""
    engine = TokenBoxChatEngine(llm=llm, compiler=compiler(), policy="Be helpful.")

    async def run() -> str:
        response = await engine.astream_chat("hello there")
        return "".join([d async for d in response.async_response_gen()])

    text = asyncio.run(run())
    assert [m.content for m in engine.chat_history] == ["hello there", text.strip()]


def test_nodes_need_a_source() -> None:
    """A node with no source metadata and no ref_doc_id is rejected; scores are clamped into [0, 1]."""
    with pytest.raises(CompilerInputError, match="evidence without provenance"):
        nodes_to_evidence(
            [NodeWithScore(node=TextNode(text="x"), score=0.5)], retrieved_at=NOW, default_authority=0.5, lineage=None
        )
    (e,) = nodes_to_evidence(
        [NodeWithScore(node=TextNode(text="x", metadata={"url": "https://a"}), score=3.0)],
        retrieved_at=NOW,
        default_authority=0.7,
        lineage="R",
    )
    assert (e.source, e.relevance, e.authority, e.lineage) == ("https://a", 1.0, 0.7, "R")


def test_engines_take_a_budget_and_default_to_settings_llm(
    index: VectorStoreIndex, llm: MockLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """budget= as an int or a ContextBudget builds the compiler; llm= defaults to Settings.llm."""
    from llama_index.core import Settings

    monkeypatch.setattr(Settings, "_llm", llm)
    retriever = index.as_retriever()
    engine = TokenBoxQueryEngine(retriever=retriever, budget=900, policy="Answer briefly.", clock=lambda: NOW)
    assert engine.llm is llm and engine.compiler is not None and engine.compiler.budget.max_tokens == 900
    assert engine.query("fact 1").metadata["tokenbox_compiled"].total_tokens <= 900
    chat = TokenBoxChatEngine(budget=ContextBudget(max_tokens=1200, output_reserve=100), policy="Be brief.")
    assert chat.chat("hello").metadata["tokenbox"]["total_tokens"] <= 1100
    default = TokenBoxChatEngine(policy="Be brief.")  # the LLM's window, its num_output reserved
    assert default._sources.compiler.budget.max_tokens == llm.metadata.context_window


def test_engines_reject_unknown_arguments_with_a_suggestion(index: VectorStoreIndex, llm: MockLLM) -> None:
    """A misspelt keyword fails at construction and names the argument meant."""
    from tokenbox_core._arguments import UnknownArgumentError

    with pytest.raises(UnknownArgumentError, match=r"'polcy' \(did you mean 'policy'\?\)"):
        TokenBoxQueryEngine(retriever=index.as_retriever(), llm=llm, budget=900, polcy="x")
    with pytest.raises(UnknownArgumentError, match=r"'retreiver' \(did you mean 'retriever'\?\)"):
        TokenBoxChatEngine(llm=llm, budget=900, policy="x", retreiver=None)
    with pytest.raises(UnknownArgumentError, match="the token budget of TokenBoxChatEngine is 'budget'"):
        TokenBoxChatEngine(llm=llm, token_limit=900, policy="x")


def test_engines_without_a_policy_say_pass_policy(index: VectorStoreIndex, llm: MockLLM) -> None:
    """Without policy= the default config would fail every query: construction says to pass policy=."""
    from tokenbox_core import CompilerConfig

    with pytest.raises(CompilerInputError, match="TokenBoxQueryEngine needs policy="):
        TokenBoxQueryEngine(retriever=index.as_retriever(), llm=llm, budget=900)
    with pytest.raises(CompilerInputError, match="TokenBoxChatEngine needs policy="):
        TokenBoxChatEngine(llm=llm)
    engine = TokenBoxChatEngine(llm=llm, config=CompilerConfig(required_sections=()))
    assert engine.chat("hi").response


def test_engines_reject_a_compiler_with_a_budget(llm: MockLLM) -> None:
    """compiler= already holds the budget: giving budget= too is an error naming both."""
    with pytest.raises(CompilerInputError, match="got compiler= and budget="):
        TokenBoxChatEngine(llm=llm, compiler=compiler(), budget=900, policy="x")
    with pytest.raises(CompilerInputError, match="budget must be an int or a ContextBudget"):
        TokenBoxChatEngine(llm=llm, budget="900", policy="x")  # type: ignore[arg-type]


def test_engines_reject_something_else_as_the_compiler(llm: MockLLM) -> None:
    """compiler= must be a ContextCompiler."""
    with pytest.raises(CompilerInputError, match="compiler must be a ContextCompiler, got int"):
        TokenBoxChatEngine(llm=llm, compiler=3, policy="x")  # type: ignore[arg-type]
