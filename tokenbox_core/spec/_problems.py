"""pydantic's validation errors, said the house way: the file, the place, the field, the value and the fix.

pydantic reports every problem with a location tuple such as
``("sections", 0, "items", 2, "scroe")``; this module turns the first one into
``s.json: sections[0] ('docs').items[2]: unknown field 'scroe'; did you mean
'score'?`` — the section's id in the place, a suggestion for a misspelt field,
and the value shown the way the user wrote it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["describe_error", "place", "shown"]

SPEC_FIELDS = ("$schema", "name", "description", "budget", "counter", "separator", "mode", "sections")
BUDGET_FIELDS = ("max_tokens", "target_tokens", "output_reserve", "reserved_slots", "estimation_safety_margin_percent")
SECTION_FIELDS = (
    "id", "content", "items", "priority", "shrink", "grow", "min_tokens", "max_tokens", "basis", "strategy", "keep",
    "role", "eviction", "partial", "omission_marker", "item_separator", "metadata",
)  # fmt: skip
ITEM_FIELDS = (
    "id", "content", "role", "kind", "score", "priority", "group", "pinned", "tokens", "tags", "metadata", "source",
    "timestamp",
)  # fmt: skip

EXPECTED = {
    "budget": "an integer number of tokens",
    "strategy": "a lens name or a list of lens names",
    "omission_marker": "true, false or a template string using {count} and {ids}",
    "sections": "a list",
    "items": "a list of objects",
    "content": "a string",
    "id": "a non-empty string",
    "counter": "a non-empty string such as 'gpt-4o'",
    "mode": "'text' or 'messages'",
    "keep": "one of 'head', 'tail', 'middle'",
    "eviction": "one of 'oldest', 'newest', 'lowest_score'",
    "shrink": "a finite number >= 0",
    "grow": "a finite number >= 0",
    "score": "a number",
    "estimation_safety_margin_percent": "a number between 0 and 100",
    "priority": "an integer",
    "pinned": "true or false",
    "partial": "true or false",
    "tags": "a list of strings",
    "metadata": "an object",
    "reserved_slots": "an object mapping item kinds to token counts",
}
"""What each field must be, in the words of the error message (fields not listed: by their type)."""
COUNTS = ("max_tokens", "target_tokens", "output_reserve", "min_tokens", "basis", "tokens")
WHOLE_FIELD = ("budget", "strategy", "omission_marker")
"""Fields that accept more than one form: an error anywhere inside one is reported on the whole value."""
FIXES = {"content": "put a list under 'items'", "budget": "or give an object with max_tokens"}
MISSING = {
    "budget": " (an integer number of tokens or an object with max_tokens)",
    "sections": " (a list of sections to lay out)",
}
_TYPE_WORDS = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}  # fmt: skip


def type_word(value: Any) -> str:
    return _TYPE_WORDS.get(type(value), type(value).__name__)


def shown(value: Any) -> str:
    """A value as the user wrote it: scalars by ``repr``, objects and lists by their kind."""
    if isinstance(value, Mapping | list | tuple):
        return type_word(dict() if isinstance(value, Mapping) else [])
    return repr(value)


def _known_fields(loc: Sequence[Any]) -> tuple[str, ...]:
    """The fields of the object at ``loc`` (a location inside the raw spec data)."""
    names = [p for p in loc if isinstance(p, str)]
    if not names:
        return SPEC_FIELDS
    return {"budget": BUDGET_FIELDS, "sections": SECTION_FIELDS, "items": ITEM_FIELDS}.get(names[-1], ())


def place(loc: Sequence[Any], data: Any, source: str) -> str:
    """``source: sections[0] ('docs').items[2]`` for a location in the raw data (a section shows its id)."""
    text = ""
    node: Any = data
    for i, part in enumerate(loc):
        if isinstance(part, int):
            text += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            section = i == 1 and loc[0] == "sections"
            if section and isinstance(node, Mapping) and isinstance(node.get("id"), str) and node["id"]:
                text += f" ({node['id']!r})"
        elif isinstance(node, Mapping) and part in node:
            text += f".{part}" if text else part
            node = node[part]
    return f"{source}: {text}" if text else source


_ABSENT = object()


def _child(node: Any, part: Any) -> Any:
    """``node[part]`` in the raw data, or ``_ABSENT`` (a pydantic union tag, a missing key)."""
    if isinstance(part, int) and isinstance(node, list) and part < len(node):
        return node[part]
    if isinstance(node, Mapping) and part in node:
        return node[part]
    return _ABSENT


def _value_at(loc: Sequence[Any], data: Any) -> Any:
    node = data
    for part in loc:
        child = _child(node, part)
        if child is not _ABSENT:
            node = child
    return node


def _split(loc: Sequence[Any], data: Any) -> tuple[list[Any], list[Any]]:
    """Split a location into (the containing object, the field and anything below it)."""
    loc = list(loc)
    node = data
    for i, part in enumerate(loc):
        child = _child(node, part)
        # a field that accepts several forms is reported as a whole (the budget's object form field by field)
        if (
            part in WHOLE_FIELD
            and isinstance(node, Mapping)
            and child is not _ABSENT
            and not isinstance(child, Mapping)
        ):
            return loc[:i], [part]
        if child is not _ABSENT:
            node = child
    for i in range(len(loc) - 1, -1, -1):  # the deepest field name of a spec object
        part = loc[i]
        if isinstance(part, str) and part in _known_fields(loc[:i]):
            return loc[:i], loc[i:]
    return loc[:-1], loc[-1:]


def _field_expr(tail: Sequence[Any]) -> str:
    text = str(tail[0])
    for part in tail[1:]:
        text += f"[{part!r}]" if isinstance(part, int | str) else ""
    return text


def describe_error(error: Mapping[str, Any], data: Any, source: str) -> str:
    """One pydantic error (an entry of ``ValidationError.errors()``) as a one-line house-style message."""
    raw = tuple(error.get("loc", ()))
    # drop the budget's union tags ("tokens" / "object"): they name a form, not a place in the file
    loc = tuple(p for i, p in enumerate(raw) if not (i and raw[i - 1] == "budget" and p in ("tokens", "object")))
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        known = _known_fields(loc[:-1])
        name = str(loc[-1])
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
        return f"{place(loc[:-1], data, source)}: unknown field {name!r}{hint}"
    if kind == "missing":
        name = str(loc[-1])
        return f"{place(loc[:-1], data, source)}: missing {name!r}{MISSING.get(name, '')}"
    if kind == "spec":  # our own messages (timestamps, content-or-items) are complete
        where, tail = _split(loc, data)
        return f"{place(where if tail else loc, data, source)}: {error['msg']}"
    element = len(loc) >= 2 and isinstance(loc[-1], int) and loc[-2] in ("sections", "items")
    if element and kind in ("model_type", "dict_type", "model_attributes_type"):
        what = "a section" if loc[-2] == "sections" else "an item"
        return f"{place(loc, data, source)}: {what} must be an object, got {type_word(_value_at(loc, data))}"
    where, tail = _split(loc, data)
    if not tail:
        return f"{place(loc, data, source)}: {error.get('msg', 'invalid value')}"
    field = _field_expr(tail)
    value = _value_at(list(where) + list(tail[:1]) if tail[0] in WHOLE_FIELD else loc, data)
    head = place(where, data, source)
    if kind == "string_unicode":
        return (
            f"{head}: {field} is not valid Unicode (it contains a lone surrogate, {shown(value)}); fix the text "
            f"or decode it with errors='replace'"
        )
    if kind == "too_short" and tail[0] == "sections":
        return f"{head}: sections is empty; give at least one section"
    ctx = error.get("ctx") or {}
    if kind in ("greater_than_equal", "less_than_equal") and (len(tail) > 1 or tail[0] not in EXPECTED):
        sign = ">=" if kind == "greater_than_equal" else "<="
        bound = ctx.get("ge", ctx.get("le"))
        return f"{head}: {field} must be {sign} {bound}, got {shown(value)}"
    if kind == "finite_number":
        expected = "a finite number"
    elif kind.endswith("_type") and tail[0] in ("shrink", "grow", "estimation_safety_margin_percent"):
        expected = "a number"
    elif tail[0] in EXPECTED:
        expected = EXPECTED[tail[0]]
    elif tail[0] in COUNTS:
        expected = "an integer number of tokens"
    else:
        expected = "a string"
    if kind == "greater_than_equal" and tail[0] == "budget":
        return f"{head}: budget must be >= 0, got {shown(value)}"
    fix = FIXES.get(tail[0], "")
    return f"{head}: {field} must be {expected}, got {shown(value)}" + (f"; {fix}" if fix else "")
