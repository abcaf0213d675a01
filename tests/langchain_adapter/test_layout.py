"""TokenBoxLayout: named prompt parts laid out together, fitted values or a rendered template."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    get_buffer_string,
)
from langchain_core.prompt_values import ChatPromptValue, StringPromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from tokenbox_core import ContextBudget, ContextCriticalOverflow, Layout, SectionError, TokenBox, get_counter
from tokenbox_core.chat import tool_groups
from tokenbox_langchain import LAYOUT_EVENT, TokenBoxLayout, TokenBoxMessages
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain._fit import neutral
from tokenbox_langchain.testing import agent_transcript, sequence_problems

W = "whitespace"
DOCS = [Document(f"doc{i} " + "word " * 9, id=f"d{i}", metadata={"relevance_score": 1 - i / 10}) for i in range(6)]
HISTORY = [HumanMessage("old question here"), AIMessage("old answer here"), HumanMessage("recent question")]


def test_fitted_values_keep_their_types() -> None:
    """Strings stay strings, document lists stay Documents, messages stay messages, in input order."""
    box = TokenBoxLayout(
        sections={"context": {"shrink": 1, "eviction": "newest"}, "history": {"shrink": 1}}, budget=40, counter=W
    )
    out = box.invoke({"question": "what now", "context": DOCS, "history": HISTORY})
    assert out["question"] == "what now"
    assert [d.id for d in out["context"]] == ["d0", "d1"]
    assert out["history"] == HISTORY  # lower-priority context was cut first (declaration order, both priority 0)


def test_priority_decides_who_loses() -> None:
    """The lower-priority section loses first."""
    box = TokenBoxLayout(
        sections={"context": {"shrink": 1, "priority": 2, "eviction": "lowest_score"}, "history": {"shrink": 1}},
        budget=30,
        counter=W,
    )
    out = box.invoke({"context": DOCS, "history": HISTORY})
    assert out["history"] == [] and len(out["context"]) == 3


def test_single_values_and_partial_documents() -> None:
    """A single Document survives as itself, cut with a flag, or None when dropped; text lists work too."""
    doc = Document("one two three four five six seven eight", metadata={"k": 1})
    box = TokenBoxLayout(sections={"doc": {"shrink": 1}, "notes": {"shrink": 1, "partial": True}}, budget=12, counter=W)
    out = box.invoke({"doc": doc, "notes": ["alpha beta gamma", "delta epsilon zeta eta"]})
    assert out["doc"] is None or out["doc"].metadata["k"] == 1
    assert isinstance(out["notes"], list)
    total = len(" ".join(out["notes"]).split()) + (len(out["doc"].page_content.split()) if out["doc"] else 0)
    assert total <= 12
    cut = TokenBoxLayout(sections={"doc": {"shrink": 1, "partial": True}}, budget=5, counter=W).invoke({"doc": doc})
    cut = cut["doc"]
    assert cut.page_content == "one two three four five" and cut.metadata == {"k": 1, "tokenbox_truncated": True}


def test_string_template_counts_its_own_tokens() -> None:
    """With a string template the output is the rendered prompt, within budget, template words included."""
    template = PromptTemplate.from_template("Answer using the context.\n{context}\nQuestion: {question}")
    box = TokenBoxLayout(
        sections={"context": {"shrink": 1, "eviction": "newest"}}, budget=45, counter=W, template=template
    )
    prompt = box.invoke({"context": DOCS, "question": "which doc"})
    assert isinstance(prompt, StringPromptValue)
    text = prompt.to_string()
    assert get_counter(W).count(text) <= 45 and "doc0" in text and "doc5" not in text


def test_chat_template_in_a_chain() -> None:
    """{context, history, question} | TokenBoxLayout(template=chat prompt) | model works and fits."""
    template = ChatPromptTemplate.from_messages(
        [("system", "Use this context:\n{context}"), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    seen: list[Any] = []

    def record(prompt: Any) -> Any:
        seen.append(prompt)
        return prompt

    chain = (
        {
            "context": RunnableLambda(lambda _: DOCS),
            "history": RunnableLambda(lambda _: HISTORY),
            "question": RunnablePassthrough(),
        }
        | TokenBoxLayout(
            sections={"context": {"shrink": 1, "eviction": "lowest_score"}, "history": {"shrink": 1}},
            budget=60,
            counter=W,
            template=template,
        )
        | RunnableLambda(record)
        | FakeListChatModel(responses=["fine"])
    )
    assert chain.invoke("the question").content == "fine"
    prompt = seen[0]
    assert isinstance(prompt, ChatPromptValue)
    assert MessageCounter(W).count(prompt.messages) <= 60
    assert prompt.messages[-1].content == "the question"
    assert asyncio.run(chain.ainvoke("the question")).content == "fine"


def test_layout_event_is_reported() -> None:
    """The layout's decisions reach the callbacks as a custom event."""

    class Recorder(BaseCallbackHandler):
        def __init__(self) -> None:
            self.events: list[str] = []

        def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
            self.events.append(name)

    recorder = Recorder()
    TokenBoxLayout(budget=50, counter=W).invoke({"q": "hello"}, config={"callbacks": [recorder]})
    assert recorder.events == [LAYOUT_EVENT]


