"""TokenBoxPromptHelper: rank-aware truncate and lossless repack, in place of PromptHelper's equal shares."""

from __future__ import annotations

import pickle
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llama_index.core import Settings, TreeIndex, VectorStoreIndex, get_response_synthesizer
from llama_index.core.indices.prompt_helper import PromptHelper
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.prompts import ChatPromptTemplate, PromptTemplate
from llama_index.core.prompts.default_prompts import DEFAULT_TEXT_QA_PROMPT
from llama_index.core.schema import TextNode
from llama_index.core.tools import FunctionTool

from tokenbox_core import BudgetError, ContextCriticalOverflow, get_counter
from tokenbox_llamaindex import TokenBoxPromptHelper
from tokenbox_llamaindex._prompt_helper import PromptOverflow

QA = DEFAULT_TEXT_QA_PROMPT.partial_format(query_str="Which fact?")


def facts(n: int) -> list[str]:
    """``n`` short chunks, best first, each about a dozen tokens."""
    return [f"Fact {i}: the value of item {i} is {i * 7} units." for i in range(n)]


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


@pytest.mark.parametrize("n", [50, 65, 80])
def test_many_chunks_regression(n: int) -> None:
    """Where PromptHelper cuts 50-80 chunks to one word each or raises, the best chunks are kept whole."""
    chunks = facts(n)
    stock = PromptHelper(context_window=700, num_output=256)
    if n == 80:
        with pytest.raises(ValueError, match="is not positive"):
            stock.truncate(QA, chunks)
    else:
        assert {c.split()[0] for c in stock.truncate(QA, chunks)} == {"Fact"}  # every chunk is one word
    helper = TokenBoxPromptHelper(context_window=700, num_output=256)
    kept = helper.truncate(QA, chunks)
    fragments = [f.id for f in helper.last_fragments]  # a boundary cut below min_fragment_tokens is left out
    whole = len(kept) if fragments else len(kept) - 1
    assert kept[:whole] == chunks[:whole]  # the best chunks, whole and in order
    assert fragments == [f"chunk-{whole}"] or chunks[whole].startswith(kept[-1])  # only the boundary chunk cut
    assert len(kept) > 20
    layout = helper.last_layout
    assert layout.total_tokens <= layout.max_tokens == 700 - 256 - 5
    assert [r.id for r in layout.removed] == [f"chunk-{i}" for i in range(n - 1, whole, -1)]


def test_tree_index_with_80_children_regression() -> None:
    """A TreeIndex with 80 children per parent builds where the stock PromptHelper raises."""
    nodes = [TextNode(text=chunk) for chunk in facts(160)]
    llm = MockLLM(max_tokens=8)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Settings, "_prompt_helper", PromptHelper(context_window=700, num_output=256))
        with pytest.raises(ValueError, match="is not positive"):
            TreeIndex(nodes=nodes, num_children=80, llm=llm)
        helper = TokenBoxPromptHelper(context_window=700, num_output=256)
        mp.setattr(Settings, "_prompt_helper", helper)
        tree = TreeIndex(nodes=nodes, num_children=80, llm=llm)
    assert len(tree.index_struct.root_nodes) == 2
    assert helper.last_layout.removed  # the lowest-ranked children of the last parent, reported


def test_short_chunks_hand_their_share_to_others() -> None:
    """Short chunks take only what they need; a long chunk keeps its text instead of an equal share."""
    chunks = [words(30, "a"), "b0", "c0", "d0", words(60, "e")]
    helper = TokenBoxPromptHelper(context_window=90, num_output=10, counter="whitespace")
    prompt = PromptTemplate("Context: {context_str}")
    kept = helper.truncate(prompt, chunks, padding=0)
    assert kept[:4] == chunks[:4]
    assert len(kept[4].split()) == 80 - 1 - 33  # all that the prompt and the first four chunks left
    stock = PromptHelper(context_window=90, num_output=10, tokenizer=str.split).truncate(prompt, chunks, padding=0)
    assert len(stock[0].split()) < 30  # the stock helper cuts the best chunk to an equal share


def test_boundary_cut_ends_at_a_word() -> None:
    """The boundary chunk is cut at a separator (a space), never mid-word."""
    chunks = ["supercalifragilistic " * 40]
    helper = TokenBoxPromptHelper(context_window=60, num_output=10, counter="cl100k_base")
    (kept,) = helper.truncate(PromptTemplate("{context_str}"), chunks)
    assert kept and chunks[0].startswith(kept) and chunks[0][len(kept)] == " "


