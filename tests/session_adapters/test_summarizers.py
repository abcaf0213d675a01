"""LLM-backed checkpoint summarizers in both adapters: temperature 0, seed from the block hash, versioned
prompt, cached in the store by (block hash, prompt version, model) — with the frameworks' fake models."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.llms import MockLLM

from tokenbox_core.errors import SessionError
from tokenbox_core.session import SQLiteSessionStore
from tokenbox_core.session._checkpoints import Checkpointer
from tokenbox_core.session._llm import PROMPT_VERSION, ModelSummarizer, seed_for
from tokenbox_core.tokens import get_counter
from tokenbox_langchain._summarizer import ChatModelSummarizer
from tokenbox_llamaindex._summarizer import LLMSummarizer

WS = get_counter("whitespace")
BLOCK = [{"role": "user", "content": "Let's use SQLite for the cache", "id": "t_4"},
         {"role": "assistant", "content": "Agreed, SQLite it is", "id": "t_5"}]  # fmt: skip


class SeededChatModel(BaseChatModel):
    """A fake chat model with temperature and seed fields that records what it was called with."""

    temperature: float = 0.7
    seed: int | None = None
    model_name: str = "fake-seeded-1"
    log: ClassVar[list[tuple[float, int | None, str]]] = []

    @property
    def _llm_type(self) -> str:
        return "seeded-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        prompt = str(messages[-1].content)
        self.log.append((self.temperature, self.seed, prompt))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"summary seed={self.seed} [t_4]"))])


class SeededLLM(MockLLM):
    """A LlamaIndex mock LLM with temperature and seed fields that records its calls."""

    temperature: float = 0.7
    seed: int | None = None
    log: ClassVar[list[tuple[float, int | None]]] = []

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.log.append((self.temperature, self.seed))
        return CompletionResponse(text=f"summary seed={self.seed}")


def test_langchain_model_runs_at_temperature_zero_with_the_block_seed() -> None:
    """The model is called at temperature 0 with seed_for(block); the prompt carries the turns and target."""
    SeededChatModel.log.clear()
    model = SeededChatModel()
    text = ChatModelSummarizer(model).summarize(BLOCK, 30, counter=WS)
    (temperature, seed, prompt) = SeededChatModel.log[0]
    assert (temperature, seed) == (0, seed_for(BLOCK)) and text == f"summary seed={seed} [t_4]"
    assert "t_4 user: Let's use SQLite for the cache" in prompt and "at most 30 tokens" in prompt
    assert model.temperature == 0.7 and model.seed is None  # the user's model is not modified


def test_cached_in_the_store_once_and_replayed_byte_identical(tmp_path: Path) -> None:
    """A second summarizer (new process, same file) gets the cached text without calling its model."""
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as store:
        first = ChatModelSummarizer(FakeListChatModel(responses=["first answer"]), store=store)
        assert first.summarize(BLOCK, 30, counter=WS) == "first answer" and first.calls == 1
    with SQLiteSessionStore(path) as store:
        second = ChatModelSummarizer(FakeListChatModel(responses=["a different answer"]), store=store)
        assert second.summarize(BLOCK, 30, counter=WS) == "first answer" and second.calls == 0
        assert second.name == f"llm/FakeListChatModel/{PROMPT_VERSION}"
        other = ChatModelSummarizer(FakeListChatModel(responses=["v2"]), store=store, prompt_version="mine/2")
        assert other.summarize(BLOCK, 30, counter=WS) == "v2"  # another prompt version is another cache entry


def test_overlong_model_output_is_cut_to_the_target() -> None:
    """A model that ignores the target is cut to it."""
    text = ChatModelSummarizer(FakeListChatModel(responses=["word " * 50])).summarize(BLOCK, 12, counter=WS)
    assert WS.count(text) == 12


def test_checkpoints_with_a_chat_model(tmp_path: Path) -> None:
    """Checkpoints summarised by a chat model carry its name as provenance; a reopened session calls it no more."""
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as store:
        store.extend("s", [{"role": "user", "content": f"turn {i}"} for i in range(40)])
        summarizer = ChatModelSummarizer(SeededChatModel(), store=store)
        cp = Checkpointer(store, "s", summarizer=summarizer, counter="whitespace", window=10).update()
        assert summarizer.calls == 3 and {s.summarizer for s in cp.summaries} == {summarizer.name}
    with SQLiteSessionStore(path) as store:
        again = ChatModelSummarizer(SeededChatModel(), store=store)
        assert Checkpointer(store, "s", summarizer=again, counter="whitespace", window=10).update().created == ()
        assert again.calls == 0


def test_llamaindex_llm_runs_deterministically_and_is_cached(tmp_path: Path) -> None:
    """The LlamaIndex LLM is called at temperature 0 with the block seed, once per block."""
    SeededLLM.log.clear()
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        summarizer = LLMSummarizer(SeededLLM(), store=store)
        text = summarizer.summarize(BLOCK, 30, counter=WS)
        assert SeededLLM.log == [(0.0, seed_for(BLOCK))] and text == f"summary seed={seed_for(BLOCK)}"
        assert LLMSummarizer(SeededLLM(), store=store).summarize(BLOCK, 30, counter=WS) == text
    assert len(SeededLLM.log) == 1


def test_wrong_types_and_prompts_are_refused() -> None:
    """Non-models and prompts without placeholders fail at construction."""
    with pytest.raises(TypeError, match="LangChain chat model"):
        ChatModelSummarizer("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="LlamaIndex LLM"):
        LLMSummarizer("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(SessionError, match=r"\{turns\}"):
        ModelSummarizer(lambda p, s: p, model="m", prompt="summarise")
    with pytest.raises(SessionError, match="model must name"):
        ModelSummarizer(lambda p, s: p, model="")