@pytest.mark.parametrize(
    ("box", "inputs", "message"),
    [
        (TokenBoxLayout(budget=10, counter=W), {"n": 3}, "input 'n' is a int"),
        (TokenBoxLayout(budget=10, counter=W), {"n": [1, 2]}, "input 'n' is a list"),
        (TokenBoxLayout(budget=10, counter=W, sections={"x": {"shrink": 1}}), {"y": "a"}, "no such keys"),
        (TokenBoxLayout(budget=10, counter=W, sections={"y": {"weight": 1}}), {"y": "a"}, "unknown options"),
        (TokenBoxLayout(budget=10, counter=W), ["not", "a", "dict"], "takes a dict of named inputs"),
    ],
)
def test_bad_inputs_raise(box: TokenBoxLayout, inputs: Any, message: str) -> None:
    """Unsupported values, unknown keys or options, and non-dict input raise SectionError with the fix."""
    with pytest.raises(SectionError, match=message):
        box.invoke(inputs)


@contextmanager
def core_layouts() -> Iterator[list[Layout | None]]:
    """Records every call of the core's TokenBox.layout while active: its Layout, or None when it raised."""
    calls: list[Layout | None] = []
    original = TokenBox.layout

    def counted(self: TokenBox, *args: Any, **kwargs: Any) -> Layout:
        calls.append(None)
        layout = original(self, *args, **kwargs)
        calls[-1] = layout
        return layout

    with mock.patch.object(TokenBox, "layout", counted):
        yield calls


def test_chat_overhead_is_counted_in_the_one_layout() -> None:
    """Placeholder messages are laid out at their chat cost: the prompt fits after one core layout."""
    template = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{q}")])
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=30, counter=W, template=template)
    with core_layouts() as calls:
        prompt = box.invoke({"history": [HumanMessage("a b c", id=f"m{i}") for i in range(3)], "q": "x"})
    assert MessageCounter(W).count(prompt.messages) <= 30 and len(prompt.messages) == 3 and len(calls) == 1


MARKED = [
    HumanMessage(f"h{i} " + "x " * 10, id=f"h{i}") if i % 2 == 0 else AIMessage(f"a{i} " + "y " * 10, id=f"a{i}")
    for i in range(8)
]
BRIEF = ChatPromptTemplate.from_messages([("system", "be brief"), MessagesPlaceholder("history"), ("human", "{q}")])


def test_marker_overhead_is_caught_by_the_safety_check() -> None:
    """A placeholder's omission marker costs a message's overhead the core cannot see: one re-layout fits it."""
    sections = {"history": {"shrink": 1, "omission_marker": True}}
    box = TokenBoxLayout(sections=sections, budget=72, counter=W, template=BRIEF, start_on=None)
    chat = MessageCounter(W)
    with core_layouts() as calls:
        prompt = box.invoke({"history": MARKED, "q": "why"})
    assert calls[0] is not None
    first = calls[0]["history"]
    assert isinstance(first.content, tuple)
    assert [it.id for it in first.content] == ["a5", "h6", "a7"]  # the core counted its marker as 8 words
    marker = SystemMessage(first.marker)
    rendered = BRIEF.invoke({"history": [marker, *MARKED[5:]], "q": "why"}).to_messages()
    assert chat.count(rendered) > 72  # but as a message it costs 4 + 1 + 8: the first prompt was over
    assert len(calls) == 2 and chat.count(prompt.messages) <= 72
    assert _ids_of(prompt.messages)[1:] == ["tokenbox-omitted-history", "h6", "a7", "why"]