def test_prompt_system_prompt_and_tools_are_counted() -> None:
    """The empty prompt, the LLM's system prompt and tool schemas are one critical section."""
    helper = TokenBoxPromptHelper(context_window=4000, num_output=100, counter="whitespace")
    prompt = PromptTemplate("Use the context to answer. {context_str}")
    helper.truncate(prompt, ["x"])
    bare = helper.last_layout["prompt"].final_tokens
    helper.truncate(prompt, ["x"], llm=MockLLM(system_prompt="You are a very careful assistant."))
    assert helper.last_layout["prompt"].final_tokens == bare + 6
    tool = FunctionTool.from_defaults(fn=lambda city: city, name="weather", description="Weather for a city.")
    helper.truncate(prompt, ["x"], tools=[tool])
    assert helper.last_layout["prompt"].final_tokens > bare


def test_chat_prompt_reserves_the_chat_format() -> None:
    """A chat prompt template is charged its per-message overhead as well as its text."""
    chat = ChatPromptTemplate(
        [ChatMessage(role="system", content="Be exact."), ChatMessage(role="user", content="{context_str}")]
    )
    helper = TokenBoxPromptHelper(context_window=100, num_output=10, counter="whitespace")
    helper.truncate(chat, ["x"])
    assert helper.last_layout.budget.reserved_slots["chat_format"] == 3 + 2 * 4 + 2  # priming, messages, roles


def test_prompt_larger_than_window_is_a_critical_overflow() -> None:
    """When the prompt alone does not fit, ContextCriticalOverflow names the prompt section and the numbers."""
    helper = TokenBoxPromptHelper(context_window=30, num_output=10, counter="whitespace")
    with pytest.raises(ContextCriticalOverflow, match="critical sections: 'prompt'") as info:
        helper.truncate(PromptTemplate(words(40, "p") + " {context_str}"), ["x"])
    assert info.value.required == 40 and info.value.budget == 30 - 10 - 5


def test_empty_inputs() -> None:
    """No chunks in, no chunks out, for both methods."""
    helper = TokenBoxPromptHelper(counter="whitespace")
    assert helper.truncate(QA, []) == [] and helper.repack(QA, ["  ", ""]) == []
    assert helper.last_layout is None


def test_repack_keeps_every_word_once_in_order() -> None:
    """Repacking neither drops nor repeats text (no overlap) and each pack fits the window."""
    chunks = [words(25, f"c{k}x") for k in range(9)]
    helper = TokenBoxPromptHelper(context_window=80, num_output=10, counter="whitespace")
    prompt = PromptTemplate("Summarise: {context_str}")
    packs = helper.repack(prompt, chunks)
    assert " ".join(packs).split() == " ".join(chunks).split()
    assert len(packs) == len(helper.last_layouts) == 4
    assert all(layout.total_tokens <= layout.max_tokens for layout in helper.last_layouts)
    stock = PromptHelper(context_window=80, num_output=10, tokenizer=str.split).repack(prompt, chunks)
    assert len(" ".join(stock).split()) > len(" ".join(chunks).split())  # the stock helper repeats overlap


def test_repack_respects_chunk_size_limit() -> None:
    """chunk_size_limit caps every pack."""
    chunks = [words(25, f"c{k}x") for k in range(4)]
    helper = TokenBoxPromptHelper(context_window=1000, num_output=10, chunk_size_limit=30, counter="whitespace")
    packs = helper.repack(PromptTemplate("{context_str}"), chunks)
    assert all(len(p.split()) <= 30 for p in packs) and len(packs) == 4


def test_repack_without_room_is_an_error() -> None:
    """A prompt that leaves no room for text makes repack fail with the fix, not loop."""
    helper = TokenBoxPromptHelper(context_window=20, num_output=10, counter="whitespace")
    with pytest.raises(BudgetError, match="leaves 0 tokens for context"):
        helper.repack(PromptTemplate("a b c d e {context_str}"), ["some text"])


