"""Summaries written by a language model, deterministic and cached (chapter §6.10.3; ``docs/concepts.md``).

The adapters wrap a LangChain chat model or a LlamaIndex LLM into a ``generate(prompt, seed)`` callable; this
module does the rest once: the versioned prompt, the seed derived from the block hash, the cache in the
session store keyed by (block hash, prompt version, model, target) so each summary is generated once and every
replay is byte-identical, and the cut to the target when a model overshoots.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokenbox_core.errors import SessionError
from tokenbox_core.session.model import block_hash
from tokenbox_core.session.store import SessionStore
from tokenbox_core.session.summarize import turn_line
from tokenbox_core.tokens import TokenCounter

__all__ = ["PROMPT_VERSION", "SUMMARY_PROMPT", "ModelSummarizer", "seed_for", "summary_prompt"]

PROMPT_VERSION = "tokenbox-summary/1"
"""Version of :data:`SUMMARY_PROMPT`; part of every cache key and summarizer name."""

SUMMARY_PROMPT = """Summarise the conversation turns below for an assistant that will continue the conversation \
without seeing them. Keep decisions, corrections, constraints and key facts (names, numbers, file names, \
identifiers); when a later turn corrects an earlier one, keep only the corrected version. Cite the turn ids you \
rely on in brackets, e.g. [t_17]. Write at most {target_tokens} tokens of plain text, no preamble.

TURNS:
{turns}"""
"""The summary prompt (``{target_tokens}``, ``{turns}``); change :data:`PROMPT_VERSION` with it."""

Generate = Callable[[str, int], str]


def summary_prompt(messages: Sequence[Mapping[str, Any]], target_tokens: int, template: str = SUMMARY_PROMPT) -> str:
    """The prompt for one block: the template filled with the target and one ``<id> <role>: <text>`` line per turn."""
    return template.format(target_tokens=target_tokens, turns="\n".join(turn_line(m) for m in messages))


def seed_for(messages: Sequence[Mapping[str, Any]]) -> int:
    """A 31-bit seed derived from the block hash (§6.10.3 ``seed = block.hash``)."""
    return int(block_hash(messages)[:8], 16) & 0x7FFFFFFF


class ModelSummarizer:
    """A :class:`~tokenbox_core.session.Summarizer` calling ``generate(prompt, seed) -> text``.

    Args:
        generate: calls the model once, at temperature 0, with the seed where the model supports one.
        model: the model's name (part of the cache key and of :attr:`name`).
        store: where summaries are cached; without one, a private in-memory cache.
        prompt: the template; prompt_version: its version (change it with the template).
    """

    def __init__(
        self,
        generate: Generate,
        *,
        model: str,
        store: SessionStore | None = None,
        prompt: str = SUMMARY_PROMPT,
        prompt_version: str = PROMPT_VERSION,
    ) -> None:
        if "{turns}" not in prompt or "{target_tokens}" not in prompt:
            raise SessionError("the summary prompt must contain {turns} and {target_tokens}")
        if not model:
            raise SessionError("model must name the model (it is part of the cache key)")
        self._generate = generate
        self.model = model
        self.store = store
        self.prompt = prompt
        self.prompt_version = prompt_version
        self._cache: dict[str, str] = {}
        self.calls = 0

    @property
    def name(self) -> str:
        """``llm/<model>/<prompt version>``."""
        return f"llm/{self.model}/{self.prompt_version}"

    def cache_key(self, messages: Sequence[Mapping[str, Any]], target_tokens: int) -> str:
        """SHA-256 of (block hash, prompt version, model, target tokens)."""
        parts = "\x1f".join([block_hash(messages), self.prompt_version, self.model, str(target_tokens)])
        return "summary:" + hashlib.sha256(parts.encode("utf-8")).hexdigest()

    def summarize(self, messages: Sequence[Mapping[str, Any]], target_tokens: int, *, counter: TokenCounter) -> str:
        """The cached summary, else the model's (cut to ``target_tokens``), cached before it is returned."""
        key = self.cache_key(messages, target_tokens)
        cached = self.store.cached_text(key) if self.store is not None else self._cache.get(key)
        if cached is not None:
            return cached
        self.calls += 1
        text = self._generate(summary_prompt(messages, target_tokens, self.prompt), seed_for(messages)).strip()
        if counter.count(text) > target_tokens:
            text = counter.truncate(text, target_tokens)
        if self.store is None:
            return self._cache.setdefault(key, text)
        self.store.cache_text(key, text)
        stored = self.store.cached_text(key)  # first write wins: concurrent writers all return the same text
        return text if stored is None else stored
