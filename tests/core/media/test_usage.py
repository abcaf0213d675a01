"""read_usage: the usage shapes the providers' SDKs and the frameworks return, read into one ReportedUsage."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tokenbox_core.errors import UsageReportError
from tokenbox_core.models import ReportedUsage, read_usage


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (1234, (1234, None, None, "number")),
        ({"prompt_tokens": 2006, "prompt_tokens_details": {"cached_tokens": 1920}}, (2006, 1920, None, "openai-chat")),
        ({"prompt_tokens": 3000, "cached_tokens": 2048}, (3000, 2048, None, "openai-chat")),
        (
            {"input_tokens": 3207, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 3207}},
            (3207, 0, 3207, "openai-responses"),
        ),
        (
            {"input_tokens": 50, "cache_read_input_tokens": 10000, "cache_creation_input_tokens": 5000},
            (15050, 10000, 5000, "anthropic"),
        ),
        (
            {
                "input_tokens": 15050,
                "output_tokens": 9,
                "input_token_details": {"cache_read": 10000, "cache_creation": 5000},
            },
            (15050, 10000, 5000, "langchain"),
        ),
        (
            {
                "input_tokens": 900,
                "input_token_details": {"cache_read": 0, "cache_creation": 0, "ephemeral_1h_input_tokens": 850},
            },
            (900, 0, 850, "langchain"),
        ),
        ({"prompt_token_count": 812, "cached_content_token_count": 512}, (812, 512, None, "gemini")),
        ({"promptTokenCount": 812}, (812, None, None, "gemini")),
        ({"id": "chatcmpl-1", "usage": {"prompt_tokens": 7}}, (7, None, None, "openai-chat")),
        ({"raw": {"usage": {"input_tokens": 3, "cache_read_input_tokens": 0}}}, (3, 0, 0, "anthropic")),
    ],
)
def test_shapes(usage: object, expected: tuple) -> None:
    """Each documented shape gives the whole prompt size, cached and written tokens (None where not carried)."""
    got = read_usage(usage)
    assert (got.input_tokens, got.cached_tokens, got.written_tokens, got.shape) == expected


def test_anthropic_diagnostics() -> None:
    """[ant-sdk] diagnostics.cache_miss_reason: its type and the approximate tokens missed; alone or beside usage."""
    alone = read_usage({"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 4200}})
    assert (alone.miss_reason, alone.missed_tokens, alone.input_tokens, alone.shape) == (
        "system_changed",
        4200,
        None,
        "diagnostics",
    )
    both = read_usage(
        {"usage": {"input_tokens": 10, "cache_read_input_tokens": 0}, "diagnostics": {"cache_miss_reason": None}}
    )
    assert both.miss_reason is None and both.input_tokens == 10
    found = read_usage({"usage": {"prompt_tokens": 5}, "diagnostics": {"cache_miss_reason": {"type": "unavailable"}}})
    assert found.miss_reason == "unavailable" and found.missed_tokens is None


def test_objects_with_attributes() -> None:
    """Framework objects are read by their usage attributes (an AIMessage's usage_metadata, a ChatResponse's raw)."""
    message = SimpleNamespace(usage_metadata={"input_tokens": 40, "output_tokens": 2})
    assert read_usage(message).input_tokens == 40
    response = SimpleNamespace(raw=SimpleNamespace(usage=SimpleNamespace(prompt_tokens=12, other="x")))
    assert read_usage(response).input_tokens == 12
    response = SimpleNamespace(raw={"usage": {"prompt_tokens": 12}})
    assert read_usage(response).input_tokens == 12
    with pytest.raises(UsageReportError, match="cannot read usage from SimpleNamespace"):
        read_usage(SimpleNamespace(text="no usage here"))
    assert read_usage(ReportedUsage(5)) == ReportedUsage(5)


def test_sdk_objects() -> None:
    """The anthropic and openai SDKs' own usage objects, and LangChain's AIMessage, are read as they come."""
    anthropic = pytest.importorskip("anthropic")
    usage = anthropic.types.Usage(
        input_tokens=21, output_tokens=393, cache_creation_input_tokens=188086, cache_read_input_tokens=0
    )
    assert read_usage(usage).input_tokens == 188107
    openai = pytest.importorskip("openai")
    chat = openai.types.CompletionUsage(
        prompt_tokens=2006, completion_tokens=300, total_tokens=2306, prompt_tokens_details={"cached_tokens": 1920}
    )
    assert read_usage(chat).cached_tokens == 1920
    messages = pytest.importorskip("langchain_core.messages")
    ai = messages.AIMessage(
        "hi", usage_metadata={"input_tokens": 30, "output_tokens": 1, "total_tokens": 31, "input_token_details": {}}
    )
    assert read_usage(ai).input_tokens == 30


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        (True, "must be a number of input tokens or a usage object, got True"),
        (-3, "input tokens must be a whole number of tokens >= 0, got -3"),
        ("12", "cannot read usage from str"),
        ({"total": 3}, r"no token usage in \['total'\]"),
        ({"prompt_tokens": 1.5}, "prompt_tokens must be a whole number of tokens >= 0, got 1.5"),
        ({"cache_miss_reason": {"tokens": 3}}, "cache_miss_reason needs a 'type'"),
    ],
)
def test_errors(usage: object, message: str) -> None:
    """Usage that cannot be read is refused with what was found and what is expected."""
    with pytest.raises(UsageReportError, match=message):
        read_usage(usage)
