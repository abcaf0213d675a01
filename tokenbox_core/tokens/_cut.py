r"""Cutting text to at most ``limit`` tokens of a tiktoken encoding: encode once, slice the ids, decode.

Once is at most once: a text whose count is known (the box measured it) is encoded only as far as a cut
can reach, a prefix and a suffix ending where no token spans (below), since those are the whole text's
first and last ids.

The cut keeping ``k`` tokens is the text of the text's first ``k`` ids (``keep="head"``), its last ``k``
(``"tail"``), or its first ``ceil(k / 2)`` and last ``floor(k / 2)`` (``"middle"``), less the bytes of a
character that a token boundary splits, so it is always valid text.  Re-encoding a cut can merge
differently from the whole text's ids, so the cut is re-counted and ``k`` lowered until the cut counts at
most ``k``: the result is the cut of the largest such ``k <= limit``.

The re-count reads a boundary window, not the whole kept text.  Where no token can span a position ``p`` of
the text, the ids of the text before ``p`` are the first ids of the whole text's, so a head cut counts as
the ids before its last such position plus a count of the few characters after it (a tail cut likewise at
its first such position).  For o200k_base, o200k_harmony and cl100k_base no token spans ``p`` when

- the text before ``p`` ends in ``"\n"`` and the text after starts with neither whitespace nor ``"/"``, or
- it ends in an ASCII letter and goes on with an ASCII character that is neither a letter nor ``"'"``.

tiktoken splits a text into pieces with the encoding's regular expression and encodes each piece alone.
After a newline, only a whitespace run (or o200k's punctuation piece, with ``"/"``) continues; a letter
run, a contraction and a number stop at a non-letter ASCII character other than the apostrophe, and no
alternative looks behind.  So the pieces of ``a + b`` are the pieces of ``a`` and then of ``b``
(``tests/core/test_cut.py`` checks the cuts against a full re-count on adversarial text).  Elsewhere, and for
other encodings, the cut is counted in full.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tokenbox_core.tokens._base import Keep, _checked
from tokenbox_core.tokens._cache import COUNT_CACHE

if TYPE_CHECKING:
    from tokenbox_core.tokens._tiktoken_counter import TiktokenCounter

__all__ = ["RULE_ENCODINGS", "WINDOW", "Ends", "count_joined", "cut", "fit", "pieces", "splits"]

WINDOW = 4_096
"""How many characters next to a cut are searched for a position no token spans."""
RULE_ENCODINGS = frozenset({"cl100k_base", "o200k_base", "o200k_harmony"})
"""The encodings the rule in this module's docstring holds for."""
_SPLIT = re.compile(r"[\nA-Za-z](?:(?<=\n)(?=[^\s/])|(?<=[A-Za-z])(?=[\x00-\x26\x28-\x40\x5b-\x60\x7b-\x7f]))")
"""Matches the character before a position no token spans (``match.end()`` is the position)."""
_PIECE = 1 << 14
"""About how many characters :func:`pieces` hands a tokenizer at a time."""
_JOIN_AT_MOST = 1 << 16
"""Texts up to this long whose count is not known are joined to their suffix and counted (one count, not three)."""
_DECODE_CHUNK = 8_192
_ENDS_AT_MOST = 0.8
"""A cut keeping more than this share of a text's tokens encodes the whole text."""
_ENDS_MARGIN = 1.1
"""How many more characters than the text's average per token an end is encoded over, so one encode covers it."""
_ENDS_SLACK = 256
"""Characters added to an end's estimate (a short text's average per token says little)."""


def cut(counter: TiktokenCounter, text: str, limit: int, keep: Keep = "head") -> str:
    """``text`` cut to at most ``limit`` tokens, keeping ``keep`` (see the module docstring)."""
    return fit(counter, text, "", limit, keep)[0]


class Ends:
    """The text the last cut encoded and the ids of its ends, for its caller's next cut of the same text.

    Why: the box's refill often re-cuts a section it just cut a token or two larger (the last section's
    separator is not emitted, so the total lands under the target); with these ids it does not encode the
    text again.  Owner: one layout (:class:`tokenbox_core.box._measure.Ruler`), freed with it; bound: one
    text's end ids (4 bytes a token); key: the text object itself.
    """

    __slots__ = ("first", "last", "text")

    def __init__(self) -> None:
        self.text: str | None = None
        self.first: Any = None
        self.last: Any = None


