"""Cutting from one encode: token offsets, not repeated re-counting (issue 16 §1).

``TiktokenCounter.truncate`` keeps the largest ``k <= limit`` whose cut
(``k`` head tokens decoded, cut back to whole characters) re-encodes to at
most ``k`` tokens.  Done naively, each candidate re-counts the whole cut and
each call re-encodes the text.  Here:

- the text is encoded **once**, through tiktoken's buffer API
  (``encode_to_numpy``: 4 bytes a token instead of a list of Python ints —
  for a 10-million-character section hundreds of MB less at equal speed),
  and the ids of the last text cut are kept, so a search over cut sizes (the
  box's boundary-item search, its shrink loop) never encodes the text again;
- a candidate cut is counted exactly as (tokens before the last position no
  token can span, read off the original ids) + (a count of the few
  characters after it) — see :mod:`tokenbox_core.tokens.fast_tail`.

The result is the same string the naive algorithm returns, for every text,
limit and ``keep`` (a property test compares them).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tokenbox_core.tokens.base import Keep, validate_text
from tokenbox_core.tokens.cache import COUNT_CACHE
from tokenbox_core.tokens.fast_tail import TAIL_WINDOW
from tokenbox_core.tokens.neutral import scan_neutral

if TYPE_CHECKING:
    from tokenbox_core.tokens.tiktoken_counter import TiktokenCounter

__all__ = ["CUT_MEMO_ENTRIES", "CUT_MEMO_MAX_CHARS", "encode_ids", "truncate_once"]

_memo = threading.local()


def encode_ids(counter: TiktokenCounter, text: str) -> Any:
    """Token ids of ``text`` (a numpy array when numpy is installed), memoised for the last text encoded."""
    last = getattr(_memo, "last", None)
    ids: Any = None
    if last is not None and last[0] == counter._cache_key:
        if last[1] is text:
            return last[2]
        if 0 < len(last[1]) - len(text) <= _SUFFIX_MAX and last[1].startswith(text):
            ids = _prefix_ids(counter, last[1], last[2], text)  # measured with its separator: no second encode
    if ids is None:
        validate_text(text)
        ids = _encode(counter, text)
    _memo.last = (counter._cache_key, text, ids)
    COUNT_CACHE.put(COUNT_CACHE.key(counter._cache_key, text), len(ids))
    return ids


_SUFFIX_MAX = 64
_DECODE_CHUNK = 8_192


def _encode(counter: TiktokenCounter, text: str) -> Any:
    try:
        return counter.encoding.encode_to_numpy(text, allowed_special=set(), disallowed_special=())
    except ImportError:  # no numpy: a list of ints
        return counter.encoding.encode_ordinary(text)


def _prefix_ids(counter: TiktokenCounter, longer: str, longer_ids: Any, text: str) -> Any:
    """Ids of ``text`` from those of ``longer`` (``text`` + a short suffix): its head ids and a re-encoded tail."""
    p = _last_neutral(counter, text)
    if p is None:
        return None
    m = _tokens_covering(counter, longer_ids, len(longer[p:].encode("utf-8")), from_start=False)
    if m is None:
        return None
    head = longer_ids[: len(longer_ids) - m]
    tail = _encode(counter, text[p:])
    if isinstance(head, list):
        return head + list(tail)
    import numpy

    return numpy.concatenate([head, numpy.asarray(tail, dtype=head.dtype)])


def _as_list(ids: Sequence[int]) -> list[int]:
    tolist = getattr(ids, "tolist", None)
    return list(tolist()) if tolist is not None else list(ids)


def _decode_bytes(counter: TiktokenCounter, ids: Sequence[int]) -> bytes:
    step = _DECODE_CHUNK  # in chunks: a list of Python ints costs ~36 bytes a token, the ids 4
    return b"".join(counter.encoding.decode_bytes(_as_list(ids[i : i + step])) for i in range(0, len(ids), step))


def _decode(counter: TiktokenCounter, ids: Sequence[int], *, from_end: bool) -> tuple[str, int]:
    """Decoded text of ``ids`` and how many bytes of a split character were trimmed (at the end or the start)."""
    data = _decode_bytes(counter, ids)
    if not from_end:
        return _trimmed_head(data) or (data.decode("utf-8", "ignore"), -1)
    return _trimmed_tail(data)


def _trimmed_tail(data: bytes) -> tuple[str, int]:
    """``data`` decoded, less the fewest (0-3) leading bytes of a split character (-1: none would do)."""
    for trim in range(4):  # a token can start inside a multi-byte character
        try:
            return data[trim:].decode("utf-8"), trim
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", "ignore"), -1  # -1: byte accounting unknown, count in full


def _trimmed_head(data: bytes) -> tuple[str, int] | None:
    """``data`` decoded, less the fewest (0-3) trailing bytes of a split character; None if that fails."""
    for trim in range(4):
        try:
            return data[: len(data) - trim].decode("utf-8"), trim
        except UnicodeDecodeError:
            continue
    return None


def _decode_head(counter: TiktokenCounter, view: _Ids, k: int) -> tuple[str, int]:
    """``_decode`` of ``view``'s first ``k`` ids, extending the head decoded last from the same ids.

    A cut that grows (refill regrowing a section it cut, the box's search
    over cut sizes) decodes only the ids it adds: the bytes of ``k`` ids are
    those of the ``k0 < k`` decoded before (their text, ending on a
    character boundary, and the 0-3 trimmed bytes) followed by the new ids'
    bytes, and UTF-8 validity after a character boundary does not depend on
    what precedes it — so the result is the one a full decode gives.  The
    memo holds the text the caller keeps anyway, not the bytes.
    """
    last = getattr(_memo, "head", None)
    if last is not None and last[0] is view.head and last[1] <= k:
        _, k0, text0, rest0 = last
        more = rest0 + _decode_bytes(counter, view.head[k0:k])
        extra = _trimmed_head(more)
        if extra is not None:
            out, trim = text0 + extra[0], extra[1]
            _memo.head = (view.head, k, out, more[len(more) - trim :] if trim else b"")
            return out, trim
    if 2 * k > len(view.head):  # fewer ids after the cut than in it: the cut's bytes are the text's, less theirs
        surplus = len(_decode_bytes(counter, view.head[k:]))
        if view.text.isascii():  # one byte a character (O(1): CPython knows an ASCII string)
            out = view.text[: view.head_chars - surplus]
            _memo.head = (view.head, k, out, b"")
            return out, 0
        data = view.text[: view.head_chars].encode("utf-8")
        data = data[: len(data) - surplus]
    else:
        data = _decode_bytes(counter, view.first(k))
    whole = _trimmed_head(data)
    if whole is None:
        return data.decode("utf-8", "ignore"), -1  # -1: byte accounting unknown, count in full
    out, trim = whole
    _memo.head = (view.head, k, out, data[len(data) - trim :] if trim else b"")
    return out, trim


def _decode_tail(counter: TiktokenCounter, view: _Ids, k: int) -> tuple[str, int]:
    """``_decode`` of ``view``'s last ``k`` ids (``from_end``), read off the text when fewer ids come before them.

    The tail ids are those of ``text[tail_start:]``, so the bytes of the last ``k`` are that suffix's UTF-8
    bytes less those of the ids before them (as :func:`_decode_head` reads a head cut).
    """
    tail = view.tail
    if not 2 * k > len(tail):
        return _decode(counter, view.last(k), from_end=True)
    surplus = len(_decode_bytes(counter, tail[: len(tail) - k]))
    if view.text.isascii():
        return view.text[view.tail_start + surplus :], 0
    return _trimmed_tail(view.text[view.tail_start :].encode("utf-8")[surplus:])


def _token_len(counter: TiktokenCounter, token: int) -> int:
    return len(counter.encoding.decode_single_token_bytes(int(token)))


def _tokens_covering(counter: TiktokenCounter, ids: Sequence[int], nbytes: int, *, from_start: bool) -> int | None:
    """How many ids at the start (or end) of ``ids`` cover exactly ``nbytes`` bytes; None if none do."""
    covered = 0
    n = len(ids)
    for m in range(n + 1):
        if covered == nbytes:
            return m
        if covered > nbytes or m == n:
            return None
        covered += _token_len(counter, ids[m] if from_start else ids[n - 1 - m])
    return None


def _last_neutral(counter: TiktokenCounter, text: str) -> int | None:
    return scan_neutral(counter, text, max(0, len(text) - TAIL_WINDOW) + 1, len(text), last=True)


def _first_neutral(counter: TiktokenCounter, text: str) -> int | None:
    return scan_neutral(counter, text, 1, min(len(text), TAIL_WINDOW), last=False)


def _head_part(counter: TiktokenCounter, ids: Sequence[int], out: str, trim: int) -> tuple[int, str] | None:
    """(tokens of ``out`` before its last neutral position, read off ``ids``; the text after it)."""
    p = _last_neutral(counter, out) if trim >= 0 else None
    if p is None:
        return None
    rest = out[p:]
    m = _tokens_covering(counter, ids, len(rest.encode("utf-8")) + trim, from_start=False)
    return None if m is None else (len(ids) - m, rest)


def _tail_part(counter: TiktokenCounter, ids: Sequence[int], out: str, trim: int) -> tuple[str, int] | None:
    """(the text of ``out`` before its first neutral position; tokens after it, read off ``ids``)."""
    p = _first_neutral(counter, out) if trim >= 0 else None
    if p is None:
        return None
    lead = out[:p]
    m = _tokens_covering(counter, ids, len(lead.encode("utf-8")) + trim, from_start=True)
    return None if m is None else (lead, len(ids) - m)


class _Ids:
    """The ids a cut needs: a prefix and a suffix of the text's ids (the same list when fully encoded).

    ``head`` are the ids of ``text[:head_chars]`` and ``tail`` those of ``text[tail_start:]`` (positions no
    token spans, or the ends), so the bytes of the first (last) ``k`` ids are that prefix's (suffix's) UTF-8
    bytes less those of the other ids (:func:`_decode_head`, :func:`_decode_tail`).
    """

    __slots__ = ("head", "head_chars", "n", "tail", "tail_start", "text")

    def __init__(self, head: Any, tail: Any, n: int, text: str, head_chars: int, tail_start: int) -> None:
        self.head, self.tail, self.n = head, tail, n
        self.text, self.head_chars, self.tail_start = text, head_chars, tail_start

    def first(self, k: int) -> Any:
        return self.head[:k]

    def last(self, k: int) -> Any:
        return self.tail[len(self.tail) - k :]


def _cut(counter: TiktokenCounter, ids: _Ids, k: int, keep: Keep) -> tuple[str, int]:
    """The cut keeping ``k`` tokens as ``keep`` says, and its exact count."""
    count = counter.count
    if keep == "head":
        out, trim = _decode_head(counter, ids, k)
        head = _head_part(counter, ids.first(k), out, trim)
        return out, (head[0] + count(head[1]) if head else count(out))
    if keep == "tail":
        out, trim = _decode_tail(counter, ids, k) if k else ("", 0)
        tail = _tail_part(counter, ids.last(k), out, trim) if k else None
        return out, (count(tail[0]) + tail[1] if tail else count(out))
    h = (k + 1) // 2
    t = k - h
    first, trim1 = _decode_head(counter, ids, h)
    if not t:
        head = _head_part(counter, ids.first(h), first, trim1)
        return first, (head[0] + count(head[1]) if head else count(first))
    second, trim2 = _decode_tail(counter, ids, t)
    out = first + second
    head = _head_part(counter, ids.first(h), first, trim1)
    tail = _tail_part(counter, ids.last(t), second, trim2)
    if head is None or tail is None:
        return out, count(out)
    return out, head[0] + count(head[1] + tail[0]) + tail[1]


PARTIAL_MIN_CHARS = 200_000
"""A text this long whose count is known is cut by encoding only the part kept (fast counter: no full encode)."""


def _next_neutral(counter: TiktokenCounter, text: str, start: int) -> int | None:
    return scan_neutral(counter, text, max(1, start), min(len(text), start + TAIL_WINDOW), last=False)


def _prev_neutral(counter: TiktokenCounter, text: str, start: int) -> int | None:
    return scan_neutral(counter, text, max(0, start - TAIL_WINDOW) + 1, min(start, len(text) - 1) + 1, last=True)


def _head_ids(counter: TiktokenCounter, text: str, n: int, need: int) -> tuple[Any, int] | None:
    """(ids of a prefix ``text[:p]`` ending where no token spans, with at least ``need`` tokens; ``p``) or None."""
    reach = int(len(text) * need / n * 1.1) + 1024
    while reach < len(text):
        p = _next_neutral(counter, text, reach)
        if p is None:
            return None
        ids = _encode(counter, text[:p])  # == the text's first len(ids) ids: no token spans p
        if len(ids) >= need:
            return ids, p
        reach *= 2
    return None


def _tail_ids(counter: TiktokenCounter, text: str, n: int, need: int) -> tuple[Any, int] | None:
    """(ids of a suffix ``text[p:]`` starting where no token spans, with at least ``need`` tokens; ``p``) or None."""
    reach = int(len(text) * need / n * 1.1) + 1024
    while reach < len(text):
        p = _prev_neutral(counter, text, len(text) - reach)
        if p is None:
            return None
        ids = _encode(counter, text[p:])  # == the text's last len(ids) ids
        if len(ids) >= need:
            return ids, p
        reach *= 2
    return None


def _partial(counter: TiktokenCounter, text: str, n: int, limit: int, keep: Keep) -> _Ids | None:
    """The ids a cut to ``limit`` needs, encoding only the kept part of a text of ``n`` tokens."""
    need_head, need_tail = _needs(limit, keep)
    head = _head_ids(counter, text, n, need_head) if need_head else ([], 0)
    tail = _tail_ids(counter, text, n, need_tail) if need_tail else ([], len(text))
    if head is None or tail is None:
        return None
    return _Ids(head[0], tail[0], n, text, head[1], tail[1])


def _needs(limit: int, keep: Keep) -> tuple[int, int]:
    """How many head and tail ids a cut to ``limit`` keeping ``keep`` reads."""
    need_head = limit if keep == "head" else (limit + 1) // 2 if keep == "middle" else 0
    return need_head, (limit - need_head if keep != "head" else 0)


def remember_partial(counter: TiktokenCounter, text: str, view: _Ids) -> None:
    """Remember ``view``, ids of part of ``text``, for the next cut of the same text (:func:`_known_partial`)."""
    _memo.partial = (counter._cache_key, text, view)


def _known_partial(counter: TiktokenCounter, text: str, limit: int, keep: Keep) -> _Ids | None:
    """The partial ids last encoded for ``text`` if they hold what a cut to ``limit`` needs (no second encode)."""
    last = getattr(_memo, "partial", None)
    if last is None or last[0] != counter._cache_key or last[1] is not text:
        return None
    view: _Ids = last[2]
    need_head, need_tail = _needs(limit, keep)
    return view if len(view.head) >= need_head and len(view.tail) >= need_tail else None


CUT_MEMO_ENTRIES = 64
"""Cuts remembered per thread (the last ones made): a compile re-cuts the same boundary passage every turn."""
CUT_MEMO_MAX_CHARS = 16_384
"""Longer texts are not remembered by their cut (their ids are, by :func:`encode_ids`): bounded memory."""


def truncate_once(counter: TiktokenCounter, text: str, limit: int, keep: Keep = "head") -> str:
    """``TiktokenCounter.truncate`` from one encode: the same result, a fraction of the work.

    A long text whose count is already known (measured by the fast counter,
    which builds no ids) and that the memo has no ids for is not encoded
    whole: only a prefix (and/or suffix) ending where no token can span, long
    enough to hold the tokens kept.  The last cuts of texts up to
    :data:`CUT_MEMO_MAX_CHARS` are remembered by (encoding, text, limit, keep):
    the cut is a function of those, and a conversation's next turn (or the
    same compile again) asks for the same cut of the same passage.
    """
    limit = max(0, int(limit))
    key = (counter._cache_key, limit, keep, text) if len(text) <= CUT_MEMO_MAX_CHARS else None
    cuts: dict[tuple[str, int, str, str], tuple[str, int | None]] | None = getattr(_memo, "cuts", None)
    if cuts is None:
        cuts = _memo.cuts = {}
    if key is not None:
        hit = cuts.get(key)
        if hit is not None:
            if hit[1] is not None:  # as when it was cut: the cut's count is known to the cache
                COUNT_CACHE.put(COUNT_CACHE.key(counter._cache_key, hit[0]), hit[1])
            return hit[0]
    out, size = _truncate(counter, text, limit, keep)
    if key is not None:
        cuts[key] = (out, size)
        if len(cuts) > CUT_MEMO_ENTRIES:
            del cuts[next(iter(cuts))]
    return out


def _truncate(counter: TiktokenCounter, text: str, limit: int, keep: Keep) -> tuple[str, int | None]:
    """The cut of :func:`truncate_once` and its count (None: the text fits, it is returned whole)."""
    view: _Ids | None = None
    last = getattr(_memo, "last", None)
    memo_hit = last is not None and last[0] == counter._cache_key and last[1] is text
    if not memo_hit and len(text) >= PARTIAL_MIN_CHARS:
        partial = getattr(_memo, "partial", None)  # measuring it left its ids (and count): no digest for its key
        if partial is not None and partial[0] == counter._cache_key and partial[1] is text:
            known: int | None = partial[2].n
        else:
            known = COUNT_CACHE.get(COUNT_CACHE.key(counter._cache_key, text))
        if known is not None and known <= limit:
            return text, None
        if known is not None:
            view = _known_partial(counter, text, limit, keep)
            if view is None:
                view = _partial(counter, text, known, limit, keep)
                if view is not None:
                    remember_partial(counter, text, view)
    if view is None:
        ids: Any = encode_ids(counter, text)
        if len(ids) <= limit:
            return text, None
        view = _Ids(ids, ids, len(ids), text, len(text), 0)
    k = limit
    while True:
        out, size = _cut(counter, view, k, keep)
        # Re-encoding a cut can merge differently; shrink until the result fits.
        if size <= k or k == 0:
            COUNT_CACHE.put(COUNT_CACHE.key(counter._cache_key, out), size)
            return out, size
        k -= 1