def test_template_that_cannot_fit_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the rendered prompt still exceeds the budget after the allowed layouts, the error says how to fix it."""
    import tokenbox_langchain._layout as module

    monkeypatch.setattr(module, "_MAX_ATTEMPTS", 1)
    sections = {"history": {"shrink": 1, "omission_marker": True}}
    box = TokenBoxLayout(sections=sections, budget=72, counter=W, template=BRIEF, start_on=None)
    with pytest.raises(SectionError, match="still exceeds the budget after 1 layouts"):
        box.invoke({"history": MARKED, "q": "why"})


# ---------------------------------------------------------------- tool-call groups (review issue 1)

CALLS = [{"name": "lookup", "args": {"q": "x"}, "id": f"c{i}", "type": "tool_call"} for i in range(2)]
AGENT = [
    HumanMessage("h", id="h"),
    AIMessage("ai", tool_calls=CALLS, id="ai"),
    ToolMessage("t0", tool_call_id="c0", id="t0"),
    ToolMessage("t1", tool_call_id="c1", id="t1"),
    AIMessage("fin", id="fin"),
]
CHAT = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{q}")])


def _ids_of(messages: list[BaseMessage]) -> list[str]:
    return [m.id or str(m.content) for m in messages]


def _history_text(messages: list[BaseMessage], key: str = "history") -> str:
    """A fitted message list as the core counts it: buffer strings, the omission marker bare."""
    return "\n".join(str(m.content) if m.id == f"tokenbox-omitted-{key}" else get_buffer_string([m]) for m in messages)


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (28, ["fin", "q"]),  # before the fix: [t1, fin, q], an orphan result
        (30, ["fin", "q"]),  # before the fix: [t0, t1, fin, q], two orphan results
        (46, ["h", "ai", "t0", "t1", "fin", "q"]),  # 44 before tool-call arguments were counted as sent (issue 32)
    ],
)
def test_rendered_prompt_keeps_tool_calls_with_their_results(budget: int, expected: list[str]) -> None:
    """An AI tool call and all its results are one atomic group in the rendered chat prompt: never an orphan."""
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=budget, counter=W, template=CHAT)
    prompt = box.invoke({"history": AGENT, "q": "q"})
    assert _ids_of(prompt.messages) == expected
    assert sequence_problems(prompt.messages, start_on_human=False) == []  # [fin]: no human left to start on
    assert MessageCounter(W).count(prompt.messages) <= budget


@pytest.mark.parametrize("eviction", ["oldest", "newest"])
def test_fitted_history_never_splits_a_tool_group(eviction: str) -> None:
    """Without a template, at every budget, the call and its results (parallel, one after the other) stay or go
    together (interleaved calls, whose results stand apart from them, are what providers reject: issue 36 item 3;
    here in the order providers accept)."""
    calls = [{"name": "f", "args": {}, "id": f"k{i}", "type": "tool_call"} for i in range(2)]
    interleaved = [
        HumanMessage("go on", id="h"),
        AIMessage("first", tool_calls=calls[:1], id="a0"),
        AIMessage("second", tool_calls=calls[1:], id="a1"),
        ToolMessage("r0 r0", tool_call_id="k0", id="r0"),
        ToolMessage("r1 r1", tool_call_id="k1", id="r1"),
    ]
    in_order = [interleaved[i] for i in (0, 1, 3, 2, 4)]
    counter = get_counter(W)
    for history in (AGENT, in_order):
        full = counter.count(_history_text(history))
        for budget in range(full + 1):
            box = TokenBoxLayout(
                sections={"history": {"shrink": 1, "eviction": eviction}}, budget=budget, counter=W, start_on=None
            )
            out = box.invoke({"history": history})["history"]
            assert sequence_problems(out, start_on_human=False) == [], (budget, _ids_of(out))
            assert counter.count(_history_text(out)) <= budget
    # the review's repro: budget 12 used to return [t1, fin]
    out = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=12, counter=W).invoke({"history": AGENT})
    assert _ids_of(out["history"]) == ["fin"]


def test_a_tool_step_is_one_core_group() -> None:
    """The core sees the core tool_groups: the call and its results share one Item.group named after the call."""
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=4, counter=W)
    _, _, layout = box.fit({"history": AGENT})
    groups = {r.id: r.group for r in layout["history"].removed}
    assert tool_groups(neutral(AGENT)).members == {1: [1, 2, 3]}  # ai, t0, t1
    assert groups == {"h": None, "ai": "tools:ai", "t0": "tools:ai", "t1": "tools:ai"}  # fin (2 tokens) fits


# ---------------------------------------------------------------- start_on (review issue 2)


def test_history_starts_on_a_human_message_by_default() -> None:
    """The fitted history drops leading AI/tool messages (whole groups) until a human one, like TokenBoxMessages."""
    history = [AIMessage("a0", id="a0"), HumanMessage("h1", id="h1"), AIMessage("a1", id="a1")]
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=10, counter=W)
    assert _ids_of(box.invoke({"history": history})["history"]) == ["h1", "a1"]
    assert box.report({"history": history})["start_on_removed"] == {"history": ["a0"]}
    fitted = TokenBoxMessages(budget=30, counter=W, keep_last_human=False).invoke(history)
    assert _ids_of(fitted) == ["h1", "a1"]  # the same rule, the same result
    loose = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=10, counter=W, start_on=None)
    assert _ids_of(loose.invoke({"history": history})["history"]) == ["a0", "h1", "a1"]


def test_start_on_removes_whole_groups_and_keeps_leading_system_messages() -> None:
    """A leading tool step goes whole; leading system messages stay; ai start_on is honoured too."""
    history = [SystemMessage("rules", id="s"), *AGENT[1:4], HumanMessage("next", id="n"), AIMessage("ok", id="ok")]
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=100, counter=W)
    assert _ids_of(box.invoke({"history": history})["history"]) == ["s", "n", "ok"]
    on_ai = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=100, counter=W, start_on="ai")
    assert _ids_of(on_ai.invoke({"history": history})["history"]) == ["s", "ai", "t0", "t1", "n", "ok"]


def test_start_on_never_empties_an_agent_loop_nor_touches_a_critical_list() -> None:
    """No human message left: the history stays as fitted; a critical message list is never changed."""
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=100, counter=W)
    assert _ids_of(box.invoke({"history": AGENT[1:]})["history"]) == ["ai", "t0", "t1", "fin"]
    critical = TokenBoxLayout(budget=100, counter=W)
    history = [AIMessage("hello", id="a0"), HumanMessage("hi", id="h1")]
    assert critical.invoke({"history": history})["history"] == history


@settings(max_examples=30)
@given(
    seed=st.integers(0, 1_000),
    budget=st.integers(0, 300),
    eviction=st.sampled_from(["oldest", "newest"]),
    marker=st.booleans(),
    marker_type=st.sampled_from(["system", "human", "ai"]),
)
def test_fitted_histories_are_valid_and_counted_as_sent(
    seed: int, budget: int, eviction: str, marker: bool, marker_type: Any
) -> None:
    """Any agent transcript fits within budget as a valid sequence; what is sent is what the core counted (a
    moved human or ai marker changes the order, not the messages)."""
    history = agent_transcript(5, seed=seed, max_parallel=3)
    box = TokenBoxLayout(
        sections={"history": {"shrink": 1, "eviction": eviction, "omission_marker": marker}},
        budget=budget,
        counter=W,
        marker_type=marker_type,
    )
    fitted, _, layout = box.fit({"history": history})
    out = fitted["history"]
    assert sequence_problems(out) == []
    sent = _history_text(out)
    assert get_counter(W).count(sent) <= budget
    if not box.report({"history": history})["start_on_removed"]:
        if marker_type == "system":
            assert sent == layout["history"].text
        else:
            assert sorted(sent.split("\n")) == sorted(layout["history"].text.split("\n"))


@pytest.mark.parametrize(
    ("eviction", "marker_type", "expected"),
    [
        ("oldest", "system", ["tokenbox-omitted-history", "h4", "a5", "h6", "a7"]),
        ("oldest", "human", ["tokenbox-omitted-history", "h4", "a5", "h6", "a7"]),
        ("oldest", "ai", ["h4", "tokenbox-omitted-history", "a5", "h6", "a7"]),  # never opens the conversation
        ("newest", "system", ["tokenbox-omitted-history", "sys", "h0", "a1", "h2", "a3"]),  # leads the list
        ("newest", "human", ["sys", "tokenbox-omitted-history", "h0", "a1", "h2", "a3"]),  # never before a system
        ("newest", "ai", ["sys", "h0", "tokenbox-omitted-history", "a1", "h2", "a3"]),
    ],
)
def test_message_markers_keep_the_sequence_valid(eviction: str, marker_type: Any, expected: list[str]) -> None:
    """A message list's marker is placed as in TokenBoxMessages: never before a system message, never opening
    the conversation unless of a start_on type; the list stays valid and costs what the core counted."""
    history = [SystemMessage("be brief", id="sys"), *MARKED]
    sections = {"history": {"shrink": 1, "omission_marker": True, "eviction": eviction}}
    box = TokenBoxLayout(sections=sections, budget=60, counter=W, marker_type=marker_type)
    fitted, _, layout = box.fit({"history": history})
    assert [m.id for m in fitted["history"]] == expected
    assert sequence_problems(fitted["history"]) == []
    assert get_counter(W).count(_history_text(fitted["history"])) == get_counter(W).count(layout["history"].text)


def test_message_marker_pasted_as_text_is_not_moved() -> None:
    """In a string template the marker stays where the core counted it: the rendered text is the layout's."""
    history = [SystemMessage("be brief", id="sys"), *MARKED]
    sections = {"history": {"shrink": 1, "omission_marker": True}}
    template = PromptTemplate.from_template("History:\n{history}\nQ: {q}")
    box = TokenBoxLayout(sections=sections, budget=60, counter=W, marker_type="ai", template=template)
    fitted, prompt, layout = box.fit({"history": history, "q": "why"})
    assert fitted["history"][0].id == "tokenbox-omitted-history"
    assert prompt.to_string() == f"History:\n{layout['history'].text}\nQ: why"


