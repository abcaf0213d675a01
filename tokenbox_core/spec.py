"""Layout specs: a JSON or TOML description of sections, a budget and a counter.

``tokenbox layout SPEC`` and :func:`load_spec` read this format::

    {
      "name": "support-bot",                       optional label (batch reports use it)
      "budget": 8192,                              or an object, see below
      "counter": "gpt-4o",                         encoding, model, "bytes", "approximate" or
                                                   "whitespace"; default "o200k_base"; an unknown
                                                   model falls back to cl100k_base
      "separator": "\\n\\n",                         joins sections (text mode); default "\\n\\n"
      "mode": "text",                              or "messages" (chat messages with overhead)
      "sections": [                                at least one, in output order
        {"id": "policy", "content": "You are terse.", "role": "system"},
        {"id": "docs", "shrink": 1, "priority": 2, "basis": 300, "grow": 1,
         "eviction": "lowest_score", "omission_marker": true,
         "items": [{"id": "d1", "content": "...", "score": 0.9}]}
      ]
    }

``budget`` is an integer (``max_tokens``) or an object with the fields of
:class:`~tokenbox_core.budget.ContextBudget`: ``max_tokens`` (required),
``target_tokens``, ``output_reserve``, ``reserved_slots`` (kind → tokens) and
``estimation_safety_margin_percent``.

A section has an ``id`` and either ``content`` (a string) or ``items`` (a
list), plus any of ``priority``, ``shrink``, ``grow``, ``min_tokens``,
``max_tokens``, ``basis``, ``strategy`` (a lens name or a list of names),
``keep`` (``head``/``tail``/``middle``), ``role``, ``eviction``
(``oldest``/``newest``/``lowest_score``), ``partial``, ``omission_marker``
(``true`` or a template with ``{count}`` and ``{ids}``), ``item_separator`` and
``metadata``.  An item has an ``id`` and ``content`` plus any of ``role``,
``kind``, ``score``, ``priority``, ``group``, ``pinned``, ``tokens``, ``tags``,
``metadata``, ``source`` and ``timestamp`` (ISO 8601).  The meaning of every
field is the one of :class:`~tokenbox_core.sections.Section` and
:class:`~tokenbox_core.sections.Item`.

The same spec in TOML (``[budget]`` table, ``[[sections]]`` and
``[[sections.items]]`` arrays of tables)::

    counter = "gpt-4o"

    [budget]
    max_tokens = 8192
    output_reserve = 1024

    [[sections]]
    id = "policy"
    content = "You are terse."

Unknown fields are errors (a typo such as ``prority`` must not be ignored).
Every problem raises :class:`SpecError` naming the file and the place:

>>> parse_spec({"budget": 100, "sections": [{"id": "a", "content": "x", "prority": 1}]}, source="s.json")
Traceback (most recent call last):
...
tokenbox_core.spec.SpecError: s.json: sections[0] ('a'): unknown field 'prority'; did you mean 'priority'?
>>> spec = parse_spec({"budget": 50, "counter": "whitespace", "sections": [{"id": "a", "content": "x y z"}]})
>>> spec.layout().total_tokens
3
"""

from __future__ import annotations

import difflib
import importlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokenbox_core.box import TokenBox
from tokenbox_core.budget import ContextBudget
from tokenbox_core.errors import TokenBoxError
from tokenbox_core.layout import Layout
from tokenbox_core.sections import Item, Section

__all__ = ["LayoutSpec", "SpecError", "decode_utf8", "load_spec", "loads_spec", "parse_spec", "read_text"]

SPEC_FIELDS = ("name", "description", "budget", "counter", "separator", "mode", "sections")
BUDGET_FIELDS = ("max_tokens", "target_tokens", "output_reserve", "reserved_slots", "estimation_safety_margin_percent")
SECTION_FIELDS = (
    "id", "content", "items", "priority", "shrink", "grow", "min_tokens", "max_tokens", "basis", "strategy", "keep",
    "role", "eviction", "partial", "omission_marker", "item_separator", "metadata",
)  # fmt: skip
ITEM_FIELDS = (
    "id", "content", "role", "kind", "score", "priority", "group", "pinned", "tokens", "tags", "metadata", "source",
    "timestamp",
)  # fmt: skip
DEFAULT_COUNTER = "o200k_base"


class SpecError(TokenBoxError, ValueError):
    """A layout spec that cannot be read or is invalid; the message names the file and the field."""


@dataclass(frozen=True)
class LayoutSpec:
    """A parsed spec: everything a :class:`~tokenbox_core.box.TokenBox` layout needs."""

    sections: tuple[Section, ...]
    budget: ContextBudget
    counter: str = DEFAULT_COUNTER
    separator: str = "\n\n"
    mode: str = "text"
    name: str = ""

    def box(self) -> TokenBox:
        return TokenBox(self.budget, counter=self.counter, separator=self.separator, mode=self.mode)  # type: ignore[arg-type]

    def layout(self) -> Layout:
        """Lay the sections out (may raise ``ContextCriticalOverflow``)."""
        return self.box().layout(self.sections)


