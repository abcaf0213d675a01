"""TokenBoxLayout: named prompt parts laid out together, fitted values or a rendered template."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompt_values import ChatPromptValue, StringPromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from tokenbox_core import SectionError, get_counter
from tokenbox_langchain import LAYOUT_EVENT, TokenBoxLayout
from tokenbox_langchain.counting import MessageCounter

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
        | RunnableLambda(lambda p: seen.append(p) or p)
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


def test_chat_overhead_is_reserved_in_a_new_layout() -> None:
    """Chat overhead the text layout cannot see is re-counted and reserved: the prompt fits."""
    template = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{q}")])
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=30, counter=W, template=template)
    prompt = box.invoke({"history": [HumanMessage("a b c", id=f"m{i}") for i in range(3)], "q": "x"})
    assert MessageCounter(W).count(prompt.messages) <= 30 and len(prompt.messages) == 3


def test_template_that_cannot_fit_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the rendered prompt still exceeds the budget after the allowed layouts, the error says how to fix it."""
    import tokenbox_langchain.layout as module

    monkeypatch.setattr(module, "_MAX_ATTEMPTS", 1)
    template = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{q}")])
    box = TokenBoxLayout(sections={"history": {"shrink": 1}}, budget=30, counter=W, template=template)
    with pytest.raises(SectionError, match="still exceeds the budget after 1 layouts"):
        box.invoke({"history": [HumanMessage("a b c", id=f"m{i}") for i in range(3)], "q": "x"})