def test_from_llm_metadata_and_counter_from_model_name() -> None:
    """from_llm_metadata takes window and output from the LLM; the model name picks the encoding."""
    llm = MockLLM(max_tokens=64)
    helper = TokenBoxPromptHelper.from_llm_metadata(llm.metadata)
    assert (helper.context_window, helper.num_output) == (3900, 64)
    assert helper.resolve_counter().name == "cl100k_base"
    assert TokenBoxPromptHelper(model_name="gpt-4o").resolve_counter().name == "o200k_base"
    assert TokenBoxPromptHelper(tokenizer=str.split).resolve_counter().count("a b") == 2


@pytest.mark.parametrize("mode", ["simple_summarize", "compact", "refine", "tree_summarize"])
def test_response_synthesizers_use_it(index: VectorStoreIndex, mode: str) -> None:
    """Every text response mode runs through the helper via get_response_synthesizer(prompt_helper=...)."""
    llm = MockLLM(max_tokens=8)
    helper = TokenBoxPromptHelper(context_window=1200, num_output=32)  # refine and compact pad by 500
    synthesizer = get_response_synthesizer(llm=llm, response_mode=mode, prompt_helper=helper)
    engine = index.as_query_engine(llm=llm, similarity_top_k=8, response_synthesizer=synthesizer)
    response = engine.query("Which facts are in document 3?")
    assert str(response)
    assert helper.last_layouts
    assert all(layout.total_tokens <= layout.max_tokens for layout in helper.last_layouts)


chunk_sizes = st.lists(st.integers(0, 40), min_size=1, max_size=15)


@given(sizes=chunk_sizes, window=st.integers(40, 300))
def test_truncate_fits_keeps_a_ranked_prefix_and_is_deterministic(sizes: list[int], window: int) -> None:
    """truncate's result fits beside the prompt, is a prefix of the chunks (last one maybe cut), and repeats."""
    chunks = [words(n, f"k{i}x") for i, n in enumerate(sizes)]
    helper = TokenBoxPromptHelper(context_window=window, num_output=10, counter="whitespace")
    prompt = PromptTemplate("Answer from: {context_str}")
    kept = helper.truncate(prompt, chunks)
    counter = get_counter("whitespace")
    assert counter.count("Answer from:\n" + "\n".join(kept)) <= window - 10 - 5
    if kept:
        assert kept[:-1] == chunks[: len(kept) - 1]
        assert chunks[len(kept) - 1].startswith(kept[-1])
    fingerprint = helper.last_layout.fingerprint
    assert helper.truncate(prompt, chunks) == kept and helper.last_layout.fingerprint == fingerprint


@given(sizes=chunk_sizes, window=st.integers(30, 200))
def test_repack_is_lossless_and_fits(sizes: list[int], window: int) -> None:
    """repack's packs hold every word once, in order, and each pack fits beside the prompt."""
    chunks = [words(n, f"k{i}x") for i, n in enumerate(sizes)]
    helper = TokenBoxPromptHelper(context_window=window, num_output=10, counter="whitespace")
    packs = helper.repack(PromptTemplate("Summarise: {context_str}"), chunks)
    assert " ".join(packs).split() == " ".join(chunks).split()
    counter = get_counter("whitespace")
    assert all(counter.count(p) <= window - 10 - 5 - 1 for p in packs)


def test_serialises_like_a_llama_index_component() -> None:
    """to_dict/from_dict round-trip the window, output size and model name."""
    helper = TokenBoxPromptHelper(context_window=1000, num_output=50, model_name="gpt-4o", counter="whitespace")
    data = helper.to_dict()
    assert data["class_name"] == "TokenBoxPromptHelper" and "counter" not in data
    again = TokenBoxPromptHelper.from_dict(data)
    assert (again.context_window, again.num_output, again.model_name) == (1000, 50, "gpt-4o")


# ---------------------------------------------------------------------------- review fixes

INCIDENT = "service: checkout\n\nINC-1004 (checkout): p99 latency tripled after a deploy."


@pytest.mark.parametrize("window", [4, 6, 8])
def test_cut_ending_in_whitespace_keeps_its_last_word_regression(window: int) -> None:
    """A token cut that ends in or just before whitespace keeps its last word, and the layout reports that text."""
    counter = get_counter("cl100k_base")
    assert counter.truncate(INCIDENT, 4) == "service: checkout\n\n"  # the core's 4-token cut ends at the blank line
    helper = TokenBoxPromptHelper(context_window=window, num_output=0, counter="cl100k_base", min_fragment_tokens=0)
    kept = helper.truncate(PromptTemplate("{context_str}"), [INCIDENT], padding=0)
    assert kept == ["service: checkout"]  # was 'service:' (only ' ' counted as a word boundary)
    chunks = helper.last_layout["chunks"]
    assert [item.content for item in chunks.content] == kept
    assert chunks.final_tokens == counter.count("service: checkout\n")  # the layout counts what is returned