# ---------------------------------------------------------------- omission markers (review issue 3)


def test_text_list_marker_is_part_of_the_fitted_value() -> None:
    """A text list's marker is its leading string: the joined value is exactly the text the core counted."""
    box = TokenBoxLayout(sections={"notes": {"shrink": 1, "omission_marker": True}}, budget=11, counter=W)
    fitted, _, layout = box.fit({"notes": ["a b c", "d e f", "g h i", "j k l"]})
    assert layout["notes"].text.startswith("[2 items omitted: notes-0, notes-1]")
    assert fitted["notes"] == [layout["notes"].marker, "g h i", "j k l"]
    assert "\n".join(fitted["notes"]) == layout["notes"].text


def test_document_marker_is_a_leading_document_naming_the_removed_ids() -> None:
    """Documents get a leading marker Document (removed ids in input order); a string template renders it."""
    options = {"shrink": 1, "omission_marker": True, "eviction": "lowest_score"}
    box = TokenBoxLayout(sections={"context": options}, budget=30, counter=W)
    fitted, _, layout = box.fit({"context": DOCS})
    marker, *kept = fitted["context"]
    assert marker.id == "tokenbox-omitted-context" and marker.page_content == layout["context"].marker
    assert marker.metadata == {"tokenbox_omitted": ["d2", "d3", "d4", "d5"]} and [d.id for d in kept] == ["d0", "d1"]
    assert "\n\n".join(d.page_content for d in fitted["context"]) == layout["context"].text
    template = PromptTemplate.from_template("Context:\n{context}\nQuestion: {q}")
    prompt = TokenBoxLayout(sections={"context": options}, budget=40, counter=W, template=template).invoke(
        {"context": DOCS, "q": "which"}
    )
    assert "items omitted: " in prompt.to_string() and get_counter(W).count(prompt.to_string()) <= 40


