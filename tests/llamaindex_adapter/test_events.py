"""TokenBox components report every layout to LlamaIndex's instrumentation dispatcher (issue 10 item 25)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms import ChatMessage
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import NodeWithScore, TextNode

from tokenbox_llamaindex import TokenBoxMemory, TokenBoxNodePostprocessor, TokenBoxPromptHelper
from tokenbox_llamaindex._events import TokenBoxLayoutEvent


class Collect(BaseEventHandler):
    events: list[Any] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, TokenBoxLayoutEvent):
            self.events.append(event)


@pytest.fixture
def collected() -> Iterator[list[TokenBoxLayoutEvent]]:
    root = get_dispatcher()
    handler = Collect(events=[])
    root.add_event_handler(handler)
    try:
        yield handler.events
    finally:
        root.event_handlers.remove(handler)


def test_postprocessor_helper_and_memory_emit_their_layouts(collected: list[TokenBoxLayoutEvent]) -> None:
    nodes = [NodeWithScore(node=TextNode(text="alpha " * 10), score=s) for s in (0.9, 0.1)]
    post = TokenBoxNodePostprocessor(budget=15, counter="whitespace")
    post.postprocess_nodes(nodes)
    helper = TokenBoxPromptHelper(context_window=60, num_output=10, counter="whitespace")
    helper.truncate(PromptTemplate("{context_str}"), ["beta " * 10] * 5)
    memory = TokenBoxMemory.from_defaults(token_limit=30, counter="whitespace")
    memory.set([ChatMessage(role="user", content="gamma " * 20), ChatMessage(role="user", content="last")])
    memory.get()
    assert [(e.component, e.operation) for e in collected] == [
        ("TokenBoxNodePostprocessor", "postprocess"),
        ("TokenBoxPromptHelper", "truncate"),
        ("TokenBoxMemory", "get"),
    ]
    first, second, third = collected
    assert (first.kept, first.removed, first.budget) == (1, 1, 15)
    assert first.layout is post.last_layout and first.fingerprint == post.last_layout.fingerprint
    assert second.layout is helper.last_layout
    assert (third.kept, third.removed, third.total_tokens) == (1, 1, memory.last_total_tokens)
