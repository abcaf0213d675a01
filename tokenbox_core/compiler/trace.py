"""The compilation trace of chapter §6.4.2, and the input hash behind it.

``input_hash`` is a sha256 over *every* input that can change the output:
each candidate with all its fields (timestamps, metadata, spans, lineage,
tool schemas, message payloads), the configuration (:meth:`CompilerConfig.describe`),
the budget, the counter's name and the compile's reference time.  What a typed
input (a frozen dataclass: policy, evidence, memory, ...) contributes is
kept on the instance once built, when every field it holds is immutable, so
a warm compile does not re-encode megabytes of unchanged passages.  ``output_hash``
is the sha256 of the emitted messages (or text).  ``trace_id``, ``timestamp``
and latencies are outside both, so two runs over the same inputs share their
hashes and differ only in those fields.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from json.encoder import encode_basestring
from typing import Any

from tokenbox_core.budget import ContextBudget
from tokenbox_core.compiler.collect import Candidates
from tokenbox_core.compiler.config import CompilerConfig
from tokenbox_core.compiler.filter import Exclusion
from tokenbox_core.compiler.inputs import FrozenList, keep, kept
from tokenbox_core.compiler.resume import clear_caches as _clear_streams
from tokenbox_core.compiler.resume import digest
from tokenbox_core.frozen import FrozenDict
from tokenbox_core.tokens import canonical_json

__all__ = ["CompilationTrace", "input_hash", "output_hash"]


def _plain(value: Any) -> Any:
    kind = type(value)  # exact built-in types first (the common case; none of them is a dataclass)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict or kind is FrozenDict:  # FrozenDict, FrozenList: a typed input's frozen data
        return {str(k): _plain(v) for k, v in value.items()}
    if kind is list or kind is tuple or kind is FrozenList:
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def _feed(h: Any, value: Any) -> None:
    """Stream a value into the hash, typed and length-prefixed: texts as raw bytes, scalars by repr, the rest
    as canonical JSON."""
    kind = type(value)
    if kind is str:  # exact types first (the common case), then the general checks in the same order
        tag, data = b"s", value.encode("utf-8", "surrogatepass")
    elif kind is float or kind is int or kind is bool or value is None:
        tag, data = b"n", repr(value).encode()
    elif kind is datetime:
        tag, data = b"t", value.isoformat().encode()
    elif kind is tuple and len(value) == 2 and type(value[0]) is int and type(value[1]) is int:  # a span
        tag, data = b"j", b"[%d,%d]" % value
    elif kind is tuple and all(type(v) is int for v in value):  # exact types before the ABC checks
        tag, data = b"j", b"[%s]" % b",".join(b"%d" % v for v in value)
    elif (kind is FrozenDict or kind is dict) and not value:
        tag, data = b"j", b"{}"
    elif isinstance(value, str):
        tag, data = b"s", value.encode("utf-8", "surrogatepass")
    elif value is None or isinstance(value, bool | int | float):
        tag, data = b"n", repr(value).encode()
    elif isinstance(value, datetime):
        tag, data = b"t", value.isoformat().encode()
    elif isinstance(value, Mapping) and not value:  # fast paths: the canonical JSON without json.dumps
        tag, data = b"j", b"{}"
    elif isinstance(value, tuple) and all(type(v) is int for v in value):
        tag, data = b"j", b"[%s]" % b",".join(b"%d" % v for v in value)
    else:
        tag, data = b"j", canonical_json(_plain(value)).encode("utf-8", "surrogatepass")
    h.update(b"%s%d:" % (tag, len(data)))
    h.update(data)


class _Chunks(list[bytes]):
    """Collects what :func:`_feed` streams, to hash it in one call (one ``update`` per value costs more)."""

    update = list.append


_ENTRY_CHUNKS = "_tokenbox_input_chunks"


_SCALARS = frozenset({str, int, float, bool, type(None), datetime})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _immutable(value: Any) -> bool:
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is FrozenDict or isinstance(value, FrozenDict):
        return all(isinstance(k, str) for k in value) and all(map(_immutable, value.values()))
    if kind is FrozenList:
        return all(map(_immutable, value))
    if kind is tuple and all(type(v) is int for v in value):
        return True
    if isinstance(value, str | int | float | datetime | Enum):
        return True
    if isinstance(value, tuple):
        return all(map(_immutable, value))
    return False


def _entry_chunks(entry: Any) -> tuple[bytes, ...]:
    """What a typed input streams into the hash: each field, in order (kept on the instance when immutable)."""
    found = kept(entry, _ENTRY_CHUNKS)
    if isinstance(found, tuple):
        return found
    names = _FIELDS.get(type(entry))
    if names is None:
        names = _FIELDS[type(entry)] = tuple(f.name for f in dataclasses.fields(entry))
    values = [getattr(entry, name) for name in names]
    chunks = _Chunks()
    for value in values:
        _feed(chunks, value)
    out = tuple(chunks)
    if all(map(_immutable, values)):
        keep(entry, _ENTRY_CHUNKS, out)
    return out


_SHORT: dict[str, tuple[bytes, bytes]] = {}  # keys and short values (roles, names): their two chunks


def _short(text: str) -> tuple[bytes, bytes]:
    found = _SHORT.get(text)
    if found is None:
        data = text.encode("utf-8", "surrogatepass")
        found = (b"s%d:" % len(data), data)
        if len(_SHORT) < 4096:
            _SHORT[text] = found
    return found


def _text(value: str) -> tuple[bytes, bytes]:
    """A string value's two chunks (its length, its bytes); short ones remembered by :func:`_short`."""
    if len(value) <= 64:
        return _short(value)
    data = value.encode("utf-8", "surrogatepass")
    return (b"s%d:" % len(data), data)