def test_single_document_removed_becomes_its_marker() -> None:
    """A removed single Document is replaced by its marker, which the core counted."""
    box = TokenBoxLayout(sections={"doc": {"shrink": 1, "omission_marker": "[{ids} left out]"}}, budget=8, counter=W)
    fitted, _, layout = box.fit({"doc": DOCS[0], "q": "question"})
    assert fitted["doc"].page_content == "[d0 left out]" == layout["doc"].text


def test_message_marker_is_a_message_in_the_rendered_prompt() -> None:
    """A message list's marker is a message of marker_type, sent in the chat prompt within budget."""
    history = MARKED
    template = BRIEF
    options = {"history": {"shrink": 1, "omission_marker": True}}
    box = TokenBoxLayout(sections=options, budget=62, counter=W, template=template)
    prompt = box.invoke({"history": history, "q": "why"})
    assert _ids_of(prompt.messages)[1:] == ["tokenbox-omitted-history", "h6", "a7", "why"]
    assert isinstance(prompt.messages[1], SystemMessage)
    assert prompt.messages[1].content == "[6 items omitted: h0, a1, h2, a3, h4, a5]"
    assert MessageCounter(W).count(prompt.messages) <= 62 and sequence_problems(prompt.messages) == []
    human = TokenBoxLayout(sections=options, budget=40, counter=W, marker_type="human").invoke({"history": history})
    assert isinstance(human["history"][0], HumanMessage) and human["history"][0].id == "tokenbox-omitted-history"
    # the marker names the layout's removals; a message the start_on fix-up drops afterwards is in the report
    tight = TokenBoxLayout(sections=options, budget=72, counter=W, template=template)
    prompt = tight.invoke({"history": history, "q": "why"})
    assert _ids_of(prompt.messages)[1:] == ["tokenbox-omitted-history", "h6", "a7", "why"]
    assert prompt.messages[1].content == "[5 items omitted: h0, a1, h2, a3, h4]"
    assert tight.report({"history": history, "q": "why"})["start_on_removed"] == {"history": ["a5"]}


