"""Lenses: deterministic compression strategies named in ``Section.strategy``.

A lens is one callable, ``lens(text, target, counter) -> text``: it rewrites
text toward ``target`` units (it may stop above it; truncation does the rest)
and must never grow its input.  Built-in lenses:

====================  =========================================================
``whitespace``        collapse runs of spaces/tabs, trailing spaces, 3+ newlines
``json_minify``       canonical JSON (sorted keys, no spaces) when text is JSON
``dedupe_lines``      drop repeated non-blank lines, keeping the first
``sentences``         keep whole leading sentences that fit ``target``
``truncate_tail``     keep the head, cut the tail, mark the cut with ``…``
``truncate_head``     keep the tail, cut the head, mark the cut with ``…``
``truncate_middle``   keep both ends, cut the middle, mark the cut with ``…``
====================  =========================================================

A lens that cannot apply leaves the text unchanged (``json_minify`` on text
that is not JSON, or JSON nested deeper than the parser goes); the
``truncate_*`` lenses add their marker only when it fits the target and the
marked cut is smaller than the text (in ``bytes`` units ``…`` costs 3).

and two list lenses that set a list section's eviction order:
``drop_oldest`` and ``drop_lowest_score`` (removed items leave an omission
marker listing their ids).  Register your own with :func:`register_lens`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable

from tokenbox_core.errors import LensError
from tokenbox_core.tokens import Keep, TokenCounter, canonical_json

__all__ = ["LIST_LENSES", "Lens", "apply_lens", "check_lens_name", "get_lens", "lens_name", "register_lens"]

TRUNCATION_MARKER = "…"


Lens = Callable[[str, int, TokenCounter], str]
"""A lens: ``lens(text, target, counter) -> text``, deterministic, never growing its input."""


_SPACES = re.compile(r"[ \t\f\v]+")
_TRAILING = re.compile(r"[ \t]+\n")
_BLANKS = re.compile(r"\n{3,}")
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+[\"')\]]*|\n|$)\s*")


def whitespace(text: str, target: int, counter: TokenCounter) -> str:
    """Collapse runs of blanks, strip trailing blanks, keep at most one empty line."""
    out = _TRAILING.sub("\n", _SPACES.sub(" ", text))
    return _BLANKS.sub("\n\n", out).strip()


def json_minify(text: str, target: int, counter: TokenCounter) -> str:
    """Canonical minified JSON (sorted keys, fixed separators) when the text is JSON; else unchanged."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return text
    try:
        return canonical_json(json.loads(stripped))
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes: leave it
        return text


def dedupe_lines(text: str, target: int, counter: TokenCounter) -> str:
    """Remove repeated non-blank lines (exact match after stripping), keeping the first."""
    seen: set[str] = set()
    out = []
    for line in text.split("\n"):
        key = line.strip()
        if key:
            if key in seen:
                continue
            seen.add(key)
        out.append(line)
    return "\n".join(out)


def sentences(text: str, target: int, counter: TokenCounter) -> str:
    """Keep whole leading sentences while they fit ``target``; at least nothing is grown."""
    if counter.count(text) <= target:
        return text
    pieces = [m.group(0) for m in _SENTENCE.finditer(text) if m.group(0)]
    lo, hi = 0, len(pieces)
    while lo < hi:  # the most sentences that fit
        mid = (lo + hi + 1) // 2
        if counter.count("".join(pieces[:mid]).rstrip()) <= target:
            lo = mid
        else:
            hi = mid - 1
    return "".join(pieces[:lo]).rstrip()


def _marked_cut(keep: Keep) -> Callable[[str, int, TokenCounter], str]:
    def lens(text: str, target: int, counter: TokenCounter) -> str:
        size = counter.count(text)
        if size <= target:
            return text
        room = target - counter.count(TRUNCATION_MARKER)
        if room <= 0:  # the marker alone fills the target: cut without it (a marker is an aid, not content)
            return counter.truncate(text, max(0, target), keep=keep)
        if keep == "head":
            out = counter.truncate(text, room, keep="head").rstrip() + TRUNCATION_MARKER
        elif keep == "tail":
            out = TRUNCATION_MARKER + counter.truncate(text, room, keep="tail").lstrip()
        else:
            half = room // 2
            head = counter.truncate(text, room - half, keep="head")
            tail = counter.truncate(text, half, keep="tail") if half else ""
            out = head.rstrip() + TRUNCATION_MARKER + tail.lstrip()
        if counter.count(out) >= size:  # the marker would cost what the cut saved: cut without it
            return counter.truncate(text, max(0, target), keep=keep)
        return out

    lens.__name__ = {"head": "truncate_tail", "tail": "truncate_head", "middle": "truncate_middle"}[keep]
    lens.__doc__ = f"Cut to ``target`` keeping the {keep}, marking the cut with an ellipsis."
    return lens


_REGISTRY: dict[str, Lens] = {
    "whitespace": whitespace,
    "json_minify": json_minify,
    "dedupe_lines": dedupe_lines,
    "sentences": sentences,
    "truncate_tail": _marked_cut("head"),
    "truncate_head": _marked_cut("tail"),
    "truncate_middle": _marked_cut("middle"),
}

LIST_LENSES = {"drop_oldest": "oldest", "drop_lowest_score": "lowest_score"}
"""List lenses and the eviction order each selects."""


def register_lens(name: str, lens: Lens, *, replace: bool = False) -> None:
    """Register a lens under ``name`` so sections can name it in ``strategy``."""
    if not isinstance(name, str) or not name:
        raise LensError(f"a lens name must be a non-empty string, got {name!r}")
    if not callable(lens):
        raise LensError(f"lens {name!r} must be callable as lens(text, target, counter)")
    if not replace and (name in _REGISTRY or name in LIST_LENSES):
        raise LensError(f"a lens named {name!r} is already registered; pass replace=True to override it")
    _REGISTRY[name] = lens


def _unknown(name: str) -> LensError:
    names = sorted([*_REGISTRY, *LIST_LENSES])
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return LensError(
        f"unknown lens {name!r}; {hint}known lenses: {', '.join(names)}. Register your own with register_lens() "
        f"before building the Section"
    )


def check_lens_name(name: str) -> None:
    """Raise :class:`LensError` (with a "did you mean") unless ``name`` is a registered text or list lens."""
    if name not in _REGISTRY and name not in LIST_LENSES:
        raise _unknown(name)


def get_lens(name: str) -> Lens:
    """The text lens registered under ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise _unknown(name) from None


def lens_name(lens: str | Callable[..., str]) -> str:
    if isinstance(lens, str):
        return lens
    return getattr(lens, "__name__", type(lens).__name__)


def apply_lens(lens: str | Lens, text: str, target: int, counter: TokenCounter, *, before: int) -> tuple[str, int]:
    """Run one lens and return (text, size); a lens that raises or grows its input is a LensError."""
    name = lens_name(lens)
    fn = get_lens(lens) if isinstance(lens, str) else lens
    try:
        out = fn(text, target, counter)
    except Exception as exc:
        raise LensError(f"lens {name!r} raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(out, str):
        raise LensError(f"lens {name!r} returned {type(out).__name__}; a lens must return text")
    after = counter.count(out)
    if after > before:
        raise LensError(f"lens {name!r} grew its input from {before} to {after} units; a lens must never grow text")
    return out, after