_CONTENT_KEY = _short("content")
_ROLE_KEY = _short("role")
_PLAIN: dict[tuple[str, str], tuple[bytes, ...]] = {}  # (role, content) -> the chunks of that plain message
_PLAIN_CHARS = 4 * 1024 * 1024
_plain_held = [0]


def _message_chunks(h: _Chunks, entry: Mapping[Any, Any]) -> None:
    """A message streamed into the hash: its keys in order, each with its value (strings as raw bytes).

    A plain ``{"role": str, "content": str}`` message (most of a history) is looked up by its two strings
    (whose hashes Python keeps), so a turn seen before costs one look-up; bounded by characters."""
    if len(entry) == 2 and type(entry) is dict:
        role, content = entry.get("role"), entry.get("content")
        if type(role) is str and type(content) is str:
            key = (role, content)
            found = _PLAIN.get(key)
            if found is None:  # what _streamed gives for it, written out: keys sorted, "content" < "role"
                found = (*_CONTENT_KEY, *_text(content), *_ROLE_KEY, *_short(role))
                if _plain_held[0] + len(content) > _PLAIN_CHARS:
                    _PLAIN.clear()
                    _plain_held[0] = 0
                _PLAIN[key] = found
                _plain_held[0] += len(content)
            h += found
            return
    _streamed(h, entry)


def _streamed(h: _Chunks, entry: Mapping[Any, Any]) -> None:
    for key in sorted(entry, key=str):
        value = entry[key]
        h += _short(key) if type(key) is str and len(key) <= 64 else _short(str(key))
        if type(value) is str:
            h += _text(value)
        else:
            _feed(h, value)


def input_hash(
    candidates: Candidates, config: CompilerConfig, budget: ContextBudget, counter_name: str, now: datetime | None
) -> str:
    """sha256 over every input that can change the output (see the module docstring)."""
    h = _Chunks()
    _feed(h, {"config": config.describe(), "budget": budget.to_dict(), "counter": counter_name})
    _feed(h, None if now is None else now.isoformat())
    for slot in dataclasses.fields(candidates):
        value = getattr(candidates, slot.name)
        h.update(slot.name.encode())
        for entry in value if isinstance(value, tuple) else (value,):
            kind = type(entry)
            if kind is dict:  # a message: string keys and contents streamed inline
                _message_chunks(h, entry)
            elif kind in _FIELDS or (dataclasses.is_dataclass(entry) and not isinstance(entry, type)):
                h += _entry_chunks(entry)
            elif isinstance(entry, Mapping):
                _message_chunks(h, entry)
            else:
                _feed(h, entry)
    return digest(h)


def output_hash(messages: Any, text: str, output: str, parts: Sequence[Sequence[str] | None] | None = None) -> str:
    """sha256 of what is sent: the canonical JSON of the messages, or the text.

    ``parts``, when given, holds per message the pieces its ``content`` joins (``Assembled.parts``): the
    JSON of a string is the JSON of its pieces put together (escaping is per character), so each piece is
    escaped once and remembered — a warm compile re-escapes only what changed, not every passage again.
    Equal to ``sha256(canonical_json(messages))``; dict messages with string keys take the streamed path.
    """
    if output != "messages":
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    rows = list(messages)
    pieces_of: Sequence[Sequence[str] | None] = parts if parts is not None and len(parts) == len(rows) else ()
    chunks = [b"["]
    for index, message in enumerate(rows):
        if index:
            chunks.append(b",")
        if type(message) is not dict or not all(type(k) is str for k in message):
            chunks.append(canonical_json(_plain(message)).encode("utf-8", "surrogatepass"))
            continue
        pieces = pieces_of[index] if pieces_of else None
        chunks.append(b"{")
        for n, key in enumerate(sorted(message)):
            chunks += [b',"' if n else b'"', _escaped(key), b'":']
            value = message[key]
            if type(value) is not str:
                chunks.append(canonical_json(_plain(value)).encode("utf-8", "surrogatepass"))
                continue
            chunks.append(b'"')
            if key == "content" and pieces is not None:
                chunks.extend(map(_escaped, pieces))
            else:
                chunks.append(_escaped(value))
            chunks.append(b'"')
        chunks.append(b"}")
    chunks.append(b"]")
    return digest(chunks)


