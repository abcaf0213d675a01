"""Sections and Items: the typed blocks a Token Box lays out.

A :class:`Section` holds either text or a list of :class:`Item` (messages,
documents, memories).  Its layout constraints are the Token Box Model's
(``docs/concepts.md``, "Sections and items"): ``priority``
(lower is lost first), ``min_tokens`` (guaranteed size), ``max_tokens`` (cap),
``basis`` (initial claim before expansion), ``grow`` and ``shrink`` weights and
a ``strategy`` (lens pipeline).  ``shrink == 0`` (the default) makes a section
*critical*: never compressed, truncated or dropped.

Both classes validate at construction and raise
:class:`~tokenbox_core.errors.SectionError` naming the field and the value.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat
from operator import attrgetter
from typing import Any, Literal

from tokenbox_core._arguments import suggest_keywords
from tokenbox_core._frozen import FrozenDict
from tokenbox_core.errors import LensError, SectionError
from tokenbox_core.lenses import check_lens_name

__all__ = ["Eviction", "Item", "Section", "validate_sections"]

Eviction = Literal["oldest", "newest", "lowest_score"]
"""Order in which a list section loses whole items: oldest first (history),
newest first, or lowest ``score`` first (evidence; ties lose the later item)."""

_KEEPS = ("head", "tail", "middle")
_ID = attrgetter("id")
_EVICTIONS = ("oldest", "newest", "lowest_score")
MARKER_FIELDS = ("count", "ids", "first", "last")
"""The fields an omission-marker template may use: the number of removed items, their ids, the first and last id."""
_MARKER_SAMPLE = {"count": 2, "ids": "a, b", "first": "a", "last": "b"}
_FIELD_LIST = ", ".join("{" + f + "}" for f in MARKER_FIELDS)


def check_marker_template(owner: str, template: str) -> None:
    """Reject an omission-marker template unless it formats with the documented fields only.

    Allowed: ``{count}``, ``{ids}``, ``{first}``, ``{last}`` (with an optional
    conversion or format spec) and literal braces written ``{{``/``}}``.
    Rejected, with the fix: unknown names, positional fields (``{}``,
    ``{0}``), attribute or index access (``{ids.__class__}``, ``{ids[0]}``),
    nested fields and unbalanced braces.
    """
    problem = _template_problem(template)
    if problem is not None:
        raise SectionError(f"{owner}: omission_marker template {template!r} {problem}")


def _template_problem(template: str) -> str | None:
    """What is wrong with a template, or ``None``."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"is malformed ({exc}); write literal braces as {{{{ and }}}} and fields as {_FIELD_LIST}"
    for _, name, spec, _ in parsed:
        if name is None:
            continue
        if name not in MARKER_FIELDS:
            what = "a positional field" if name == "" or name.isdigit() else f"the field {{{name}}}"
            return f"uses {what}; a template may use only {_FIELD_LIST}"
        if spec and "{" in spec:
            return f"nests a field in a format spec; a template may use only {_FIELD_LIST}"
    try:
        template.format(**_MARKER_SAMPLE)
    except (ValueError, TypeError) as exc:
        return f"cannot be formatted: {exc}"
    return None