# --------------------------------------------------------------------------- reading files


def decode_utf8(data: bytes, source: str) -> str:
    """Strict UTF-8; the error names the source and the byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise SpecError(
            f"{source} is not valid UTF-8: byte 0x{bad} at offset {exc.start} ({exc.reason}); "
            f"re-encode the file as UTF-8"
        ) from None


def read_text(path: str) -> str:
    """Read a file as strict UTF-8, with errors that name the file."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SpecError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return decode_utf8(data, path)


def _parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SpecError(f"{source}: JSON nested too deeply") from None


def _toml_module(source: str) -> Any:
    """``tomllib`` (Python 3.11+), else its backport ``tomli`` (a dependency on Python 3.10)."""
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:  # pragma: no cover - Python 3.10 without tomli
            continue
    raise SpecError(f"{source}: reading TOML on Python 3.10 needs tomli: pip install tomli")  # pragma: no cover


def _parse_toml(text: str, source: str) -> Any:
    tomllib = _toml_module(source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: invalid TOML: {exc}") from None


def loads_spec(text: str, *, fmt: str = "json", source: str = "<spec>") -> LayoutSpec:
    """Parse spec text (``fmt`` is ``"json"`` or ``"toml"``)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise SpecError(f"{source}: the spec is empty; see `tokenbox layout --help` for the format")
    if fmt == "toml":
        return parse_spec(_parse_toml(text, source), source=source)
    if fmt == "json":
        return parse_spec(_parse_json(text, source), source=source)
    raise SpecError(f"{source}: unknown spec format {fmt!r}; use 'json' or 'toml'")


def load_spec(path: str | os.PathLike[str]) -> LayoutSpec:
    """Load a ``.json`` or ``.toml`` spec file (other extensions are read as JSON)."""
    path = os.fspath(path)
    fmt = "toml" if path.lower().endswith(".toml") else "json"
    return loads_spec(read_text(path), fmt=fmt, source=path)


# --------------------------------------------------------------------------- validation


def _where(source: str, place: str) -> str:
    return f"{source}: {place}" if place else source


def _check_fields(data: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
            raise SpecError(f"{where}: unknown field {key!r}{hint}")


def _mapping(value: Any, where: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: {what} must be an object, got {_type(value)}")
    return value


def _type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
             float: "a number", type(None): "null"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


def _count(value: Any, where: str, name: str) -> int:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{where}: {name} must be an integer number of tokens, got {value!r}")
    if value < 0:
        raise SpecError(f"{where}: {name} must be >= 0, got {value}")
    return value


def _budget(value: Any, source: str) -> ContextBudget:
    where = _where(source, "budget")
    if value is None:
        raise SpecError(f"{source}: missing 'budget' (an integer number of tokens or an object with max_tokens)")
    if isinstance(value, Mapping):
        _check_fields(value, BUDGET_FIELDS, where)
        if "max_tokens" not in value:
            raise SpecError(f"{where}: missing 'max_tokens'")
        kwargs = dict(value)
        for name in ("max_tokens", "target_tokens", "output_reserve"):
            if kwargs.get(name) is not None:
                kwargs[name] = _count(kwargs[name], where, name)
        if "reserved_slots" in kwargs:
            slots = _mapping(kwargs["reserved_slots"], where, "reserved_slots")
            kwargs["reserved_slots"] = {str(k): _count(v, where, f"reserved_slots[{k!r}]") for k, v in slots.items()}
    else:
        kwargs = {"max_tokens": _count(value, source, "budget")}
    try:
        return ContextBudget(**kwargs)
    except TokenBoxError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _item(value: Any, where: str) -> Item:
    data = _mapping(value, where, "an item")
    _check_fields(data, ITEM_FIELDS, where)
    if "id" not in data:
        raise SpecError(f"{where}: missing 'id'")
    kwargs = dict(data)
    if isinstance(kwargs.get("tags"), list):
        kwargs["tags"] = tuple(kwargs["tags"])
    if "timestamp" in kwargs and kwargs["timestamp"] is not None:
        stamp = kwargs["timestamp"]
        if isinstance(stamp, str):
            try:
                kwargs["timestamp"] = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            except ValueError:
                raise SpecError(f"{where}: timestamp must be ISO 8601 (2024-05-01T12:00:00Z), got {stamp!r}") from None
        elif not isinstance(stamp, datetime):  # TOML has native datetimes
            raise SpecError(f"{where}: timestamp must be an ISO 8601 string, got {stamp!r}")
    for name in ("role", "kind", "group", "source"):
        if kwargs.get(name) is not None and not isinstance(kwargs[name], str):
            raise SpecError(f"{where}: {name} must be a string, got {kwargs[name]!r}")
    if "pinned" in kwargs and not isinstance(kwargs["pinned"], bool):
        raise SpecError(f"{where}: pinned must be true or false, got {kwargs['pinned']!r}")
    try:
        return Item(**kwargs)
    except TokenBoxError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _section(value: Any, index: int, source: str) -> Section:
    where = _where(source, f"sections[{index}]")
    data = _mapping(value, where, "a section")
    if "id" in data and isinstance(data["id"], str) and data["id"]:
        where = f"{where} ({data['id']!r})"
    _check_fields(data, SECTION_FIELDS, where)
    if "id" not in data:
        raise SpecError(f"{where}: missing 'id'")
    kwargs = dict(data)
    if "content" in kwargs and "items" in kwargs:
        raise SpecError(f"{where}: give either 'content' (text) or 'items' (a list), not both")
    if "items" in kwargs:
        items = kwargs.pop("items")
        if not isinstance(items, list):
            raise SpecError(f"{where}: items must be a list of objects, got {_type(items)}")
        kwargs["content"] = [_item(it, f"{where}.items[{i}]") for i, it in enumerate(items)]
    elif "content" in kwargs and not isinstance(kwargs["content"], str):
        raise SpecError(f"{where}: content must be a string, got {_type(kwargs['content'])}; put a list under 'items'")
    for name in ("min_tokens", "max_tokens", "basis"):
        if kwargs.get(name) is not None:
            kwargs[name] = _count(kwargs[name], where, name)
    strategy = kwargs.get("strategy")
    if strategy is not None:
        names = [strategy] if isinstance(strategy, str) else strategy
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise SpecError(f"{where}: strategy must be a lens name or a list of lens names, got {strategy!r}")
        from tokenbox_core.lenses import LIST_LENSES, get_lens

        for lens in names:
            if lens not in LIST_LENSES:
                try:
                    get_lens(lens)
                except TokenBoxError as exc:
                    raise SpecError(f"{where}: {exc}") from None
        kwargs["strategy"] = tuple(names)
    for name in ("role", "keep", "eviction", "item_separator"):
        if kwargs.get(name) is not None and not isinstance(kwargs[name], str):
            raise SpecError(f"{where}: {name} must be a string, got {kwargs[name]!r}")
    if "partial" in kwargs and not isinstance(kwargs["partial"], bool):
        raise SpecError(f"{where}: partial must be true or false, got {kwargs['partial']!r}")
    try:
        return Section(**kwargs)
    except TokenBoxError as exc:
        message = str(exc)
        prefix = f"section {data['id']!r}: "
        raise SpecError(f"{where}: {message.removeprefix(prefix)}") from None


def parse_spec(data: Any, *, source: str = "<spec>") -> LayoutSpec:
    """Validate parsed JSON/TOML data and build the spec."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: a spec must be an object with 'budget' and 'sections', got {_type(data)}")
    if not data:
        raise SpecError(f"{source}: the spec is empty; it needs 'budget' and 'sections'")
    _check_fields(data, SPEC_FIELDS, source)
    budget = _budget(data.get("budget"), source)
    counter = data.get("counter", DEFAULT_COUNTER)
    if not isinstance(counter, str) or not counter:
        raise SpecError(f"{source}: counter must be a non-empty string such as 'gpt-4o', got {counter!r}")
    separator = data.get("separator", "\n\n")
    if not isinstance(separator, str):
        raise SpecError(f"{source}: separator must be a string, got {_type(separator)}")
    mode = data.get("mode", "text")
    if mode not in ("text", "messages"):
        raise SpecError(f"{source}: mode must be 'text' or 'messages', got {mode!r}")
    name = data.get("name", "")
    if not isinstance(name, str):
        raise SpecError(f"{source}: name must be a string, got {_type(name)}")
    sections = data.get("sections")
    if sections is None:
        raise SpecError(f"{source}: missing 'sections' (a list of sections to lay out)")
    if not isinstance(sections, list):
        raise SpecError(f"{source}: sections must be a list, got {_type(sections)}")
    if not sections:
        raise SpecError(f"{source}: sections is empty; give at least one section")
    built = [_section(s, i, source) for i, s in enumerate(sections)]
    seen: set[str] = set()
    for i, section in enumerate(built):
        if section.id in seen:
            raise SpecError(f"{source}: sections[{i}]: duplicate section id {section.id!r}")
        seen.add(section.id)
    return LayoutSpec(sections=tuple(built), budget=budget, counter=counter, separator=separator, mode=mode, name=name)