def test_message_marker_in_a_string_template_is_rendered_as_counted() -> None:
    """A message list pasted into a string template renders its marker bare, exactly as the core counted it."""
    history = [
        HumanMessage(f"h{i} x x", id=f"h{i}") if i % 2 == 0 else AIMessage(f"a{i} y", id=f"a{i}") for i in range(6)
    ]
    template = PromptTemplate.from_template("History:\n{history}\nQ: {q}")
    box = TokenBoxLayout(
        sections={"history": {"shrink": 1, "omission_marker": True}}, budget=22, counter=W, template=template
    )
    _, prompt, layout = box.fit({"history": history, "q": "why"})
    assert prompt.to_string() == f"History:\n{layout['history'].text}\nQ: why"
    assert layout["history"].text.startswith("[2 items omitted: h0, a1]\n")


# ---------------------------------------------------------------- partial messages, reports (review issue 4)


def test_partial_message_lists_are_refused() -> None:
    """partial=True on messages raises: a cut buffer string would be sent as the whole message, over budget."""
    box = TokenBoxLayout(sections={"history": {"shrink": 1, "partial": True}}, budget=8, counter=W)
    with pytest.raises(SectionError, match="holds messages: a cut buffer string is no valid message"):
        box.invoke({"history": HISTORY})


@pytest.mark.parametrize("counter", [W, "approximate"])
def test_messages_report_shows_the_effective_limit(counter: str) -> None:
    """FitResult.report() gives the budget's max, the output reserve and the effective limit actually used."""
    budget = ContextBudget(max_tokens=600, output_reserve=200, reserved_slots={"tools": 50})
    report = TokenBoxMessages(budget=budget, counter=counter).fit([HumanMessage("hello there")]).report()
    assert (report["max_tokens"], report["output_reserve"], report["reserved_tokens"]) == (600, 200, 50)
    assert report["effective_max_tokens"] == 350


def test_layout_report_shows_the_effective_limit() -> None:
    """TokenBoxLayout's report gives the budget's max, reserve and effective limit, with and without a template."""
    budget = ContextBudget(max_tokens=600, output_reserve=200)
    report = TokenBoxLayout(budget=budget, counter=W).report({"q": "hello"})
    assert (report["max_tokens"], report["output_reserve"], report["effective_max_tokens"]) == (600, 200, 400)
    templated = TokenBoxLayout(budget=budget, counter=W, template=CHAT).report({"history": HISTORY, "q": "x"})
    assert templated["effective_max_tokens"] == 400 and templated["template_tokens"] > 0
    assert templated["prompt_tokens"] == MessageCounter(W).count([*HISTORY, HumanMessage("x")])


# ---------------------------------------------------------------- exact placeholder sizes (review: over-reservation)


