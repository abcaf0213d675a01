"""The layout memo: a re-layout of unchanged inputs returns the previous decisions without redoing them (issue 16 §1).

A :class:`~tokenbox_core.box.TokenBox` remembers its last :data:`MEMO_ENTRIES`
layouts (most recent first; each entry holds references to its input
sections and its :class:`~tokenbox_core.layout.Layout`, no copies, so the
memo's memory is bounded by what those layouts already hold).  A call whose
inputs are equal to a remembered call's returns that layout's decisions —
sections, totals, fingerprint, input hash — under a fresh trace id,
timestamp and latency (``docs/concepts.md#the-token-box``, determinism
rule: equal inputs give the identical layout).

What "equal inputs" means is what :func:`~tokenbox_core.box.inputs.input_hash`
covers: the box's budget, counter, separator, mode and ``strict`` (and its
``config_version``, which the trace records), and every field of every
section in order.  Keying is cheap:

- the box's configuration: its counter by identity, the rest (a frozen
  :class:`~tokenbox_core.budget.ContextBudget`, strings, flags) by value;
- each section is compared by identity first (the common case: the caller
  passes the same frozen :class:`~tokenbox_core.sections.Section` objects),
  then field by field (:func:`same_value`): identical objects, strings and
  numbers of the same type (``1`` and ``1.0`` differ, as they do in the
  input hash and in a report), tuples and items element by element,
  anything else by its canonical encoding.  Nothing is hashed: a string
  comparison stops at the first difference, and no input is copied.

A memo never returns a stale result because every field it keys on is
immutable: sections and items are frozen, their lists are tuples and their
metadata frozen mappings.  Inputs that could change behind a frozen field —
a selection ``policy`` that is not a frozen dataclass, a strategy entry that
is neither a lens name nor a plain function (a callable object can hold
mutable state) — make the call bypass the memo (:func:`memo_safe`).  Lens
and scorer functions are taken to be deterministic functions of their
arguments, as the determinism rule already requires.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import types
import uuid
from collections.abc import Mapping
from itertools import compress
from operator import is_not
from typing import Any

from tokenbox_core.layout import Layout
from tokenbox_core.sections import Item, Section

from .inputs import canonical_bytes
from .state import MEMO_ATTR

__all__ = ["MEMO_ENTRIES", "LayoutMemo", "memo_safe", "same_config", "same_value"]

MEMO_ENTRIES = 4
"""At most this many layouts are remembered per box (least recently used goes first)."""
SAFE_KEY = "memo_safe"

_PLAIN_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType)


def memo_safe(section: Section) -> bool:
    """Whether every input of ``section`` is immutable (a memo keyed on it can never go stale); cached."""
    memo = section.__dict__.get(MEMO_ATTR)
    safe: bool | None = memo.get(SAFE_KEY) if memo is not None else None
    if safe is None:
        safe = _frozen_value(section.policy) and all(
            isinstance(lens, (str, *_PLAIN_FUNCTIONS)) or _frozen_dataclass(lens) for lens in section.strategy
        )
        if memo is None:
            memo = {}
            object.__setattr__(section, MEMO_ATTR, memo)
        memo[SAFE_KEY] = safe  # beside the measurements (a Section pickles without them)
    return safe


def _frozen_dataclass(value: Any) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return params is not None and bool(params.frozen) and not isinstance(value, type)


def _frozen_value(value: Any) -> bool:
    return value is None or _frozen_dataclass(value)


class _Entry:
    __slots__ = ("config", "layout", "sections")

    def __init__(self, config: tuple[Any, ...], sections: tuple[Section, ...], layout: Layout) -> None:
        self.config = config
        self.sections = sections
        self.layout = layout


class LayoutMemo:
    """The last :data:`MEMO_ENTRIES` layouts of one box, keyed by their inputs (see the module docstring)."""

    __slots__ = ("_entries", "_lock", "hits")

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()  # a box may serve several threads: entries move under it
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, config: tuple[Any, ...], sections: tuple[Section, ...]) -> Layout | None:
        """A fresh copy (new trace id, timestamp, latency) of the remembered layout of equal inputs, or None."""
        started = time.perf_counter()
        for entry in list(self._entries):
            if same_config(entry.config, config) and _same_sections(entry.sections, sections):
                with self._lock:
                    if entry in self._entries:  # most recently used first
                        self._entries.remove(entry)
                        self._entries.insert(0, entry)
                    self.hits += 1
                old = entry.layout
                return dataclasses.replace(
                    old,
                    latency_ms=(time.perf_counter() - started) * 1000.0,
                    trace_id=str(uuid.uuid4()),
                    timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    _cache=dict(old._cache),  # text, fingerprint, input hash: all decided by the inputs
                )
        return None

    def remember(self, config: tuple[Any, ...], sections: tuple[Section, ...], layout: Layout, safe: bool) -> None:
        """Remember ``layout`` as the result of ``sections`` under ``config`` if ``safe`` (see :func:`memo_safe`)."""
        if not safe:
            return
        with self._lock:
            self._entries.insert(0, _Entry(config, sections, layout))
            del self._entries[MEMO_ENTRIES:]


def same_config(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """The box's ruler and counter by identity (they do the counting), the rest (budget, flags) by value."""
    return a[0] is b[0] and a[1] is b[1] and all(same_value(x, y) for x, y in zip(a[2:], b[2:], strict=True))


def _same_sections(old: tuple[Section, ...], new: tuple[Section, ...]) -> bool:
    if old is new:
        return True
    if len(old) != len(new):
        return False
    differ = compress(range(len(new)), map(is_not, old, new))  # identity first, in one C-level pass
    return all(type(new[i]) is Section and same_value(old[i], new[i]) for i in differ)


_SCALARS = (str, int, bool, bytes, type(None))
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in (Section, Item)}


def same_value(x: Any, y: Any) -> bool:
    """Whether ``x`` and ``y`` are inputs that encode alike (:func:`~.inputs.canonical_bytes`), checked cheaply."""
    if x is y:
        return True
    kind = type(x)
    if kind is not type(y):
        return False
    if kind in _SCALARS:
        return bool(x == y)
    if kind is float:
        return x.hex() == y.hex()  # type: ignore[no-any-return]  # -0.0 is not 0.0; a NaN is itself
    if kind is tuple or kind is list:
        return len(x) == len(y) and all(same_value(a, b) for a, b in zip(x, y, strict=True))
    names = _FIELDS.get(kind)
    if names is not None:  # a Section or an Item: the text first (most likely to differ, compared in C)
        return same_value(x.content, y.content) and all(same_value(getattr(x, n), getattr(y, n)) for n in names)
    if isinstance(x, Mapping) and not x and not y:
        return True
    if kind in _PLAIN_FUNCTIONS:
        return False  # functions are the same only when they are the same object
    return canonical_bytes(x, []) == canonical_bytes(y, [])
