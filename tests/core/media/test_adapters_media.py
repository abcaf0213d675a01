"""Media through the adapters: LangChain messages with image blocks are costed by the model's rules (issue 14 §2)."""

from __future__ import annotations

import base64
import io

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from tokenbox_core import count_message_tokens
from tokenbox_langchain import trim_messages
from tokenbox_langchain._counting import MessageCounter

PIL = pytest.importorskip("PIL.Image")


def _png_b64(size: tuple[int, int]) -> str:
    buf = io.BytesIO()
    img = PIL.new("RGB", size, (255, 255, 255))
    for x in range(0, size[0], 7):  # noisy enough that the base64 text is long
        img.paste(((x * 37) % 256, (x * 91) % 256, 40), (x, 0, x + 3, size[1]))
    img.save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode()


def test_message_counter_costs_v1_and_openai_image_blocks_by_rule() -> None:
    """A 1024x1024 image is 765 tokens on gpt-4o, in either block shape — not the size of its base64 text."""
    data = _png_b64((1024, 1024))
    text = HumanMessage("Describe.")
    v1 = HumanMessage(
        [{"type": "text", "text": "Describe."}, {"type": "image", "base64": data, "mime_type": "image/png"}]
    )
    oai = HumanMessage(
        [
            {"type": "text", "text": "Describe."},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}", "detail": "high"}},
        ]
    )
    counter = MessageCounter("gpt-4o")
    assert counter.size(v1) == counter.size(oai) == counter.size(text) + 765
    as_text = count_message_tokens([{"role": "user", "content": f"data:image/png;base64,{data}"}], "gpt-4o")
    assert as_text > 4 * 765  # what the old JSON-text counting charged


def test_trim_messages_drops_the_screenshot_turn_by_its_real_cost() -> None:
    """trim_messages keeps the image turn when its 765 tokens fit, and drops it (whole) when they do not."""
    data = _png_b64((1024, 1024))
    history = [
        SystemMessage("You are a UI agent."),
        HumanMessage(
            [{"type": "text", "text": "Screen:"}, {"type": "image", "base64": data, "mime_type": "image/png"}]
        ),
        AIMessage("The save button is disabled."),
        HumanMessage("Why?"),
    ]
    roomy = trim_messages(history, max_tokens=900, token_counter="gpt-4o", include_system=True)
    assert len(roomy) == 4
    tight = trim_messages(history, max_tokens=400, token_counter="gpt-4o", include_system=True)
    assert all(not isinstance(m.content, list) for m in tight) and tight[-1].content == "Why?"


def test_llamaindex_image_blocks_reach_the_core_with_their_data() -> None:
    """The LlamaIndex adapter's neutral messages carry ImageBlock data: by the model's rule they cost 765 on gpt-4o
    (ChatCounter with or without media_tokens); media_tokens (TokenBoxMemory's default, 256) is charged only for a
    block no rule can cost (a document)."""
    from llama_index.core.base.llms.types import ChatMessage, DocumentBlock, ImageBlock, TextBlock

    from tokenbox_core.chat._messages import ChatCounter
    from tokenbox_llamaindex._messages import neutral

    data = base64.b64decode(_png_b64((1024, 1024)))
    text_only = ChatMessage(role="user", blocks=[TextBlock(text="Describe.")])
    with_image = ChatMessage(role="user", blocks=[TextBlock(text="Describe."), ImageBlock(image=data, detail="high")])
    pdf = DocumentBlock(data=b"%PDF-1.4", document_mimetype="application/pdf")
    with_doc = ChatMessage(role="user", blocks=[TextBlock(text="Describe."), pdf])
    messages = neutral([text_only, with_image, with_doc])
    by_rule = ChatCounter.of("gpt-4o")
    assert by_rule.size(messages[1]) == by_rule.size(messages[0]) + 765
    flat = ChatCounter.of("gpt-4o", media_tokens=256)
    base, image, doc = (flat.size(m) for m in messages)
    assert image == base + 765  # data: the model's rule, whatever media_tokens says
    assert doc == base + 256  # no published rule for a PDF block: the flat charge
