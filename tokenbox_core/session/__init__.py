"""The session archive: every turn kept, summarised in checkpoints, recoverable by rehydration.

Chapter §6.7.1–6.7.2 (extractive summaries, omission with provenance), §6.8
(hygiene), §6.10 (sliding window, checkpoints, hierarchical summaries,
rehydration).  Context management never loses information irrecoverably: what
a compile evicts stays in the store, and the omission marker says how to get it
back.
"""

from tokenbox_core.session._context import ContextSession
from tokenbox_core.session._embeddings import MiniLMEmbedder
from tokenbox_core.session._llm import PROMPT_VERSION, SUMMARY_PROMPT, ModelSummarizer
from tokenbox_core.session._managed import ManagedContext, ManagedHistory
from tokenbox_core.session._model import Turn
from tokenbox_core.session._open import open_store
from tokenbox_core.session._options import MaskingConfig, OffloadConfig, RecallConfig
from tokenbox_core.session._postgres import PostgresSessionStore
from tokenbox_core.session._recalled import BLOCK_END
from tokenbox_core.session._rehydrate import (
    REHYDRATE_DESCRIPTION,
    SEARCH_DESCRIPTION,
    format_turns,
    rehydrate,
    search_archive,
)
from tokenbox_core.session._sqlite import SQLiteSessionStore
from tokenbox_core.session._store import MemorySessionStore, SessionStore
from tokenbox_core.session._summarize import ExtractiveSummarizer, Summarizer
from tokenbox_core.session._view import mask_tool_result

__all__ = [
    "BLOCK_END",
    "ContextSession",
    "ExtractiveSummarizer",
    "ManagedContext",
    "ManagedHistory",
    "MaskingConfig",
    "MemorySessionStore",
    "MiniLMEmbedder",
    "ModelSummarizer",
    "OffloadConfig",
    "PROMPT_VERSION",
    "PostgresSessionStore",
    "REHYDRATE_DESCRIPTION",
    "RecallConfig",
    "SEARCH_DESCRIPTION",
    "SQLiteSessionStore",
    "SUMMARY_PROMPT",
    "SessionStore",
    "Summarizer",
    "Turn",
    "format_turns",
    "mask_tool_result",
    "open_store",
    "rehydrate",
    "search_archive",
]
