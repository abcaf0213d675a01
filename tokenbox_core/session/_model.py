"""The records a session archive holds: turns, summaries and eviction events (chapter §6.10, §6.7.2).

Messages are the core's neutral chat shape: OpenAI-style dicts with ``role``,
``content`` (a string or a list of content parts), optional ``name``,
``tool_calls``, ``tool_call_id`` and the reserved per-message options key
``"tokenbox"``.  A stored turn keeps the whole message as canonical JSON and
gets a stable id ``t_<n>`` (``n`` counts the session's turns from 1).
"""

from __future__ import annotations

import datetime
import hashlib
import math
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
    "plain_message",
    "turn_id_for",
]

ROLES = ("system", "developer", "user", "assistant", "tool")
"""Roles a stored message may have (the neutral chat shape)."""


def turn_id_for(seq: int) -> str:
    """The stable id of a session's ``seq``-th turn (1-based): ``t_<seq>``."""
    return f"t_{seq}"


def check_message(message: Mapping[str, Any], index: int = 0) -> dict[str, Any]:
    """A plain, JSON-serialisable copy of ``message`` (the ``index``-th of a batch); :class:`SessionError` naming
    the message index, the field and the fix for anything that cannot be archived as it was given.

    Values must be JSON: strings of valid Unicode (no lone surrogates), finite numbers, booleans, ``None``,
    lists and string-keyed dicts.  The one conversion, because it loses nothing: a tuple is stored as a list.
    ``bytes``, dates, sets, NaN, infinities and other objects are refused rather than rewritten as strings
    (a compile must be able to send back exactly what was archived).
    """
    if not isinstance(message, Mapping):
        raise SessionError(
            f"message {index}: a session turn must be a message dict with 'role' and 'content', got "
            f"{type(message).__name__}; convert framework messages first (the adapters do)"
        )
    role = message.get("role")
    if role not in ROLES:
        raise SessionError(f"message {index}: role {role!r} is not one of {', '.join(ROLES)}; fix the message's 'role'")
    return plain_message(message, index)


def plain_message(message: Mapping[str, Any], index: int = 0) -> dict[str, Any]:
    """The value checks of :func:`check_message` without the role check (``on_invalid="repair"`` drops unknown
    roles later): a plain copy of ``message``, or :class:`SessionError` naming the index, the field and the fix."""
    if not isinstance(message, Mapping):
        raise SessionError(
            f"message {index} is a {type(message).__name__}; add() takes neutral message dicts such as "
            f"{{'role': 'user', 'content': 'hi'}} (the adapters convert framework messages)"
        )
    plain = _plain(message, index, "")
    assert isinstance(plain, dict)
    _check_content(plain.get("content"), index)
    return plain


def _check_content(content: Any, index: int) -> None:
    """Content is text, ``None`` or a list of content parts (strings or part dicts); nothing else is sendable."""
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise SessionError(
            f"message {index}: field 'content' is a {type(content).__name__}; content is a string or a list of "
            f"content parts such as {{'type': 'text', 'text': '...'}}"
        )
    for i, part in enumerate(content):
        if not isinstance(part, str | dict):
            raise SessionError(
                f"message {index}: field 'content[{i}]' is a {type(part).__name__}; content parts are not nested — "
                f"flatten the list into parts such as {{'type': 'text', 'text': '...'}}"
            )


def _where(path: str) -> str:
    return f"field {path!r}" if path else "the message"


def _plain(value: Any, index: int, path: str) -> Any:
    """``value`` as plain JSON data (a tuple becomes a list), or SessionError naming ``path``."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        _check_text(value, index, _where(path))
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SessionError(
                f"message {index}: {_where(path)} is {value!r}, which JSON cannot hold; store a finite number "
                f"or a string such as 'nan'"
            )
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise SessionError(
                    f"message {index}: {_where(path)} has key {key!r} ({type(key).__name__}); messages use "
                    f"string keys only — convert it with str() yourself if that is what you mean"
                )
            _check_text(key, index, f"a key of {_where(path)}")
            out[key] = _plain(item, index, f"{path}.{key}" if path else key)
        return out
    if isinstance(value, list | tuple):
        return [_plain(item, index, f"{path}[{i}]") for i, item in enumerate(value)]
    kind = type(value).__name__
    if isinstance(value, bytes | bytearray | memoryview):
        fix = "decode it to text (value.decode('utf-8')) or send it as a base64 content part"
    elif isinstance(value, datetime.date | datetime.time):
        fix = "store value.isoformat() (or a timestamp) instead"
    elif isinstance(value, set | frozenset):
        fix = "store a sorted list instead (a set has no order, and a compile must be deterministic)"
    else:
        fix = "store plain JSON data (str, int, float, bool, None, list, dict) instead"
    raise SessionError(f"message {index}: {_where(path)} is a {kind}, which is not JSON; {fix}")


def _check_text(text: str, index: int, where: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SessionError(
            f"message {index}: {where} contains a lone surrogate at index {exc.start} ({text[exc.start]!r}) and is "
            f"not valid Unicode; decode your input with errors='replace' or remove the surrogate"
        ) from exc


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