def fit(
    counter: TiktokenCounter, text: str, suffix: str, alloc: int, keep: Keep = "head", ends: Ends | None = None
) -> tuple[str, int]:
    """The largest cut of ``text`` whose text + ``suffix`` counts at most ``alloc``, and that count (``("", 0)``
    when no cut fits).

    It is the string found by lowering ``limit`` from ``alloc - (count(text + suffix) - count(text))`` until
    ``count(cut(text, limit) + suffix) <= alloc``, found from one encode (:func:`_ends`): the cuts of
    ``k = limit, limit - 1, …`` tokens come from the same ids, one that re-counts over ``k`` is skipped (it is
    no cut), and the suffix's cost on a cut is counted at the cut's end (:func:`_suffix_cost`).  ``ends``
    keeps the ids encoded, for a next cut of the same text.
    """
    alloc = max(0, int(alloc))
    n = _known_count(counter, text, suffix)
    ids = None
    if n is None:
        ids = encode(counter, text)
        n = len(ids)
        COUNT_CACHE.put(COUNT_CACHE.key(counter._cache_key, text), n)
    joined = n + _suffix_cost(counter, text, suffix, n)
    limit = alloc - (joined - n)
    if n <= limit:
        return text, joined
    if limit <= 0:
        return "", 0
    h = _head_share(limit, keep)
    if ids is not None:
        first = last = ids
    elif ends is not None and ends.text is text and len(ends.first) >= h and len(ends.last) >= limit - h:
        first, last = ends.first, ends.last
    else:
        first, last = _ends(counter, text, n, h, limit - h)
    if ends is not None:
        ends.text, ends.first, ends.last = text, first, last
    head = first[:h]
    tail = last[len(last) - (limit - h) :] if limit > h else last[:0]
    head_bytes, tail_bytes = _decode(counter, head), _decode(counter, tail)  # once: a smaller cut slices them
    for k in range(limit, 0, -1):
        out, size = _kept(counter, head, tail, head_bytes, tail_bytes, k, keep)
        if not out:
            return "", 0
        if size <= k:
            cost = _suffix_cost(counter, out, suffix, size)
            if size + cost <= alloc:
                COUNT_CACHE.put(COUNT_CACHE.key(counter._cache_key, out), size)
                return out, size + cost
    return "", 0


def _known_count(counter: TiktokenCounter, text: str, suffix: str) -> int | None:
    """``count(text)`` if the count cache knows it, or knows ``count(text + suffix)`` and the rule gives the
    suffix's cost (the box measures a section with its separator); else None."""
    n = COUNT_CACHE.get(COUNT_CACHE.key(counter._cache_key, text))
    if n is None and suffix and text and counter.name in RULE_ENCODINGS and _last_split(text) is not None:
        joined = COUNT_CACHE.get(COUNT_CACHE.key(counter._cache_key, text + suffix))
        if joined is not None:
            n = joined - _suffix_cost(counter, text, suffix, 0)
    return n


def _ends(counter: TiktokenCounter, text: str, n: int, head: int, tail: int) -> tuple[Any, Any]:
    """Ids of a prefix of ``text`` (at least ``head`` of them) and of a suffix (at least ``tail``), ``n`` being
    the text's count: encoded only as far as a cut can reach.

    A prefix ending at a position no token spans (the rule above) encodes to the whole text's first ids, and a
    suffix starting at one to its last ids; the text's characters per token say where to look.  Where the rule
    does not hold, no such position is near, or the ends would cover most of the text, the whole text is
    encoded.
    """
    if counter.name in RULE_ENCODINGS and head + tail < n * _ENDS_AT_MOST:
        per_token = len(text) / n * _ENDS_MARGIN
        p = _split_after(text, int(head * per_token) + _ENDS_SLACK) if head else 0
        q = _split_after(text, len(text) - int(tail * per_token) - _ENDS_SLACK) if tail else len(text)
        if p is not None and q is not None and p <= q:
            first = encode(counter, text, 0, p) if head else []
            last = encode(counter, text, q) if tail else []
            if len(first) >= head and len(last) >= tail:
                return first, last
    ids = encode(counter, text)
    return ids, ids


def _split_after(text: str, start: int) -> int | None:
    """The first position of ``text`` no token spans at or after ``start`` (within :data:`WINDOW`), or None."""
    start = max(0, start)
    found = _SPLIT.search(text, start, start + WINDOW) if start < len(text) else None
    return None if found is None else found.end()