def _check_number(owner: str, name: str, value: object) -> None:
    """A real, finite-or-infinite number that converts to float (``10**400`` does not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SectionError(f"{owner}: {name} must be a number, got {value!r}")
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            digits = int(abs(value).bit_length() * 0.30103) + 1  # str() refuses over 4,300 digits
            raise SectionError(
                f"{owner}: {name} is too large to compare as a number (about {digits:,} digits); "
                f"use a value below 1e308"
            ) from None
    elif math.isnan(value):
        raise SectionError(f"{owner}: {name} must not be NaN")


def _check_id(owner: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise SectionError(f"{owner} id must be a non-empty string, got {value!r}")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SectionError(
                f"{owner} id {value!r} is not valid Unicode (a lone surrogate at index {exc.start}); "
                f"decode your input with errors='replace' or remove the surrogate"
            ) from None
    return value


def _check_weight(owner: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SectionError(f"{owner}: {name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise SectionError(f"{owner}: {name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_count(owner: str, name: str, value: object, *, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SectionError(f"{owner}: {name} must be an integer, got {value!r}")
    if value < 0:
        raise SectionError(f"{owner}: {name} must be >= 0, got {value}")
    return value


@suggest_keywords
@dataclass(frozen=True, eq=True)
class Item:
    """One element of a list section: a message, a document, a memory.

    The fields beyond ``id`` and ``content`` serve eviction and item selection
    (``tokenbox_core.select``):

    - ``role``: chat role when the item is a message.
    - ``kind``: what it is (``"Message"``, ``"Document"``, ``"Memory"``,
      ``"ToolOutput"``, ``"SystemPrompt"``, or your own).
    - ``score``: relevance score or hint (a retrieval score); evidence is
      evicted lowest score first.
    - ``priority``: within a section, a lower-priority item is evicted first.
    - ``group``: items sharing a group are atomic (an assistant tool call and
      all its results): kept or removed together.
    - ``pinned``: evicted only after every unpinned item of the section.
    - ``tokens``: a size the caller vouches for (the item's whole emitted
      cost, separator or chat overhead included), used instead of counting
      ``content``: for messages whose tool-call payloads or chat overhead are
      not plain text, and by selection.  It holds only for the original
      content: a lens or a cut re-counts the item, and a vouched item is never
      partially cut.  Totals are exact re-counts except for vouched sizes.
    - ``tags``, ``metadata``, ``timestamp``, ``source``: data for scorers.
    """

    id: str
    content: str = ""
    role: str | None = None
    kind: str | None = None
    score: float | None = None
    priority: int | None = None
    group: str | None = None
    pinned: bool = False
    tokens: int | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    timestamp: datetime | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        _check_id("item", self.id)
        owner = f"item {self.id!r}"
        if isinstance(self.content, bytes | bytearray | memoryview):
            raise SectionError(
                f"{owner}: content is {type(self.content).__name__}; decode it to str first "
                f"(e.g. data.decode('utf-8', errors='replace'))"
            )
        if not isinstance(self.content, str):
            raise SectionError(f"{owner}: content must be a string, got {type(self.content).__name__}")
        if self.score is not None:
            _check_number(owner, "score", self.score)
        if self.priority is not None and (isinstance(self.priority, bool) or not isinstance(self.priority, int)):
            raise SectionError(f"{owner}: priority must be an integer, got {self.priority!r}")
        if self.tokens is not None and (isinstance(self.tokens, bool) or not isinstance(self.tokens, int)):
            raise SectionError(f"{owner}: tokens must be an integer, got {self.tokens!r}")
        tags = self.tags
        if isinstance(tags, str):
            raise SectionError(f"{owner}: tags must be a sequence of strings, not one string {tags!r}")
        if type(tags) is not tuple:
            if not isinstance(tags, Sequence | set | frozenset):
                raise SectionError(f"{owner}: tags must be a sequence of strings, got {type(tags).__name__}")
            tags = tuple(sorted(tags) if isinstance(tags, set | frozenset) else tags)
            object.__setattr__(self, "tags", tags)
        for tag in tags:
            if not isinstance(tag, str):
                raise SectionError(f"{owner}: tags must be strings, got {tag!r} ({type(tag).__name__})")
        if not isinstance(self.metadata, Mapping):
            raise SectionError(f"{owner}: metadata must be a mapping, got {type(self.metadata).__name__}")
        object.__setattr__(self, "metadata", FrozenDict(dict(self.metadata)))

    def __hash__(self) -> int:
        return hash((self.id, self.content))


Lens = Callable[..., str]


@suggest_keywords
@dataclass(frozen=True, eq=False)
class Section:
    """A typed block of prompt material with layout constraints.

    Args:
        id: unique within a layout.
        content: text, or a sequence of :class:`Item`.
        priority: removal order; lower is lost first.  Ties: higher ``shrink``
            first, then declaration order.
        min_tokens: guaranteed size once kept; a section is only dropped after
            being cut to this size.
        max_tokens: a cap: content beyond it is cut even when there is room.
        basis: the size the section claims before expansion (e.g. 5 of 20
            documents); ``None`` claims the whole content.  Sections with
            ``grow > 0`` then share free space in proportion to ``grow``.
        grow: expansion weight.
        shrink: compression weight; ``0`` (default) makes the section critical.
        strategy: the lens pipeline applied before truncation, by name
            (see :mod:`tokenbox_core.lenses`; an unknown name is an error
            here, with a suggestion) or as callables.
        keep: which part of text survives truncation: ``"head"`` (cut the
            tail, default), ``"tail"`` (cut the head) or ``"middle"`` (keep
            both ends, cut the middle).
        role: chat role of a text section (message-mode layouts, ``Layout.messages``).
        eviction: order in which list items are removed (see :data:`Eviction`).
        partial: allow cutting the boundary item of a list instead of removing it.
        omission_marker: leave a marker listing removed item ids; ``True`` uses
            the default template, a string is a template using ``{count}``,
            ``{ids}``, ``{first}`` and ``{last}`` only (checked here).
        item_separator: joins the items of a list section.
        policy: an item-selection policy (``tokenbox_core.select``) deciding
            which items fill the section's allocation and in which order.
        metadata: free data carried into the layout report.
    """

    id: str
    content: str | Sequence[Item] = ""
    priority: int = 0
    min_tokens: int = 0
    max_tokens: int | None = None
    basis: int | None = None
    grow: float = 0.0
    shrink: float = 0.0
    strategy: tuple[str | Lens, ...] = ()
    keep: Literal["head", "tail", "middle"] = "head"
    role: str | None = None
    eviction: Eviction = "oldest"
    partial: bool = False
    omission_marker: bool | str = False
    item_separator: str = "\n"
    policy: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_id("section", self.id)
        owner = f"section {self.id!r}"
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise SectionError(f"{owner}: priority must be an integer, got {self.priority!r}")
        _check_count(owner, "min_tokens", self.min_tokens)
        max_tokens = _check_count(owner, "max_tokens", self.max_tokens, allow_none=True)
        if max_tokens is not None and max_tokens < self.min_tokens:
            raise SectionError(f"{owner}: min_tokens ({self.min_tokens}) must be <= max_tokens ({max_tokens})")
        _check_count(owner, "basis", self.basis, allow_none=True)
        object.__setattr__(self, "grow", _check_weight(owner, "grow", self.grow))
        object.__setattr__(self, "shrink", _check_weight(owner, "shrink", self.shrink))
        if self.keep not in _KEEPS:
            raise SectionError(f"{owner}: keep must be one of {_KEEPS}, got {self.keep!r}")
        if self.eviction not in _EVICTIONS:
            raise SectionError(f"{owner}: eviction must be one of {_EVICTIONS}, got {self.eviction!r}")
        strategy = (self.strategy,) if isinstance(self.strategy, str) or callable(self.strategy) else self.strategy
        strategy = tuple(strategy)
        for lens in strategy:
            if isinstance(lens, str):
                try:
                    check_lens_name(lens)
                except LensError as exc:
                    raise SectionError(f"{owner}: {exc}") from None
            elif not callable(lens):
                raise SectionError(f"{owner}: strategy entries must be lens names or callables, got {lens!r}")
        object.__setattr__(self, "strategy", strategy)
        if not isinstance(self.item_separator, str):
            raise SectionError(f"{owner}: item_separator must be a string")
        if not isinstance(self.omission_marker, bool | str):
            raise SectionError(f"{owner}: omission_marker must be a bool or a template string")
        if isinstance(self.omission_marker, str):
            check_marker_template(owner, self.omission_marker)
        if isinstance(self.content, str):
            pass
        elif isinstance(self.content, bytes | bytearray | memoryview):
            raise SectionError(
                f"{owner}: content is {type(self.content).__name__}; decode it to str first "
                f"(e.g. data.decode('utf-8', errors='replace'))"
            )
        elif isinstance(self.content, Sequence):
            items = tuple(self.content)
            seen: set[str] = set()
            for item in items:
                if not isinstance(item, Item):
                    raise SectionError(
                        f"{owner}: list content must hold Item objects, got {type(item).__name__}; "
                        f"wrap text in Item(id=..., content=...)"
                    )
                if item.id in seen:
                    raise SectionError(f"{owner}: duplicate item id {item.id!r}; item ids must be unique")
                seen.add(item.id)
            object.__setattr__(self, "content", items)
        else:
            raise SectionError(
                f"{owner}: content must be a string or a sequence of Item, got {type(self.content).__name__}"
            )
        if not isinstance(self.metadata, Mapping):
            raise SectionError(f"{owner}: metadata must be a mapping")
        object.__setattr__(self, "metadata", FrozenDict(dict(self.metadata)))

    @property
    def critical(self) -> bool:
        """``shrink == 0``: never compressed, truncated or dropped."""
        return self.shrink == 0

    @property
    def is_list(self) -> bool:
        return not isinstance(self.content, str)

    @property
    def items(self) -> tuple[Item, ...]:
        return self.content if isinstance(self.content, tuple) else ()


def validate_sections(sections: Sequence[Section]) -> tuple[Section, ...]:
    """Check a layout's section list: non-empty, Section objects, unique ids."""
    if isinstance(sections, Section):
        sections = [sections]
    if not isinstance(sections, Sequence) or isinstance(sections, str):
        raise SectionError(f"sections must be a list of Section, got {type(sections).__name__}")
    out = tuple(sections)
    if not out:
        raise SectionError("no sections to lay out: pass at least one Section")
    if all(map(isinstance, out, repeat(Section))) and len(set(map(_ID, out))) == len(out):
        return out  # the common case, checked in C; otherwise the loop below names the problem
    seen: set[str] = set()
    for section in out:
        if not isinstance(section, Section):
            raise SectionError(f"sections must be Section objects, got {type(section).__name__}")
        if section.id in seen:
            raise SectionError(f"duplicate section id {section.id!r}; section ids must be unique in a layout")
        seen.add(section.id)
    return out