_ESCAPED: dict[str, bytes] = {}
_ESCAPED_CHARS = 4 * 1024 * 1024
_escaped_held = [0]


def clear_caches() -> None:
    """Forget the escaped output pieces and the kept hash streams."""
    _clear_streams()
    _PLAIN.clear()
    _plain_held[0] = 0
    _ESCAPED.clear()
    _escaped_held[0] = 0


def _json_body(piece: str) -> bytes:
    """``encode_basestring(piece)[1:-1]`` as UTF-8, faster: the five escapes text usually needs (backslash
    first) by ``str.replace``; when a control character other than those is left (the only other thing
    ``encode_basestring`` escapes — found by one ``bytes.translate`` pass that deletes every other byte) the
    json module's own escaping.  Property-checked against it."""
    body = piece
    for char, escape in _ESCAPES:
        if char in body:  # a memchr scan; replace itself costs more even when it finds nothing
            body = body.replace(char, escape)
    data = body.encode("utf-8", "surrogatepass")
    if data.translate(None, _NOT_CONTROL):  # UTF-8 continuation bytes are >= 0x80: never taken for one
        return encode_basestring(piece)[1:-1].encode("utf-8", "surrogatepass")
    return data


_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))  # backslash first
_NOT_CONTROL = bytes(range(32, 256))


def _escaped(piece: str) -> bytes:
    """The UTF-8 JSON string body of ``piece`` (``canonical_json``'s escaping, quotes left off); memoised,
    the memo emptied when it holds more than ``_ESCAPED_CHARS`` characters."""
    found = _ESCAPED.get(piece)
    if found is None:
        found = _json_body(piece)
        if _escaped_held[0] + len(piece) > _ESCAPED_CHARS:
            _ESCAPED.clear()
            _escaped_held[0] = 0
        _ESCAPED[piece] = found
        _escaped_held[0] += len(piece)
    return found


@dataclass(frozen=True)
class CompilationTrace:
    """Every decision of one compile (chapter §6.4.2's ``CompilationTrace`` plus the allocator's numbers).

    Fields of the chapter's schema: ``trace_id``, ``timestamp``,
    ``config_version``, ``input_hash``, ``output_hash``, ``total_tokens``,
    ``section_allocations`` (``{section: {allocated, used, overflow, demand,
    status}}``), ``excluded_items`` (filtered items, items and sections lost
    in compression, each with reason and score), ``compression_ratios``
    (emitted / demanded tokens per section) and ``latency_ms``.  Beyond it:
    the allocator, the overflow policy and its events, the shadow price and
    marginal utilities (utility allocator), the reference pointers, the
    pending retrieval, per-stage latencies and the Token Box's own trace.
    """

    trace_id: str
    timestamp: str
    config_version: str
    input_hash: str
    output_hash: str
    total_tokens: int
    section_allocations: Mapping[str, Mapping[str, Any]]
    excluded_items: tuple[Exclusion, ...]
    compression_ratios: Mapping[str, float]
    latency_ms: float
    policy_version: str | None = None
    allocator: str = "priority"
    overflow_policy: str = "fail_loud"
    overflow_events: tuple[Mapping[str, Any], ...] = ()
    shadow_price: float | None = None
    marginal_utilities: Mapping[str, float] = field(default_factory=dict)
    references: tuple[Mapping[str, Any], ...] = ()
    retrieval_pending: tuple[str, ...] = ()
    page: int = 1
    pages: int = 1
    stage_latency_ms: Mapping[str, float] = field(default_factory=dict)
    defense: Mapping[str, Any] | None = None  # DefenseReport.to_dict() when defence is on (issue 12)
    session: Mapping[str, Any] | None = None  # a ContextSession's history tier: omitted, recalled, masked, ...

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (excluded items as dicts; ``session`` only for a session's compile)."""
        out = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["excluded_items"] = [e.to_dict() for e in self.excluded_items]
        if self.session is None:
            del out["session"]
        return out

    def decisions(self) -> dict[str, Any]:
        """The deterministic part: everything except the run id, the timestamp and the latencies."""
        out = self.to_dict()
        for key in ("trace_id", "timestamp", "latency_ms", "stage_latency_ms"):
            out.pop(key, None)
        return out
