"""``LLMSummarizer``: checkpoint summaries written by any LlamaIndex LLM (chapter §6.10.3).

Temperature 0, the seed derived from the block hash where the LLM has a ``seed`` field, the prompt
versioned, every summary cached in the session store by (block hash, prompt version, model).  The prompt,
seed and cache live in the core (:class:`tokenbox_core.session.ModelSummarizer`).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.llms import LLM

from tokenbox_core.errors import ConfigTypeError
from tokenbox_core.session import PROMPT_VERSION, SUMMARY_PROMPT, ModelSummarizer, SessionStore

__all__ = ["LLMSummarizer"]


def _deterministic(llm: LLM, seed: int) -> LLM:
    fields = type(llm).model_fields
    update: dict[str, Any] = {k: v for k, v in (("temperature", 0.0), ("seed", seed)) if k in fields}
    return llm.model_copy(update=update) if update else llm


class LLMSummarizer(ModelSummarizer):
    """A :class:`~tokenbox_core.session.Summarizer` backed by a LlamaIndex ``LLM`` (``complete``).

    >>> from llama_index.core.llms import MockLLM
    >>> from tokenbox_core.tokens import get_counter
    >>> s = LLMSummarizer(MockLLM(max_tokens=5))
    >>> s.summarize([{"role": "user", "content": "use SQLite", "id": "t_2"}], 40, counter=get_counter("whitespace"))
    'text text text text text'
    """

    def __init__(
        self,
        llm: LLM,
        *,
        store: SessionStore | None = None,
        prompt: str = SUMMARY_PROMPT,
        prompt_version: str = PROMPT_VERSION,
    ) -> None:
        if not isinstance(llm, LLM):
            raise ConfigTypeError(f"expected a LlamaIndex LLM, got {type(llm).__name__}")
        self.llm = llm

        def generate(prompt_text: str, seed: int) -> str:
            return str(_deterministic(llm, seed).complete(prompt_text).text)

        name = llm.metadata.model_name or type(llm).__name__
        super().__init__(generate, model=name, store=store, prompt=prompt, prompt_version=prompt_version)
