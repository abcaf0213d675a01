"""EndpointCounter: the provider's count endpoint through a client the user passes, cached by content (fake clients,
no network)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tokenbox_core import get_counter
from tokenbox_core.errors import CounterError
from tokenbox_core.models import EndpointCounter


class FakeAnthropic:
    """messages.count_tokens as the anthropic SDK has it: a user turn costs its words plus 7 framing tokens."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.calls: list[dict] = []
        self.fail = fail
        self.messages = SimpleNamespace(count_tokens=self._count)

    def _count(self, *, model: str, messages: list[dict]) -> SimpleNamespace:
        self.calls.append({"model": model, "messages": messages})
        if self.fail:
            raise self.fail
        return SimpleNamespace(input_tokens=len(messages[0]["content"].split()) + 7)


class FakeGenAI:
    """models.count_tokens as google-genai has it."""

    def __init__(self) -> None:
        self.calls = 0
        self.models = SimpleNamespace(count_tokens=self._count)

    def _count(self, *, model: str, contents: str) -> SimpleNamespace:
        self.calls += 1
        return SimpleNamespace(total_tokens=len(contents))


def test_anthropic_counts_once_per_text() -> None:
    """A text goes to the endpoint once, as one user message; later counts come from the counter's own cache."""
    client = FakeAnthropic()
    counter = EndpointCounter(client, "claude-sonnet-4-5")
    assert counter.provider == "anthropic" and counter.name == "endpoint:anthropic:claude-sonnet-4-5"
    assert counter.count("one two three") == 10
    assert counter.count("one two three") == 10
    assert len(client.calls) == 1 == counter.calls
    assert client.calls[0] == {
        "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": "one two three"}],
    }
    assert counter.count("") == 0 and len(client.calls) == 1  # the endpoints refuse empty content
    assert counter.profile is not None and counter.profile.name == "claude-sonnet-4-5"


def test_gemini_client_and_truncation() -> None:
    """A google-genai client is recognised; truncation keeps the longest cut within the limit."""
    client = FakeGenAI()
    counter = get_counter(EndpointCounter(client, "gemini-2.5-flash"))  # usable wherever a counter is
    text = "abcdefghij" * 10
    cut = counter.truncate(text, 37, keep="tail")
    assert cut == text[-37:] and counter.count(cut) == 37
    assert counter.truncate(text, 500) == text


def test_the_cache_is_bounded_in_bytes() -> None:
    """The cache never holds more than max_cache_bytes; the least recently used count leaves first."""
    client = FakeGenAI()
    counter = EndpointCounter(client, "gemini-2.5-flash", max_cache_bytes=3 * 104)
    for text in ("a", "bb", "ccc", "a", "dddd"):
        counter.count(text)
    assert counter.cache_bytes <= 3 * 104 and client.calls == 4  # "a" was still cached when asked again
    counter.count("bb")  # evicted by "dddd": counted again
    assert client.calls == 5
    unbounded = EndpointCounter(FakeGenAI(), "gemini-2.5-flash", max_cache_bytes=0)
    unbounded.count("x")
    unbounded.count("x")
    assert unbounded.calls == 2 and unbounded.cache_bytes == 0


def test_errors_name_the_provider_and_the_fix() -> None:
    """SDK failures become CounterError; unknown clients and bad arguments fail at construction."""
    counter = EndpointCounter(FakeAnthropic(fail=RuntimeError("401 invalid x-api-key")), "claude-haiku-4-5")
    with pytest.raises(CounterError, match=r"anthropic count endpoint failed for 'claude-haiku-4-5' \(RuntimeError"):
        counter.count("hello")
    with pytest.raises(CounterError, match="has neither messages.count_tokens"):
        EndpointCounter(object(), "claude-haiku-4-5")
    with pytest.raises(CounterError, match="max_cache_bytes must be an integer >= 0"):
        EndpointCounter(FakeGenAI(), "gemini-2.5-pro", max_cache_bytes=-1)
    with pytest.raises(CounterError, match="provider must be 'anthropic' or 'gemini'"):
        EndpointCounter(FakeGenAI(), "gemini-2.5-pro", provider="openai")  # type: ignore[arg-type]
    broken = FakeGenAI()
    broken.models = SimpleNamespace(count_tokens=lambda **_: SimpleNamespace(total_tokens=None))
    with pytest.raises(CounterError, match="returned None for 'gemini-2.5-pro', not a count"):
        EndpointCounter(broken, "gemini-2.5-pro").count("x")
