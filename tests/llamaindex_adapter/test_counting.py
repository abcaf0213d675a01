"""Which counter the adapter uses: explicit, Settings.tokenizer, model name, default; resolved per call."""

from __future__ import annotations

from typing import Any

import llama_index.core
from llama_index.core import Settings
from llama_index.core.utils import get_tokenizer

from tokenbox_core import get_counter
from tokenbox_llamaindex import TokenBoxMemory, TokenBoxNodePostprocessor
from tokenbox_llamaindex._counting import resolve_counter, user_tokenizer


def words(text: str) -> list[Any]:
    """A LlamaIndex-style tokenizer: one id per whitespace-separated word."""
    return text.split()


def letters(text: str) -> list[Any]:
    """A LlamaIndex-style tokenizer: one id per character."""
    return list(text)


def test_default_is_cl100k_like_llama_index() -> None:
    """With nothing set, the counter is cl100k_base, the encoding of LlamaIndex's own default tokenizer."""
    assert resolve_counter().name == "cl100k_base"


def test_llama_index_default_tokenizer_is_not_a_user_choice() -> None:
    """The tokenizer LlamaIndex installs on first use is recognised as the default, not as the user's."""
    default = get_tokenizer()  # installs partial(cl100k_base.encode, allowed_special="all")
    assert llama_index.core.global_tokenizer is default
    assert user_tokenizer() is None
    assert resolve_counter(model_name="gpt-4o").name == "o200k_base"


def test_settings_tokenizer_wins_over_model_name() -> None:
    """A tokenizer the user set with Settings.tokenizer is used, even when a model name is known."""
    Settings.tokenizer = words
    counter = resolve_counter(model_name="gpt-4o")
    assert counter.count("one two three") == 3


def test_settings_tokenizer_is_resolved_at_call_time() -> None:
    """A component built before Settings.tokenizer changes uses the new tokenizer on its next call."""
    memory = TokenBoxMemory.from_defaults(token_limit=100)
    assert memory.resolve_counter().name == "cl100k_base"
    Settings.tokenizer = letters
    assert memory.resolve_counter().count("abcd") == 4
    Settings.tokenizer = words
    assert memory.resolve_counter().count("abcd efgh") == 2


def test_explicit_counter_wins_over_settings() -> None:
    """A counter given to the component beats Settings.tokenizer."""
    Settings.tokenizer = letters
    post = TokenBoxNodePostprocessor(token_budget=10, counter="whitespace")
    assert post.resolve_counter().count("abcd efgh") == 2


def test_named_counters_and_counter_objects_pass_through() -> None:
    """A counter name or a TokenCounter is used as given."""
    whitespace = get_counter("whitespace")
    assert resolve_counter("whitespace") is whitespace
    assert resolve_counter(whitespace) is whitespace
    assert resolve_counter(model_name="unknown").name == "cl100k_base"