def _units(history: list[BaseMessage]) -> list[list[int]]:
    """The history's indices in atomic units (a tool call with its results), in order; groups are contiguous."""
    groups = tool_groups(neutral(history))
    units: list[list[int]] = []
    i = 0
    while i < len(history):
        unit = groups.unit(i)
        assert unit[0] == i, "the brute force below needs contiguous tool groups"
        units.append(unit)
        i = unit[-1] + 1
    return units


def _best_prompt(
    template: ChatPromptTemplate,
    inputs: dict[str, Any],
    budget: int,
    counter: MessageCounter,
    *,
    eviction: str = "oldest",
    start_on_human: bool = True,
) -> list[BaseMessage] | None:
    """By brute force: the fullest prompt within ``budget`` whose history keeps whole units, newest (oldest) first,
    and is a valid sequence; None when not even the empty history fits."""
    history = inputs["history"]
    units = _units(history)
    best = None
    for k in range(len(units) + 1):
        chosen = units[len(units) - k :] if eviction == "oldest" else units[:k]
        kept = [history[i] for unit in chosen for i in unit]
        if sequence_problems(kept, start_on_human=start_on_human):
            continue
        messages = template.invoke({**inputs, "history": kept}).to_messages()
        if counter.count(messages) <= budget:
            best = messages  # longer histories cost more: the last one that fits is the fullest
    return best


def test_tool_transcript_fits_at_the_smallest_budget_that_holds_the_prompt() -> None:
    """A tool transcript in a chat placeholder fits wherever its prompt does: budget 12 raised before, 14 did not."""
    chat = MessageCounter(W)
    inputs: dict[str, Any] = {"history": AGENT, "q": "q"}
    smallest = chat.count(CHAT.invoke({"history": [], "q": "q"}).to_messages())  # the prompt without history
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=12, counter=W, template=CHAT)
    assert _ids_of(box.invoke(inputs).messages) == ["q"]  # before: ContextCriticalOverflow at 12
    at_smallest = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=smallest, counter=W, template=CHAT)
    assert at_smallest.invoke(inputs).messages == CHAT.invoke({"history": [], "q": "q"}).to_messages()
    full = chat.count(CHAT.invoke(inputs).to_messages())
    for budget in range(full + 2):
        box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=budget, counter=W, template=CHAT)
        best = _best_prompt(CHAT, inputs, budget, chat)
        with core_layouts() as calls:
            if best is None:
                assert budget < smallest
                with pytest.raises(ContextCriticalOverflow):
                    box.invoke(inputs)
            else:
                assert box.invoke(inputs).messages == best, budget
        assert len(calls) == 1


def test_short_messages_fill_the_budget() -> None:
    """8 short messages at budget 40: the prompt is as full as whole messages allow (before: 16 tokens, no history)."""
    history = [HumanMessage("w w w", id=f"h{i}") if i % 2 == 0 else AIMessage("v v v", id=f"a{i}") for i in range(8)]
    chat = MessageCounter(W)
    inputs: dict[str, Any] = {"history": history, "q": "why"}
    loose = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=40, counter=W, template=BRIEF, start_on=None)
    prompt = loose.invoke(inputs)
    assert chat.count(prompt.messages) == 40 and _ids_of(prompt.messages)[1:-1] == ["a5", "h6", "a7"]
    assert prompt.messages == _best_prompt(BRIEF, inputs, 40, chat, start_on_human=False)
    on_human = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=40, counter=W, template=BRIEF)
    prompt = on_human.invoke(inputs)  # a5 cannot open the history: h6, a7 is the fullest valid one
    assert _ids_of(prompt.messages)[1:-1] == ["h6", "a7"] and prompt.messages == _best_prompt(BRIEF, inputs, 40, chat)


