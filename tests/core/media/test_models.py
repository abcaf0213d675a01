"""Model profiles: windows, snapshot resolution, stated fallbacks, counting per family (issue 14 §1, issue 10 #18)."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import (
    MODEL_CONTEXT_WINDOWS,
    BudgetError,
    TokenBudgetCalculator,
    TokenizerUnavailable,
    get_counter,
    register_model,
)
from tokenbox_core.errors import TokenBoxWarning, UnknownModelWarning
from tokenbox_core.models import ModelProfile, find_model_profile, get_model_profile
from tokenbox_core.models._counting import HFTokenizerCounter, MarginApproximateCounter
from tokenbox_core.models._frameworks import profile_from_object
from tokenbox_core.models._registry import builtin_profiles, fallback_message, normalise_model_name


def _fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4.1", 1_047_576),
        ("o3-mini", 200_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("openai/gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4-0613", 8_192),
        ("gpt-5", 400_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", 200_000),
        ("gemini-2.0-flash-001", 1_048_576),
        ("models/gemini-2.5-flash", 1_048_576),
        ("meta-llama/Llama-3.1-8B-Instruct", 128_000),
        ("llama3.1:8b", 128_000),
        ("Qwen/Qwen2.5-72B-Instruct", 131_072),
        ("deepseek-chat", 64_000),
        ("mistral-large-2411", 131_000),
    ],
)
def test_published_windows_and_dated_snapshots(model: str, window: int) -> None:
    """gpt-4.1, o3-mini, gpt-4o-2024-08-06 and the other families get their published windows, not 8,192."""
    assert MODEL_CONTEXT_WINDOWS[model] == window
    budget = TokenBudgetCalculator().calculate(model, [])
    assert budget.context_window == window
    assert budget.window_source == "registry"
    assert model in MODEL_CONTEXT_WINDOWS


def test_snapshot_names_normalise_to_their_family() -> None:
    """Provider prefixes, version tails and date suffixes are stripped; gpt-4o never resolves to gpt-4."""
    assert normalise_model_name("openai/gpt-4o-2024-08-06") == "gpt-4o"
    assert normalise_model_name("gemini-2.0-flash-001") == "gemini-2.0-flash"
    assert find_model_profile("gpt-4o-search-preview").name == "gpt-4o"  # family prefix
    assert find_model_profile("gpt-4.1-mini-2025-04-14").name == "gpt-4.1-mini"
    assert find_model_profile("gpt4o") is None


def test_unknown_model_falls_back_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """An unknown model keeps the seed's fallback but TokenBudget and a 'tokenbox' warning say so."""
    name = _fresh("acme-unknown")
    with caplog.at_level(logging.WARNING, logger="tokenbox"), pytest.warns(UnknownModelWarning, match=name):
        budget = TokenBudgetCalculator().calculate(name, [{"role": "user", "content": "Hello world"}])
    assert budget.context_window == 8_192
    assert budget.window_source == "fallback"
    assert budget.counting == "exact (cl100k_base)"
    assert name in budget.note and "register_model" in budget.note
    warnings = [r for r in caplog.records if r.name == "tokenbox" and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert name in warnings[0].getMessage() and "register_model" in warnings[0].getMessage()


def test_typo_warning_suggests_the_family() -> None:
    """'gpt4o' is not guessed into gpt-4o, but the warning (logged once per name) suggests it."""
    assert get_model_profile("gpt4o", warn=False).is_fallback
    assert "Did you mean 'gpt-4o'?" in fallback_message("gpt4o")


def test_misspelt_model_name_is_a_python_warning_with_a_suggestion() -> None:
    """`get_counter("gtp-4o")` still counts (cl100k_base) but warns with UnknownModelWarning and 'gpt-4o'."""
    with pytest.warns(UnknownModelWarning, match="unknown model 'gtp-4o'.*Did you mean 'gpt-4o'"):
        counter = get_counter("gtp-4o")
    assert counter.name == "cl100k_base"
    assert issubclass(UnknownModelWarning, TokenBoxWarning) and issubclass(TokenBoxWarning, UserWarning)


def test_claude_counts_are_approximate_with_a_margin() -> None:
    """Claude's tokenizer is unpublished: chars/4 plus the 30% error bound, named so in the counter."""
    counter = get_counter("claude-sonnet-4-5")
    assert counter.name == "approximate+30%"
    text = "x" * 400  # 100 raw chars/4 tokens
    assert counter.count(text) == 130
    budget = TokenBudgetCalculator().calculate("claude-sonnet-4-5", [])
    assert budget.counting == "approximate+30%" and "estimates" in budget.note


def test_margin_counter_truncates_within_its_limit() -> None:
    """The margin counter's cut never counts above the limit and keeps the requested end."""
    counter = MarginApproximateCounter(0.30)
    text = "".join(chr(97 + i % 26) for i in range(1000))
    for limit in (0, 1, 2, 13, 100, 400):
        for keep in ("head", "tail", "middle"):
            cut = counter.truncate(text, limit, keep=keep)
            assert counter.count(cut) <= limit
    assert counter.truncate(text, 13, keep="head") == text[:40]
    assert counter.truncate(text, 13, keep="tail") == text[-40:]


def test_register_model_keeps_old_behaviour_and_returns_a_profile() -> None:
    """register_model(name, window, encoding=...) still works; it returns a registered profile."""
    name = _fresh("acme-70b")
    profile = register_model(name, 32_768, encoding="o200k_base")
    assert MODEL_CONTEXT_WINDOWS[name] == 32_768
    assert profile.window_source == "registered"
    assert get_counter(name).name == "o200k_base"
    assert TokenBudgetCalculator().calculate(name, []).window_source == "registered"


def test_register_model_overrides_a_family_and_keeps_its_rules() -> None:
    """Overriding a known family's window keeps its media and counting rules."""
    name = _fresh("claude-sonnet-4-5")
    profile = register_model(name, 1_000_000)
    assert profile.context_window == 1_000_000
    assert profile.image is not None and profile.approximate


def test_register_whole_profile() -> None:
    """A ModelProfile registers whole, under its name and aliases."""
    name = _fresh("house-model")
    register_model(ModelProfile(name, "house", 50_000, aliases=(name + "-alias",)))
    assert MODEL_CONTEXT_WINDOWS[name + "-alias"] == 50_000


def test_register_model_errors_name_the_fix(tmp_path: Path) -> None:
    """Bad registrations fail where they are typed, with the numbers and the fix."""
    with pytest.raises(BudgetError, match="context_window must be > 0"):
        register_model(_fresh("broken"), 0)
    with pytest.raises(BudgetError, match="needs context_window"):
        register_model(_fresh("nowindow"))
    with pytest.raises(BudgetError, match="either encoding"):
        register_model(_fresh("both"), 1000, encoding="o200k_base", tokenizer_file="x.json")
    with pytest.raises(TokenizerUnavailable, match="no tokenizer file"):
        register_model(_fresh("missing"), 1000, tokenizer_file=tmp_path / "nope.json")
    with pytest.raises(BudgetError, match="error_bound"):
        register_model(_fresh("bound"), 1000, error_bound=-1)


def _tiny_tokenizer(path: Path) -> Path:
    """A word-level tokenizer.json built locally with the tokenizers library (nothing downloaded)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, "hello": 1, "world": 2, "tokens": 3, ",": 4, "!": 5}
    tok = tokenizers.Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    target = path / "tokenizer.json"
    tok.save(str(target))
    return target


def test_hf_tokenizer_counts_exactly_from_a_local_file(tmp_path: Path) -> None:
    """A registered tokenizer.json makes an open-weight model's counts exact."""
    path = _tiny_tokenizer(tmp_path)
    name = _fresh("llama-3.1-local")
    register_model(name, 128_000, tokenizer_file=path)
    counter = get_counter(name)
    assert counter.count("hello world, tokens!") == 5
    assert counter.truncate("hello world, tokens!", 2) == "hello world"
    assert counter.truncate("hello world, tokens!", 2, keep="tail") == "tokens!"
    assert counter.truncate("hello world, tokens!", 3, keep="middle") == "hello world!"
    budget = TokenBudgetCalculator().calculate(name, [])
    assert budget.counting.startswith("exact (hf:")


def test_hf_counter_needs_a_real_file(tmp_path: Path) -> None:
    """A path that is not a tokenizer.json is a clear TokenizerUnavailable."""
    bad = tmp_path / "tokenizer.json"
    bad.write_text("not json", encoding="utf-8")
    with pytest.raises(TokenizerUnavailable, match="cannot read tokenizer file"):
        HFTokenizerCounter(bad)


def test_profiles_from_llamaindex_metadata_and_langchain_models() -> None:
    """LlamaIndex LLMMetadata and LangChain-style models give their window and name (duck typing)."""
    from llama_index.core.base.llms.types import LLMMetadata

    meta = LLMMetadata(context_window=16_000, num_output=512, model_name="gpt-4o-2024-08-06")
    profile = profile_from_object(meta)
    assert (profile.context_window, profile.window_source, profile.name) == (16_000, "framework", "gpt-4o")
    assert profile.max_output_tokens == 512

    class LLM:
        metadata = meta

    assert profile_from_object(LLM()).context_window == 16_000

    class ChatModel:  # the shape of a LangChain chat model with a 1.1+ profile
        model_name = "claude-3-5-haiku-20241022"
        profile: ClassVar[dict[str, int]] = {"max_input_tokens": 100_000, "max_output_tokens": 4_096}

    lc = profile_from_object(ChatModel())
    assert (lc.context_window, lc.name, lc.approximate) == (100_000, "claude-3-5-haiku", True)

    class Bare:
        model = "o3-mini"

    assert profile_from_object(Bare()).context_window == 200_000
    assert TokenBudgetCalculator().calculate(meta, []).context_window == 16_000


def test_every_builtin_profile_names_a_source() -> None:
    """Each built-in figure comes with the public page it was read from."""
    profiles = builtin_profiles()
    assert {p.provider for p in profiles} >= {"openai", "anthropic", "google", "meta", "mistral", "deepseek", "qwen"}
    for profile in profiles:
        assert profile.sources, profile.name
        assert profile.window_source == "registry"


@given(
    texts=st.lists(st.text(min_size=0, max_size=300), min_size=1, max_size=5),
    budget=st.integers(min_value=10, max_value=400),
)
def test_layouts_with_an_approximate_model_counter_stay_within_budget(texts: list[str], budget: int) -> None:
    """A Claude layout (approximate+30% counter) never exceeds its budget, counted the way it is emitted."""
    from tokenbox_core import ContextCriticalOverflow, Section, TokenBox

    counter = get_counter("claude-sonnet-4-5")
    sections = [Section("task", "Answer briefly.")] + [
        Section(f"s{i}", text, shrink=1, priority=i) for i, text in enumerate(texts)
    ]
    try:
        layout = TokenBox(budget, counter=counter).layout(sections)
    except ContextCriticalOverflow:
        return
    assert layout.total_tokens <= budget
    assert layout.counter_name == "approximate+30%" and layout.trace["counter"] == "approximate+30%"
    assert counter.count(layout.text) == layout.total_tokens
