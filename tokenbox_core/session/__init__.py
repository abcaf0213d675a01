"""The session archive: every turn kept, summarised in checkpoints, recoverable by rehydration.

Chapter §6.7.1–6.7.2 (extractive summaries, omission with provenance), §6.8
(hygiene), §6.10 (sliding window, checkpoints, hierarchical summaries,
rehydration).  Context management never loses information irrecoverably: what
a compile evicts stays in the store, and the omission marker says how to get it
back.
"""

from tokenbox_core.errors import SessionError, SessionStoreError, UnknownTurnError
from tokenbox_core.session.checkpoints import SUMMARY_VERSION, CheckpointConfig, Checkpointer, Checkpoints
from tokenbox_core.session.context import ContextSession
from tokenbox_core.session.embeddings import MiniLMEmbedder
from tokenbox_core.session.hygiene import (
    Decay,
    EvictionResult,
    ExponentialDecay,
    HygieneItem,
    SigmoidDecay,
    Staleness,
    StepDecay,
    evict,
    staleness_signals,
)
from tokenbox_core.session.managed import REHYDRATED_HEADER, SUMMARY_HEADER, ManagedContext, ManagedHistory
from tokenbox_core.session.model import EvictionEvent, Summary, Turn, block_hash
from tokenbox_core.session.options import MaskingConfig, OffloadConfig, RecallConfig
from tokenbox_core.session.recall import Embedder, RecallIndex
from tokenbox_core.session.rehydrate import format_turns, rehydrate, rehydration_pointer, search_archive
from tokenbox_core.session.sqlite import SQLiteSessionStore
from tokenbox_core.session.store import MemorySessionStore, SessionStore
from tokenbox_core.session.summarize import PREAMBLE, ExtractiveSummarizer, Summarizer, TurnScore

__all__ = [
    "CheckpointConfig",
    "Checkpointer",
    "Checkpoints",
    "ContextSession",
    "Decay",
    "Embedder",
    "EvictionEvent",
    "EvictionResult",
    "ExponentialDecay",
    "ExtractiveSummarizer",
    "HygieneItem",
    "ManagedContext",
    "ManagedHistory",
    "MaskingConfig",
    "MemorySessionStore",
    "MiniLMEmbedder",
    "OffloadConfig",
    "PREAMBLE",
    "REHYDRATED_HEADER",
    "RecallConfig",
    "RecallIndex",
    "SQLiteSessionStore",
    "SUMMARY_HEADER",
    "SUMMARY_VERSION",
    "SessionError",
    "SessionStore",
    "SessionStoreError",
    "SigmoidDecay",
    "Staleness",
    "StepDecay",
    "Summarizer",
    "Summary",
    "Turn",
    "TurnScore",
    "UnknownTurnError",
    "block_hash",
    "evict",
    "format_turns",
    "rehydrate",
    "rehydration_pointer",
    "search_archive",
    "staleness_signals",
]