@pytest.mark.parametrize("counter", ["gpt-4o", len])
def test_other_counters_size_placeholder_messages_exactly(counter: Any) -> None:
    """Real tokens, or a callable over text (as a core counter): one layout, the fullest prompt at every budget,
    short at most by the separator the core counts after the question string (never rendered)."""
    chat = MessageCounter(get_counter(counter))
    history = agent_transcript(3, seed=7, max_parallel=2)
    inputs: dict[str, Any] = {"history": history, "q": "what next?"}
    text = get_counter(counter)
    slack = text.count("what next?\n\n") - text.count("what next?")  # 0 for gpt-4o, 2 for len
    full = chat.count(CHAT.invoke(inputs).to_messages())
    for budget in range(0, full + 2, max(1, full // 40)):
        box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=budget, counter=counter, template=CHAT)
        allowed = [_best_prompt(CHAT, inputs, b, chat) for b in range(budget - slack, budget + 1)]
        with core_layouts() as calls:
            try:
                prompt = box.invoke(inputs)
            except ContextCriticalOverflow:
                assert allowed[0] is None, budget
            else:
                assert prompt.messages in allowed, budget
                assert chat.count(prompt.messages) <= budget
        assert len(calls) == 1


@settings(max_examples=40)
@given(
    seed=st.integers(0, 10_000),
    turns=st.integers(1, 6),
    budget=st.integers(0, 300),
    eviction=st.sampled_from(["oldest", "newest"]),
    start_on=st.sampled_from([None, "human"]),
)
def test_chat_placeholder_prompt_is_exact_in_one_layout(
    seed: int, turns: int, budget: int, eviction: str, start_on: str | None
) -> None:
    """Random transcripts and budgets: one core layout, never over the budget, the fullest valid whole-unit prompt,
    and what is sent costs exactly what was laid out."""
    chat = MessageCounter(W)
    inputs: dict[str, Any] = {"history": agent_transcript(turns, seed=seed, max_parallel=3), "q": "why"}
    box = TokenBoxLayout(
        sections={"history": {"shrink": 1, "eviction": eviction}},
        budget=budget,
        counter=W,
        template=BRIEF,
        start_on=start_on,
    )
    best = _best_prompt(BRIEF, inputs, budget, chat, eviction=eviction, start_on_human=start_on is not None)
    with core_layouts() as calls:
        try:
            report = box.report(inputs)
            _, prompt, layout = box.fit(inputs)
        except ContextCriticalOverflow:
            assert best is None and len(calls) == 1
            return
    assert len(calls) == 2  # one layout per call of report() and of fit()
    assert chat.count(prompt.messages) <= budget and prompt.messages == best
    history = prompt.messages[1:-1]  # between BRIEF's system message and its question
    problems = sequence_problems(prompt.messages, start_on_human=any(m.type == "human" for m in history))
    assert problems == [] or start_on is None  # no human kept: the history is not reopened (documented)
    if not report["start_on_removed"]:
        assert report["prompt_tokens"] == report["template_tokens"] + layout.total_tokens


@settings(max_examples=30)
@given(seed=st.integers(0, 10_000), turns=st.integers(1, 6), budget=st.integers(0, 300))
def test_placeholder_markers_never_overflow(seed: int, turns: int, budget: int) -> None:
    """With an omission marker in a placeholder the prompt stays within budget; only an over-budget one is redone."""
    chat = MessageCounter(W)
    inputs: dict[str, Any] = {"history": agent_transcript(turns, seed=seed, max_parallel=3), "q": "why"}
    sections = {"history": {"shrink": 1, "omission_marker": True}}
    box = TokenBoxLayout(sections=sections, budget=budget, counter=W, template=BRIEF)
    with core_layouts() as calls:
        try:
            prompt = box.invoke(inputs)
        except ContextCriticalOverflow:
            assert chat.count(BRIEF.invoke({**inputs, "history": []}).to_messages()) > budget
            return
    # a marker may open the history when no human message is left (start_on never empties an agent loop)
    assert chat.count(prompt.messages) <= budget and sequence_problems(prompt.messages, start_on_human=False) == []
    assert 1 <= len(calls) <= 3
    if len(calls) > 1:  # the first layout was redone only because its prompt, marker included, was over budget
        assert calls[0] is not None
        first = calls[0]["history"]
        assert first.marker and first.removed


def test_text_lenses_on_messages_are_refused() -> None:
    """A text lens on a message list raises (the rewritten text is not what is sent); list lenses are accepted."""
    box = TokenBoxLayout(sections={"history": {"shrink": 1, "strategy": ["whitespace"]}}, budget=8, counter=W)
    with pytest.raises(SectionError, match=r"sets text lenses \['whitespace'\], but 'history' holds messages"):
        box.invoke({"history": HISTORY})
    lens = TokenBoxLayout(sections={"history": {"shrink": 1, "strategy": "drop_oldest"}}, budget=8, counter=W)
    assert _ids_of(lens.invoke({"history": HISTORY})["history"]) == ["recent question"]