def _suffix_cost(counter: TiktokenCounter, text: str, suffix: str, size: int) -> int:
    """``count(text + suffix) - count(text)``, ``size`` being ``count(text)``: counted after the last position of
    ``text`` no token spans (the rule above), else in full."""
    if not suffix or not text:
        return 0
    p = _last_split(text) if counter.name in RULE_ENCODINGS else None
    if p is None:
        return counter.count(text + suffix) - size
    end = text[p:]
    return counter.count(end + suffix) - counter.count(end)


def splits(left: str, right: str) -> bool:
    """Whether no token spans the join of ``left`` and ``right`` by the rule above, so that
    ``count(left + right) == count(left) + count(right)`` (for the encodings in :data:`RULE_ENCODINGS`)."""
    return bool(left) and bool(right) and _SPLIT.match(left[-1] + right[0]) is not None


def pieces(text: str, start: int = 0, stop: int | None = None) -> Iterator[str]:
    """``text[start:stop]`` in pieces of about :data:`_PIECE` characters, each ending where no token spans (the
    rule above), so that a rule encoding's ids of the text are its pieces' ids one after the other.

    Why: a native tokenizer is handed UTF-8, and CPython builds (and keeps on the string) the UTF-8 copy of a
    text that is not ASCII, with transient copies on the way; piece by piece, one piece alive at a time, those
    copies are a piece's size, not the text's.  One piece when the text is short or holds no such position near
    a piece's end.
    """
    stop = len(text) if stop is None else stop
    while stop - start > 2 * _PIECE:
        p = _split_after(text, start + _PIECE)
        if p is None or p >= stop:
            break
        yield text[start:p]
        start = p
    yield text if start == 0 and stop == len(text) else text[start:stop]


def count_joined(counter: Any, text: str, suffix: str, rule: bool) -> int:
    """``counter.count(text + suffix)``.  With ``rule`` (a tiktoken counter of a rule encoding): a long ``text``
    is never joined (its count plus the suffix's cost counted after its last position no token spans, the rule
    above), and a short one whose joined count is not known but whose own count is (a compile counted it to rank
    it) is not tokenized again."""
    if not (rule and suffix):
        return int(counter.count(text + suffix))
    if len(text) > _JOIN_AT_MOST:
        p = _last_split(text)
        if p is None:
            return int(counter.count(text + suffix))
        end = text[p:]
        return int(counter.count(text)) + int(counter.count(end + suffix)) - int(counter.count(end))
    joined = text + suffix
    key = COUNT_CACHE.key(counter._cache_key, joined)
    value = COUNT_CACHE.get(key)
    if value is not None:
        return value
    known = COUNT_CACHE.get(COUNT_CACHE.key(counter._cache_key, text))
    p = _last_split(text) if known is not None else None
    if known is not None and p is not None:
        end = text[p:]
        value = known + int(counter.count(end + suffix)) - int(counter.count(end))
    else:
        value = _checked(counter._raw_count(joined), counter.name)
    COUNT_CACHE.put(key, value)
    return value


def encode(counter: TiktokenCounter, text: str, start: int = 0, stop: int | None = None) -> Any:
    """The ids of ``text[start:stop]`` (special tokens as plain text): a numpy array, 4 bytes a token, when numpy
    is there.  A long text of a rule encoding is encoded :func:`pieces` at a time, never copied whole."""
    stop = len(text) if stop is None else stop
    if counter.name not in RULE_ENCODINGS or stop - start <= 2 * _PIECE:
        return _encode(counter, text if start == 0 and stop == len(text) else text[start:stop])
    parts = [_encode(counter, piece) for piece in pieces(text, start, stop)]
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], list):
        return [token for part in parts for token in part]
    import numpy  # the parts are numpy arrays: numpy is there

    return numpy.concatenate(parts)


def _encode(counter: TiktokenCounter, text: str) -> Any:
    try:
        return counter.encoding.encode_to_numpy(text, allowed_special=set(), disallowed_special=())
    except ImportError:
        return counter.encoding.encode_ordinary(text)


def _head_share(k: int, keep: Keep) -> int:
    """How many of a cut's ``k`` tokens come from the start of the text."""
    return k if keep == "head" else (k + 1) // 2 if keep == "middle" else 0


