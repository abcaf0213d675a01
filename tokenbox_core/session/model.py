"""The records a session archive holds: turns, summaries and eviction events (chapter §6.10, §6.7.2).

Messages are the core's neutral chat shape: OpenAI-style dicts with ``role``,
``content`` (a string or a list of content parts), optional ``name``,
``tool_calls``, ``tool_call_id`` and the reserved per-message options key
``"tokenbox"``.  A stored turn keeps the whole message as canonical JSON and
gets a stable id ``t_<n>`` (``n`` counts the session's turns from 1).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenbox_core.errors import SessionError
from tokenbox_core.tokens import canonical_json, content_text

__all__ = [
    "ROLES",
    "EvictionEvent",
    "Summary",
    "Turn",
    "block_hash",
    "check_message",
    "message_text",
    "turn_id_for",
]

ROLES = ("system", "developer", "user", "assistant", "tool")
"""Roles a stored message may have (the neutral chat shape)."""


def turn_id_for(seq: int) -> str:
    """The stable id of a session's ``seq``-th turn (1-based): ``t_<seq>``."""
    return f"t_{seq}"


def check_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A plain, JSON-serialisable copy of ``message``; a clear error for anything that is not a neutral message."""
    if not isinstance(message, Mapping):
        raise SessionError(
            f"a session turn must be a message dict with 'role' and 'content', got {type(message).__name__}; "
            f"convert framework messages first (the adapters do)"
        )
    role = message.get("role")
    if role not in ROLES:
        raise SessionError(f"message role {role!r} is not one of {', '.join(ROLES)}; fix the message's 'role'")
    try:
        return dict(json.loads(canonical_json(dict(message))))
    except (TypeError, ValueError) as exc:  # pragma: no cover - canonical_json stringifies unknown objects
        raise SessionError(f"message cannot be stored as JSON: {exc}") from exc


def message_text(message: Mapping[str, Any]) -> str:
    """The readable text of a message: its content, then its tool calls as ``name(args)`` lines."""
    parts = [content_text(message.get("content"))]
    for call in message.get("tool_calls") or ():
        fn = call.get("function", call) if isinstance(call, Mapping) else {}
        args = fn.get("arguments", fn.get("args", {}))
        parts.append(f"{fn.get('name', '')}({args if isinstance(args, str) else canonical_json(args)})")
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class Turn:
    """One archived message: its stable ``turn_id``, position ``seq`` (1-based) and the message itself.

    ``created_at`` is the wall-clock time of the append (seconds since the epoch); it is metadata and never
    enters a compile's fingerprint.
    """

    session_id: str
    turn_id: str
    seq: int
    message: Mapping[str, Any]
    created_at: float = 0.0

    @property
    def role(self) -> str:
        return str(self.message.get("role"))

    @property
    def text(self) -> str:
        """Content plus tool calls as text (see :func:`message_text`)."""
        return message_text(self.message)

    def as_message(self) -> dict[str, Any]:
        """The message with ``id`` set to the turn id, ready for ``fit_conversation``."""
        out = dict(self.message)
        out["id"] = self.turn_id
        return out


def block_hash(messages: Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 of a block's messages (canonical JSON, ids included): the key summaries are cached and seeded by."""
    return hashlib.sha256(canonical_json([dict(m) for m in messages]).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Summary:
    """A checkpoint summary with its provenance (Algorithm 6.7).

    ``level`` 1 summarises turns, level k > 1 summarises level k−1 summaries (§6.10.4); ``source_ids`` are
    the ids summarised (turn ids at level 1, summary ids above) and ``source_turn_ids`` every turn the
    summary covers.  ``created_at`` lies outside :attr:`fingerprint`.
    """

    session_id: str
    summary_id: str
    level: int
    source_ids: tuple[str, ...]
    source_turn_ids: tuple[str, ...]
    text: str
    tokens: int
    source_tokens: int
    block_hash: str
    summarizer: str
    summary_version: int
    created_at: float = 0.0
    invalidated_by: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def compression_ratio(self) -> float:
        """Summary tokens over the tokens of what it summarises."""
        return self.tokens / self.source_tokens if self.source_tokens else 0.0

    @property
    def fingerprint(self) -> str:
        """Hash of everything that determines the summary's text (never its creation time)."""
        payload = [self.level, list(self.source_ids), self.block_hash, self.summarizer, self.summary_version, self.text]
        return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:16]

    def as_message(self) -> dict[str, Any]:
        """The summary as a neutral message (used to summarise summaries)."""
        return {"role": "assistant", "content": self.text, "id": self.summary_id}


@dataclass(frozen=True)
class EvictionEvent:
    """Turns a compile evicted from the context (§6.8.3 ``ArchiveToSessionStore``), with the reason."""

    session_id: str
    turn_ids: tuple[str, ...]
    reason: str
    created_at: float = 0.0
