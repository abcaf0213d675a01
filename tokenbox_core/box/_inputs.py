"""The layout's ``input_hash``: sha256 of a canonical encoding of every input that can change the output.

the determinism rule of ``docs/concepts.md`` (issue 10 item 13): the box's budget, counter,
separator, mode and ``strict``; every field of every section (policy and
metadata included) and of every item (tags, metadata, timestamp, source
included).  The encoding is canonical and length-prefixed: every value is
written as a type tag, a length and its bytes, so no content — a NUL, a
quote, a repr-like string — can forge a boundary between two values, and two
different inputs never encode alike.

A counter, lens, scorer or other object is identified by what defines it:
built-in counters by their name, module-level functions and classes by
their import path, dataclasses and plain objects by their class and fields.
An object with no stable identity — a lambda, a function defined inside
another, an object whose only description is its address — is encoded by
its identity in this process, and the hash says so: the layout's
``input_hash_notes`` (and ``trace["input_hash_stable"]``) name it, since the
same input will hash differently in another process.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tokenbox_core._sections import Item, Section

if TYPE_CHECKING:
    from ._core import TokenBox

__all__ = ["canonical_bytes", "input_hash"]

_SECTION_FIELDS = tuple(f.name for f in dataclasses.fields(Section))
_ITEM_FIELDS = tuple(f.name for f in dataclasses.fields(Item))


def input_hash(sections: Sequence[Section], box: TokenBox) -> tuple[str, tuple[str, ...]]:
    """(sha256 hex digest, notes on inputs without a stable identity) for a layout of ``sections`` by ``box``."""
    notes: list[str] = []
    h = hashlib.sha256()
    h.update(b"tokenbox-input-v2")
    h.update(canonical_bytes(box.budget.to_dict(), notes))
    h.update(canonical_bytes(_counter_identity(box.counter, notes), notes))
    h.update(canonical_bytes((box.separator, box.mode, box.strict), notes))
    h.update(canonical_bytes(len(sections), notes))
    for section in sections:
        h.update(canonical_bytes(section, notes))
    return h.hexdigest(), tuple(dict.fromkeys(notes))


def _counter_identity(counter: Any, notes: list[str]) -> Any:
    module = type(counter).__module__
    if module.startswith("tokenbox_core.") and hasattr(counter, "fn"):  # a wrapped callable
        return ("callable", _identity(counter.fn, f"counter {counter.name!r}", notes))
    if module.startswith("tokenbox_core."):
        return ("builtin", type(counter).__qualname__, counter.name)
    return ("object", _identity(counter, f"counter {getattr(counter, 'name', type(counter).__name__)!r}", notes))


def _identity(obj: Any, what: str, notes: list[str]) -> Any:
    """A stable description of a function, class or object, or its address plus a note."""
    if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__qualname__") and hasattr(obj, "__module__")):
        qualname = getattr(obj, "__qualname__", "")
        if "<" not in qualname:  # module-level: importable by this path
            return ("path", f"{obj.__module__}:{qualname}")
        notes.append(f"{what} is {qualname!r}, which has no stable identity (a lambda or a local function)")
        return ("address", id(obj))
    return obj  # an object: described by its class and fields


def canonical_bytes(value: Any, notes: list[str]) -> bytes:
    """The canonical, length-prefixed encoding of ``value`` (notes collect what has no stable identity)."""
    out = bytearray()
    _encode(value, out, notes)
    return bytes(out)


def _put(out: bytearray, tag: bytes, payload: bytes) -> None:
    out += tag
    out += struct.pack(">Q", len(payload))
    out += payload


def _encode(value: Any, out: bytearray, notes: list[str]) -> None:
    if value is None:
        out += b"N"
    elif value is True or value is False:
        out += b"T" if value else b"F"
    elif isinstance(value, int):
        _put(out, b"I", str(value).encode())
    elif isinstance(value, float):
        _put(out, b"D", value.hex().encode())
    elif isinstance(value, str):
        _put(out, b"S", value.encode("utf-8", "surrogatepass"))
    elif isinstance(value, bytes | bytearray):
        _put(out, b"B", bytes(value))
    elif isinstance(value, enum.Enum):
        _put(out, b"E", f"{type(value).__module__}:{type(value).__qualname__}.{value.name}".encode())
    elif isinstance(value, datetime.datetime | datetime.date | datetime.time):
        _put(out, b"W", f"{type(value).__name__}:{value.isoformat()}".encode())
    elif isinstance(value, Section | Item):
        names = _SECTION_FIELDS if isinstance(value, Section) else _ITEM_FIELDS
        _fields(type(value).__name__, [(n, getattr(value, n)) for n in names], out, notes)
    elif isinstance(value, Mapping):
        entries = sorted((canonical_bytes(k, notes), canonical_bytes(v, notes)) for k, v in value.items())
        _put(out, b"M", b"".join(struct.pack(">Q", len(k)) + k + v for k, v in entries))
    elif isinstance(value, list | tuple):
        _put(out, b"L", b"".join(canonical_bytes(v, notes) for v in value))
    elif isinstance(value, set | frozenset):
        _put(out, b"U", b"".join(sorted(canonical_bytes(v, notes) for v in value)))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare]
        _fields(_path(type(value)), fields, out, notes)
    elif callable(value):
        described = _identity(value, f"{type(value).__name__} {getattr(value, '__qualname__', '')!r}", notes)
        if described is value:  # a callable object: its class and state
            _object(value, out, notes)
        else:
            _put(out, b"C", canonical_bytes(described, notes))
    else:
        _object(value, out, notes)


def _fields(name: str, fields: list[tuple[str, Any]], out: bytearray, notes: list[str]) -> None:
    _put(out, b"R", canonical_bytes(name, notes) + b"".join(canonical_bytes(f, notes) for f in fields))


def _path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _object(value: Any, out: bytearray, notes: list[str]) -> None:
    state = getattr(value, "__dict__", None)
    if state is None and hasattr(type(value), "__slots__"):
        state = {n: getattr(value, n) for n in type(value).__slots__ if hasattr(value, n)}
    if state is not None:
        _fields(_path(type(value)), sorted(state.items()), out, notes)
        return
    text = repr(value)
    if " at 0x" in text:
        notes.append(f"{type(value).__qualname__} object has no stable description (only its address)")
        _put(out, b"A", f"{_path(type(value))}@{id(value)}".encode())
    else:
        _put(out, b"O", f"{_path(type(value))}:{text}".encode("utf-8", "surrogatepass"))