def test_cut_at_a_paragraph_separator() -> None:
    """With separator='\\n\\n' a cut ends at a paragraph, also when it falls inside the separator."""
    text = "a b c\n\nd e f\n\ng h"
    prompt = PromptTemplate("{context_str}")
    for window in (3, 4, 5, 6):  # the whitespace counter cuts after 3, 4, 5 or 6 words
        helper = TokenBoxPromptHelper(
            context_window=window, num_output=0, separator="\n\n", counter="whitespace", min_fragment_tokens=0
        )
        kept = helper.truncate(prompt, [text], padding=0)
        assert kept == (["a b c\n\nd e f"] if window == 6 else ["a b c"])
        assert [item.content for item in helper.last_layout["chunks"].content] == kept
    by_char = TokenBoxPromptHelper(
        context_window=7, num_output=0, separator="\n\n", counter=list, min_fragment_tokens=0
    )
    assert by_char.truncate(prompt, [text], padding=0) == ["a b c"]  # the 6-character cut ends inside "\n\n"
    helper = TokenBoxPromptHelper(
        context_window=7, num_output=0, separator="\n\n", counter="whitespace", min_fragment_tokens=0
    )
    assert helper.repack(PromptTemplate("x y {context_str}"), [text], padding=0) == ["a b c", "d e f\n\ng h"]


separators = st.sampled_from([" ", "\n", "\n\n", " \n", "\t", "  "])
texts = st.lists(st.tuples(st.text("ab", min_size=1, max_size=6), separators), min_size=1, max_size=8).map(
    lambda pairs: "".join(word + sep for word, sep in pairs[:-1]) + pairs[-1][0]
)


@given(
    chunks=st.lists(st.tuples(texts, st.sampled_from(["", " ", "\n\n"])), min_size=1, max_size=4),
    window=st.integers(6, 90),
)
def test_boundary_cut_is_the_longest_whole_word_cut_and_is_reported(chunks: list[tuple[str, str]], window: int) -> None:
    """One token per character: the boundary cut is the longest whole-word cut that fits, and is what is reported."""
    full = [text + tail for text, tail in chunks]
    helper = TokenBoxPromptHelper(context_window=window, num_output=0, counter=list, min_fragment_tokens=0)
    kept = helper.truncate(PromptTemplate("Ctx: {context_str}"), full, padding=0)
    layout = helper.last_layout
    assert [item.content for item in layout["chunks"].content] == kept
    assert layout.total_tokens == len(layout.text) <= window
    if not kept:
        return
    assert kept[:-1] == full[: len(kept) - 1]
    if kept[-1] == full[len(kept) - 1]:
        return
    chunk, cut = full[len(kept) - 1], kept[-1]
    assert chunk.startswith(cut) and cut == cut.rstrip()
    assert chunk[len(cut)].isspace() or not any(c.isspace() for c in cut)  # a word boundary, or inside the first word
    following = re.compile(r"\s*\S+").match(chunk, len(cut))
    if following is not None:  # the next whole word would not have fitted
        room = layout.max_tokens - layout.fixed_tokens
        assert layout["chunks"].final_tokens + following.end() - len(cut) > room


def test_reserves_filling_the_window_name_the_cause_regression(index: VectorStoreIndex) -> None:
    """num_output + padding >= context_window is a BudgetError (a ValueError, like PromptHelper's) naming them."""
    stock = PromptHelper(context_window=700, num_output=256)
    with pytest.raises(ValueError, match="is not positive"):
        stock.repack(QA, facts(3), padding=500)
    helper = TokenBoxPromptHelper(context_window=700, num_output=256, counter="whitespace")
    message = (
        r"context_window \(700\) leaves no room for the prompt \(\d+ tokens\) or any chunk: num_output \(256\) \+ "
        r"padding \(500\) = 756 tokens\. Raise context_window or lower num_output"
    )
    for method in (helper.truncate, helper.repack):
        with pytest.raises(BudgetError, match=message) as info:
            method(QA, facts(3), padding=500)
        assert isinstance(info.value, ValueError) and not isinstance(info.value, ContextCriticalOverflow)
    with pytest.raises(BudgetError, match=r"num_output \(256\) \+ padding \(444\) = 700 tokens"):
        helper.truncate(QA, facts(3), padding=444)
    llm = MockLLM(max_tokens=8)
    synthesizer = get_response_synthesizer(llm=llm, response_mode="compact", prompt_helper=helper)
    engine = index.as_query_engine(llm=llm, similarity_top_k=4, response_synthesizer=synthesizer)
    with pytest.raises(ValueError, match=r"padding \(500\)"):
        engine.query("Which facts are in document 3?")