def _kept(
    counter: TiktokenCounter, head: Any, tail: Any, head_bytes: bytes, tail_bytes: bytes, k: int, keep: Keep
) -> tuple[str, int]:
    """The cut keeping ``k`` tokens, ``h`` of ``head`` (the text's first ids, ``head_bytes`` their bytes) and
    ``t`` of ``tail`` (its last ids, ``tail_bytes``), and its exact count."""
    h = _head_share(k, keep)
    t = k - h
    head_ids, tail_ids = head[:h], tail[len(tail) - t :] if t else tail[:0]
    head_view, tail_view = memoryview(head_bytes), memoryview(tail_bytes)  # slices of a view copy no bytes
    first, trim1 = _head(head_view[: len(head_bytes) - _nbytes(counter, head[h:])]) if h else ("", 0)
    second, trim2 = _tail(tail_view[_nbytes(counter, tail[: len(tail) - t]) :]) if t else ("", 0)
    out = first + second
    split_head = _split_head(counter, head_ids, first, trim1) if h else (0, "")
    split_tail = _split_tail(counter, tail_ids, second, trim2) if t else ("", 0)
    if split_head is None or split_tail is None:
        return out, counter.count(out)
    return out, split_head[0] + counter.count(split_head[1] + split_tail[0]) + split_tail[1]


def _nbytes(counter: TiktokenCounter, ids: Any) -> int:
    """How many bytes ``ids`` decode to."""
    token_bytes = counter.encoding.decode_single_token_bytes
    return sum(len(token_bytes(int(token))) for token in ids)


def _split_head(counter: TiktokenCounter, ids: Sequence[int], out: str, trim: int) -> tuple[int, str] | None:
    """(how many of ``ids`` precede the last position of ``out`` no token spans, the text after it), or None."""
    p = _last_split(out) if trim >= 0 and counter.name in RULE_ENCODINGS else None
    if p is None:
        return None
    m = _covering(counter, reversed(ids), len(out[p:].encode("utf-8")) + trim)
    return None if m is None else (len(ids) - m, out[p:])


def _split_tail(counter: TiktokenCounter, ids: Sequence[int], out: str, trim: int) -> tuple[str, int] | None:
    """(the text of ``out`` before its first position no token spans, how many of ``ids`` follow it), or None."""
    found = _SPLIT.search(out, 0, min(len(out), WINDOW)) if trim >= 0 and counter.name in RULE_ENCODINGS else None
    if found is None:
        return None
    lead = out[: found.end()]
    m = _covering(counter, iter(ids), len(lead.encode("utf-8")) + trim)
    return None if m is None else (lead, len(ids) - m)


def _last_split(text: str) -> int | None:
    """The last position no token spans in the last :data:`WINDOW` characters of ``text``, or None."""
    for size in (64, WINDOW):
        ends = [found.end() for found in _SPLIT.finditer(text, max(0, len(text) - size))]
        if ends:
            return ends[-1]
        if size >= len(text):
            break
    return None


def _covering(counter: TiktokenCounter, ids: Any, nbytes: int) -> int | None:
    """How many of ``ids`` (an iterator from one end) cover exactly ``nbytes`` bytes; None if none do."""
    covered = m = 0
    token_bytes = counter.encoding.decode_single_token_bytes
    for token in ids:
        if covered >= nbytes:
            break
        covered += len(token_bytes(int(token)))
        m += 1
    return m if covered == nbytes else None


def _decode(counter: TiktokenCounter, ids: Sequence[int]) -> bytes:
    """The bytes of ``ids``, decoded in chunks (a list of Python ints costs ~36 bytes a token, the ids 4)."""
    step = _DECODE_CHUNK
    chunks = (ids[i : i + step] for i in range(0, len(ids), step))
    return b"".join(counter.encoding.decode_bytes(_as_list(chunk)) for chunk in chunks)


def _as_list(ids: Any) -> list[int]:
    tolist = getattr(ids, "tolist", None)
    return list(tolist()) if tolist is not None else list(ids)


def _head(data: memoryview) -> tuple[str, int]:
    """The text of ``data`` less 0-3 trailing bytes of a split character, and how many (-1: not known)."""
    for trim in range(4):
        try:
            return str(data[: len(data) - trim], "utf-8"), trim
        except UnicodeDecodeError:
            continue
    return str(data, "utf-8", "ignore"), -1


def _tail(data: memoryview) -> tuple[str, int]:
    """The text of ``data`` less 0-3 leading bytes of a split character, and how many (-1: not known)."""
    for trim in range(4):
        try:
            return str(data[trim:], "utf-8"), trim
        except UnicodeDecodeError:
            continue
    return str(data, "utf-8", "ignore"), -1
