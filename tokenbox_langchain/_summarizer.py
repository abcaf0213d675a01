"""``ChatModelSummarizer``: checkpoint summaries written by any LangChain chat model (chapter §6.10.3).

Temperature 0, the seed derived from the block hash where the model has a ``seed`` field, the prompt
versioned, and every summary cached in the session store by (block hash, prompt version, model): a summary
is generated once and replays are byte-identical.  The prompt, seed and cache live in the core
(:class:`tokenbox_core.session.ModelSummarizer`); this adapter only calls the model.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from tokenbox_core.errors import ConfigTypeError
from tokenbox_core.session import PROMPT_VERSION, SUMMARY_PROMPT, ModelSummarizer, SessionStore
from tokenbox_core.tokens import content_text
from tokenbox_langchain._agent_summary import SUMMARY_CONFIG, deferred

__all__ = ["ChatModelSummarizer", "deterministic_model", "model_name"]


def model_name(model: Any) -> str:
    """The model's name as the provider knows it (``model_name``/``model``), else its class name."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def deterministic_model(model: Any, seed: int) -> Any:
    """A copy of ``model`` at temperature 0 with ``seed``, for the fields the model class has."""
    fields = getattr(type(model), "model_fields", {})
    update = {k: v for k, v in (("temperature", 0), ("seed", seed)) if k in fields}
    return model.model_copy(update=update) if update else model


class ChatModelSummarizer(ModelSummarizer):
    """A :class:`~tokenbox_core.session.Summarizer` backed by a LangChain ``BaseChatModel``.

    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from tokenbox_core.session import MemorySessionStore
    >>> model = FakeListChatModel(responses=["The user chose SQLite [t_2]."])
    >>> s = ChatModelSummarizer(model, store=MemorySessionStore())
    >>> from tokenbox_core.tokens import get_counter
    >>> s.summarize([{"role": "user", "content": "use SQLite", "id": "t_2"}], 40, counter=get_counter("whitespace"))
    'The user chose SQLite [t_2].'
    >>> s.name
    'llm/FakeListChatModel/tokenbox-summary/1'
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        store: SessionStore | None = None,
        prompt: str = SUMMARY_PROMPT,
        prompt_version: str = PROMPT_VERSION,
    ) -> None:
        if not isinstance(model, BaseChatModel):
            raise ConfigTypeError(f"expected a LangChain chat model (BaseChatModel), got {type(model).__name__}")
        self.chat_model = model

        def generate(prompt_text: str, seed: int) -> str:
            bound = deterministic_model(model, seed)
            prompt = [HumanMessage(prompt_text)]
            # awaited through ainvoke when TokenBoxMiddleware fits on the async path (agent_summary.run_awaiting)
            reply = deferred(
                ("chat", prompt_text, seed),
                lambda: bound.invoke(prompt, config=SUMMARY_CONFIG),
                lambda: bound.ainvoke(prompt, config=SUMMARY_CONFIG),
            )
            return content_text(reply.content)

        super().__init__(generate, model=model_name(model), store=store, prompt=prompt, prompt_version=prompt_version)