def test_prompt_overflow_is_also_a_value_error() -> None:
    """An oversized prompt raises PromptOverflow, a ContextCriticalOverflow and a BudgetError naming the numbers."""
    helper = TokenBoxPromptHelper(context_window=30, num_output=10, counter="whitespace")
    prompt = PromptTemplate(words(40, "p") + " {context_str}")
    message = (
        r"the prompt needs 40 tokens but context_window \(30\) - num_output \(10\) - padding \(5\) leaves 15 "
        r"\(over by 25\); critical sections: 'prompt' .* Raise context_window, lower num_output or shorten the prompt"
    )
    for method in (helper.truncate, helper.repack):
        with pytest.raises(PromptOverflow, match=message) as info:
            method(prompt, ["x"])
        error = info.value
        assert isinstance(error, ContextCriticalOverflow) and isinstance(error, BudgetError)
        assert isinstance(error, ValueError) and isinstance(error.__cause__, ContextCriticalOverflow)
        assert (error.budget, error.required, error.section_ids) == (15, 40, ("prompt",))
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is PromptOverflow and str(again) == str(error) and again.required == 40


def test_prompt_overflow_counts_the_chat_format() -> None:
    """For a chat prompt the overflow message includes the chat format in what the prompt needs."""
    chat = ChatPromptTemplate(
        [ChatMessage(role="system", content=words(20, "s")), ChatMessage(role="user", content="{context_str}")]
    )
    helper = TokenBoxPromptHelper(context_window=30, num_output=0, counter="whitespace")
    with pytest.raises(BudgetError, match=r"the prompt needs 33 tokens .* leaves 25 \(over by 8\)"):
        helper.truncate(chat, ["x"])  # 20 words + 3 priming + 2 x 4 per message + 2 roles


def test_boundary_fragment_below_the_minimum_is_left_out_and_reported() -> None:
    """Issue 10 item 24: a boundary chunk cut to a few tokens is noise; below min_fragment_tokens it is left out
    and listed in last_fragments (with the tokens it would have had); above it, it is sent."""
    chunks = [" ".join(f"c{i}w{j}" for j in range(40)) for i in range(3)]
    window = 10 + 40 + 5 + 6  # num_output, one chunk, padding, 6 tokens of the next chunk
    short = TokenBoxPromptHelper(context_window=window, num_output=10, counter="whitespace")
    prompt = PromptTemplate("{context_str}")
    kept = short.truncate(prompt, chunks)
    assert kept == chunks[:1]
    [fragment] = short.last_fragments
    assert (fragment.id, fragment.reason) == ("chunk-1", "fragment") and 0 < fragment.tokens < 16
    loose = TokenBoxPromptHelper(context_window=window, num_output=10, counter="whitespace", min_fragment_tokens=0)
    assert loose.truncate(prompt, chunks)[1] == " ".join(chunks[1].split()[: fragment.tokens])
    assert loose.last_fragments == ()
    with pytest.raises(ValueError, match="min_fragment_tokens must be an int >= 0"):
        TokenBoxPromptHelper(min_fragment_tokens=-1)


def test_misspelt_arguments_are_rejected_with_a_hint() -> None:
    """Issue 10 items 6 and 17: the helper keeps PromptHelper's names (context_window); others get a hint."""
    with pytest.raises(TypeError, match="'contex_window' \\(did you mean 'context_window'\\?\\)"):
        TokenBoxPromptHelper(contex_window=100)
    with pytest.raises(TypeError, match="'budget' \\(the token budget of TokenBoxPromptHelper is 'context_window'\\)"):
        TokenBoxPromptHelper(budget=100)
