"""Token counting: the ``TokenCounter`` protocol, built-in counters and the count cache.

A counter does two things: it *counts* text in its unit, and it *cuts* text to
at most N units at a boundary that decodes to valid text.  Built-in counters:

- tiktoken encodings by name (``"o200k_base"``, ``"cl100k_base"``, ...) and by
  model name (``"gpt-4o"`` → o200k_base, ``"gpt-4"`` → cl100k_base; an unknown
  model falls back to cl100k_base and never raises);
- ``"bytes"``: FACET units, UTF-8 bytes after NFC and LF normalisation;
- ``"approximate"``: ``ceil(chars / 4)``, meant to pair with a safety margin;
- ``"whitespace"``: whitespace-separated words (a fast fake for tests and docs);
- any callable returning an ``int`` or a list of token ids (the shape of
  LlamaIndex's ``Settings.tokenizer``).

Counts are memoised per counter by a digest of the text in a bounded,
thread-safe LRU cache, so the same text is never tokenised twice in a process.

tiktoken downloads encodings on first use.  To work offline, the counter first
looks for a local copy: ``TIKTOKEN_CACHE_DIR`` (or ``DATA_GYM_CACHE_DIR``),
tiktoken's default cache, then the cl100k/o200k files that llama-index-core
ships.  Only when none exists does tiktoken try the network; if that fails the
error is :class:`~tokenbox_core.errors.TokenizerUnavailable`, naming the fix.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import sys
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from tokenbox_core.errors import CounterError, InvalidTextError, TokenizerUnavailable

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "ApproximateCounter",
    "BytesCounter",
    "CallableCounter",
    "Keep",
    "TiktokenCounter",
    "TokenCounter",
    "WhitespaceCounter",
    "content_text",
    "count_message_tokens",
    "encoding_for_model",
    "get_counter",
    "register_model_encoding",
]

Keep = Literal["head", "tail", "middle"]
"""Which part of a text survives a cut: its head, its tail, or both ends (``middle`` cuts the middle)."""


@runtime_checkable
class TokenCounter(Protocol):
    """What the engine needs from a counter.

    ``count`` returns a non-negative int; ``truncate`` returns a version of the
    text that counts at most ``limit`` units and keeps the requested part.
    """

    name: str

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str: ...


# --------------------------------------------------------------------------- cache


class _CountCache:
    """A bounded, thread-safe cache of counts keyed by (counter key, text).

    Keys are the texts themselves: Python caches a string's hash, so a hit on a
    text seen before costs one dict lookup.  The cache is bounded both in
    entries and in the characters it keeps alive; texts longer than
    ``digest_above`` characters are keyed by a blake2b digest instead, so one
    huge section never pins megabytes.  Eviction is first-in-first-out, which
    keeps hits lock-free (a dict read is atomic under the GIL).
    """

    def __init__(self, maxsize: int = 200_000, max_chars: int = 64_000_000, digest_above: int = 1_000_000) -> None:
        self.maxsize = maxsize
        self.max_chars = max_chars
        self.digest_above = digest_above
        self._data: dict[tuple[str, str | bytes], int] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def key(self, counter_key: str, text: str) -> tuple[str, str | bytes]:
        if len(text) > self.digest_above:
            return (counter_key, _digest(text))
        return (counter_key, text)

    def get(self, key: tuple[str, str | bytes]) -> int | None:
        return self._data.get(key)

    def put(self, key: tuple[str, str | bytes], value: int) -> None:
        size = len(key[1]) if isinstance(key[1], str) else 16
        with self._lock:
            if key in self._data:
                return
            self._data[key] = value
            self._chars += size
            while len(self._data) > self.maxsize or self._chars > self.max_chars:
                old = next(iter(self._data))
                del self._data[old]
                self._chars -= len(old[1]) if isinstance(old[1], str) else 16

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._data)


COUNT_CACHE = _CountCache()
"""The process-wide count cache (``COUNT_CACHE.clear()`` empties it, e.g. in benchmarks)."""


def _digest(text: str) -> bytes:
    """A digest of ``text``; also rejects text that is not valid Unicode."""
    return hashlib.blake2b(_utf8(text), digest_size=16).digest()


def _utf8(text: str) -> bytes:
    """UTF-8 bytes of ``text``, or a clear error for non-text and lone surrogates."""
    if not isinstance(text, str):
        raise InvalidTextError(f"expected text (str) but got {type(text).__name__}: convert it to str first")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidTextError(
            f"text contains a lone surrogate at index {exc.start} ({text[exc.start]!r}) and is not valid "
            f"Unicode; decode your input with errors='replace' or remove the surrogate"
        ) from exc


def validate_text(text: str) -> None:
    """Raise InvalidTextError unless ``text`` is a str of valid Unicode (no lone surrogates)."""
    if not isinstance(text, str) or not text.isascii():
        _utf8(text)


def _checked(value: object, counter: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, list | tuple):
            return len(value)
        raise CounterError(
            f"counter {counter!r} returned {value!r} ({type(value).__name__}); a counter must return a "
            f"non-negative int or a list of token ids"
        )
    if value < 0:
        raise CounterError(f"counter {counter!r} returned a negative count ({value}); counts must be >= 0")
    return value


_instance_ids = itertools.count()
_WORD = re.compile(r"\S+")


class _CachedCounter:
    """Shared machinery: cached counting, batch counting, exact concatenation."""

    name: str = "counter"
    additive: bool = False
    """True when count(a + b) == count(a) + count(b) for all a, b (bytes counts are)."""

    def __init__(self) -> None:
        self._cache_key = f"{type(self).__name__}:{self.name}:{next(_instance_ids)}"

    # subclasses implement _raw_count and truncate
    def _raw_count(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _raw_count_many(self, texts: Sequence[str]) -> list[int]:
        return [self._raw_count(t) for t in texts]

    def count(self, text: str) -> int:
        """Count ``text`` (memoised)."""
        if not isinstance(text, str):
            validate_text(text)
        key = COUNT_CACHE.key(self._cache_key, text)
        cached = COUNT_CACHE.get(key)
        if cached is not None:
            return cached
        validate_text(text)
        value = _checked(self._raw_count(text), self.name)
        COUNT_CACHE.put(key, value)
        return value

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Count many texts, tokenising only the ones not cached (in parallel where supported)."""
        cache_key = self._cache_key
        keys = []
        out: list[int | None] = []
        for t in texts:
            if not isinstance(t, str):
                validate_text(t)
            k = COUNT_CACHE.key(cache_key, t)
            keys.append(k)
            out.append(COUNT_CACHE.get(k))
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            for i in missing:
                validate_text(texts[i])
            values = self._raw_count_many([texts[i] for i in missing])
            for i, v in zip(missing, values, strict=True):
                checked = _checked(v, self.name)
                out[i] = checked
                COUNT_CACHE.put(keys[i], checked)
        return [v if v is not None else 0 for v in out]

    def count_concat(self, parts: Sequence[str]) -> int:
        """The exact count of ``"".join(parts)``.

        The default re-counts the joined text; counters that know where joins
        cannot change a count override this to reuse the per-part counts.
        """
        if self.additive:
            return sum(self.count_many(parts))
        return self.count("".join(parts))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _cut_chars(text: str, n_keep: int, keep: Keep, total: int) -> str:
    """Keep ``n_keep`` of ``total`` characters as ``keep`` says."""
    if n_keep >= total:
        return text
    if n_keep <= 0:
        return ""
    if keep == "head":
        return text[:n_keep]
    if keep == "tail":
        return text[total - n_keep :]
    head = (n_keep + 1) // 2
    return text[:head] + text[total - (n_keep - head) :]


class _SearchTruncateMixin:
    """Truncation by binary search over character prefixes: works for any monotone counter."""

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        limit = max(0, int(limit))
        count = self.count  # type: ignore[attr-defined]
        if count(text) <= limit:
            return text
        lo, hi = 0, len(text)
        while lo < hi:  # largest n with count(cut(n)) <= limit
            mid = (lo + hi + 1) // 2
            if count(_cut_chars(text, mid, keep, len(text))) <= limit:
                lo = mid
            else:
                hi = mid - 1
        return _cut_chars(text, lo, keep, len(text))


class BytesCounter(_CachedCounter):
    """FACET units: UTF-8 bytes after NFC and LF normalisation (``\\r\\n`` and ``\\r`` become ``\\n``)."""

    name = "bytes"
    additive = False  # NFC can compose across a join

    def neutral_join(self, left_end: str, right_start: str) -> bool:
        """NFC cannot compose across a join before an ASCII character; CR LF would fold to one LF."""
        return right_start.isascii() and not (left_end == "\r" and right_start == "\n")

    @staticmethod
    def normalise(text: str) -> str:
        return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))

    def _raw_count(self, text: str) -> int:
        return len(self.normalise(text).encode("utf-8"))

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        limit = max(0, int(limit))
        norm = self.normalise(text)
        data = norm.encode("utf-8")
        if len(data) <= limit:
            return norm
        if keep == "head":
            return data[:limit].decode("utf-8", "ignore")
        if keep == "tail":
            return data[len(data) - limit :].decode("utf-8", "ignore")
        head = (limit + 1) // 2
        return data[:head].decode("utf-8", "ignore") + data[len(data) - (limit - head) :].decode("utf-8", "ignore")


class ApproximateCounter(_CachedCounter):
    """``ceil(len(text) / 4)``: fast, model-free, pair it with a safety margin."""

    name = "approximate"

    def _raw_count(self, text: str) -> int:
        return -(-len(text) // 4)

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        return _cut_chars(text, max(0, int(limit)) * 4, keep, len(text))


class WhitespaceCounter(_CachedCounter):
    """Counts whitespace-separated words; a fast, exact-by-construction fake for tests and docs."""

    name = "whitespace"

    def neutral_join(self, left_end: str, right_start: str) -> bool:
        """Words cannot merge across whitespace."""
        return left_end.isspace() or right_start.isspace()

    def _raw_count(self, text: str) -> int:
        return len(text.split())

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        """Cut at word boundaries, keeping the original whitespace between kept words."""
        limit = max(0, int(limit))
        spans = [m.span() for m in _WORD.finditer(text)]
        if len(spans) <= limit:
            return text
        if limit == 0:
            return ""
        if keep == "head":
            return text[: spans[limit - 1][1]]
        if keep == "tail":
            return text[spans[len(spans) - limit][0] :]
        head = (limit + 1) // 2
        tail = limit - head
        out = text[: spans[head - 1][1]]
        if tail:
            out += " " + text[spans[len(spans) - tail][0] :]
        return out


class CallableCounter(_SearchTruncateMixin, _CachedCounter):
    """Wraps a callable that returns an int or a list of token ids for a text."""

    def __init__(self, fn: Callable[[str], Any], name: str | None = None) -> None:
        if not callable(fn):
            raise CounterError(f"expected a callable counter but got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or type(fn).__name__
        super().__init__()

    def _raw_count(self, text: str) -> int:
        try:
            value = self.fn(text)
        except Exception as exc:  # a user callable: report it as a counter error
            raise CounterError(f"counter {self.name!r} raised {type(exc).__name__}: {exc}") from exc
        return _checked(value, self.name)


# --------------------------------------------------------------------------- tiktoken


_ENCODING_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "o200k_harmony": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "p50k_base": "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
    "p50k_edit": "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
    "r50k_base": "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
}
_load_lock = threading.Lock()


def _llama_index_cache_dirs() -> list[str]:
    """The tiktoken files llama-index-core ships, found without importing it."""
    found = []
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "llama_index", "core", "_static", "tiktoken_cache")
        if os.path.isdir(candidate):
            found.append(candidate)
    return found


def _local_cache_dirs() -> list[str]:
    dirs = []
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(var):
            dirs.append(os.environ[var])
    dirs.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    dirs.extend(_llama_index_cache_dirs())
    return dirs


def _fetch_from_network(name: str) -> tiktoken.Encoding:
    """tiktoken's own loader (cache, then download). Separate so tests can replace it."""
    import tiktoken

    return tiktoken.get_encoding(name)


def _load_encoding(name: str) -> tiktoken.Encoding:
    import tiktoken
    import tiktoken.registry

    if name in tiktoken.registry.ENCODINGS:
        return tiktoken.registry.ENCODINGS[name]
    if name not in tiktoken.list_encoding_names():
        raise TokenizerUnavailable(
            f"unknown tiktoken encoding {name!r}; known encodings: {', '.join(tiktoken.list_encoding_names())}"
        )
    url = _ENCODING_URLS.get(name)
    if url is not None:
        key = hashlib.sha1(url.encode()).hexdigest()
        for directory in _local_cache_dirs():
            if os.path.exists(os.path.join(directory, key)):
                with _load_lock:
                    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
                    os.environ["TIKTOKEN_CACHE_DIR"] = directory
                    try:
                        return tiktoken.get_encoding(name)
                    except Exception:  # a corrupt local copy: try the next one
                        continue
                    finally:
                        if saved is None:
                            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
                        else:
                            os.environ["TIKTOKEN_CACHE_DIR"] = saved
    if os.environ.get("TOKENBOX_OFFLINE"):
        reason = "TOKENBOX_OFFLINE is set"
    else:
        try:
            return _fetch_from_network(name)
        except Exception as exc:  # requests' ConnectionError and friends never reach the user
            reason = f"{type(exc).__name__}: {exc}"
    raise TokenizerUnavailable(
        f"the tiktoken encoding {name!r} is not available offline and could not be downloaded ({reason}). "
        f"Put a copy in a folder named by TIKTOKEN_CACHE_DIR, or install llama-index-core "
        f"(pip install 'tokenbox-context[llamaindex]'), which ships cl100k_base and o200k_base; "
        f"or use get_counter('approximate') or get_counter('bytes'), which need no files"
    )


_NEWLINE_NEUTRAL = frozenset({"cl100k_base", "o200k_base", "o200k_harmony"})


class TiktokenCounter(_CachedCounter):
    """Exact token counts with a tiktoken encoding (special tokens are counted as plain text)."""

    def __init__(self, encoding: str | tiktoken.Encoding) -> None:
        if isinstance(encoding, str):
            encoding = _load_encoding(encoding)
        self.encoding = encoding
        self.name = encoding.name
        super().__init__()
        self._cache_key = f"tiktoken:{encoding.name}"  # shared by every instance of one encoding
        self._neutral_newline = encoding.name in _NEWLINE_NEUTRAL

    def _raw_count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def _raw_count_many(self, texts: Sequence[str]) -> list[int]:
        # Sequential on purpose: tiktoken's threaded batch API was slower here (it holds the GIL
        # for much of the work) and keeps every token list alive at once, multiplying peak memory.
        encode = self.encoding.encode_ordinary
        return [len(encode(t)) for t in texts]

    def neutral_join(self, left_end: str, right_start: str) -> bool:
        """Whether joining a text ending in ``left_end`` to one starting with ``right_start`` cannot change counts.

        True for the o200k/cl100k pre-tokenisers after a newline and before a
        non-space character other than ``/``: no piece can span that position
        and no match depends on text beyond it (the r50k/p50k pattern's
        ``\\s++$`` does, so those encodings always re-count joins).
        """
        return self._neutral_newline and left_end == "\n" and right_start != "/" and not right_start.isspace()

    def encode(self, text: str) -> list[int]:
        validate_text(text)
        return self.encoding.encode_ordinary(text)

    def count_concat(self, parts: Sequence[str]) -> int:
        """Exact count of the joined parts, re-using per-part counts where a join is neutral.

        In the o200k/cl100k/p50k pre-tokenisers no piece can span a position
        that follows a newline and starts with a non-space character other than
        ``/``, and no piece's match depends on text beyond it; so the joined
        text's count is the sum of the counts of the groups between such
        positions.  Groups are joined and counted (and cached) otherwise.
        """
        groups: list[str] = []
        current: list[str] = []
        for part in parts:
            if not part:
                continue
            if current and not self.neutral_join(current[-1][-1], part[0]):
                current.append(part)
                continue
            if current:
                groups.append("".join(current))
            current = [part]
        if current:
            groups.append("".join(current))
        return sum(self.count_many(groups))

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        limit = max(0, int(limit))
        ids = self.encode(text)
        if len(ids) <= limit:
            return text
        while True:
            if keep == "head":
                out = self._decode_prefix(ids[:limit])
            elif keep == "tail":
                out = self._decode_suffix(ids[len(ids) - limit :]) if limit else ""
            else:
                head = (limit + 1) // 2
                tail = ids[len(ids) - (limit - head) :] if limit - head else []
                out = self._decode_prefix(ids[:head]) + (self._decode_suffix(tail) if tail else "")
            # Re-encoding a cut can merge differently; shrink until the result fits.
            if self.count(out) <= max(0, int(limit)) or limit == 0:
                return out
            limit -= 1

    def _decode_prefix(self, ids: list[int]) -> str:
        data = self.encoding.decode_bytes(ids)
        for trim in range(4):  # a token can end inside a multi-byte character
            try:
                return data[: len(data) - trim].decode("utf-8")
            except UnicodeDecodeError:
                continue
        return data.decode("utf-8", "ignore")

    def _decode_suffix(self, ids: list[int]) -> str:
        data = self.encoding.decode_bytes(ids)
        for trim in range(4):
            try:
                return data[trim:].decode("utf-8")
            except UnicodeDecodeError:
                continue
        return data.decode("utf-8", "ignore")


# --------------------------------------------------------------------------- model names

_MODEL_ENCODINGS: dict[str, str] = {}
_MODEL_PREFIX_ENCODINGS: tuple[tuple[str, str], ...] = (
    ("gpt-5", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-4o", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-oss", "o200k_harmony"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada", "cl100k_base"),
)
_DEFAULT_ENCODING = "cl100k_base"


def register_model_encoding(model: str, encoding: str) -> None:
    """Map a model name to a tiktoken encoding (``budget.register_model`` calls this)."""
    _MODEL_ENCODINGS[model] = encoding
    _COUNTERS.pop(model, None)


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding name for a model; unknown models get cl100k_base, never an error."""
    if model in _MODEL_ENCODINGS:
        return _MODEL_ENCODINGS[model]
    bare = model.rsplit("/", 1)[-1]  # "openai/gpt-4o" → "gpt-4o"
    if bare in _MODEL_ENCODINGS:
        return _MODEL_ENCODINGS[bare]
    for prefix, encoding in _MODEL_PREFIX_ENCODINGS:
        if bare.startswith(prefix):
            return encoding
    try:
        import tiktoken.model

        return tiktoken.model.encoding_name_for_model(bare)
    except (KeyError, ImportError):
        return _DEFAULT_ENCODING


_COUNTERS: dict[str, TokenCounter] = {}
_COUNTERS_LOCK = threading.Lock()
_NAMED: dict[str, Callable[[], TokenCounter]] = {
    "bytes": BytesCounter,
    "approximate": ApproximateCounter,
    "whitespace": WhitespaceCounter,
}


def get_counter(name: str | TokenCounter | Callable[[str], Any] = "o200k_base") -> TokenCounter:
    """Return a counter for a name, an encoding, a model, a counter or a callable.

    >>> get_counter("bytes").count("héllo")
    6
    >>> get_counter("approximate").count("twelve chars")
    3
    """
    if isinstance(name, str):
        with _COUNTERS_LOCK:
            counter = _COUNTERS.get(name)
        if counter is not None:
            return counter
        if name in _NAMED:
            counter = _NAMED[name]()
        else:
            import tiktoken

            encoding = name if name in tiktoken.list_encoding_names() else encoding_for_model(name)
            counter = TiktokenCounter(encoding)
        with _COUNTERS_LOCK:
            return _COUNTERS.setdefault(name, counter)
    if isinstance(name, _CachedCounter):
        return name
    if hasattr(name, "count") and hasattr(name, "truncate") and hasattr(name, "name"):
        return name
    if callable(name):
        return CallableCounter(name)
    raise CounterError(
        f"cannot make a counter from {type(name).__name__}; pass an encoding or model name, 'bytes', "
        f"'approximate', a TokenCounter, or a callable returning an int or a list of ids"
    )


def count_many(counter: TokenCounter, texts: Sequence[str]) -> list[int]:
    """Batch counting for any counter (uses the counter's own batch path when it has one)."""
    many = getattr(counter, "count_many", None)
    if many is not None:
        return list(many(texts))
    return [_checked(counter.count(t), getattr(counter, "name", "counter")) for t in texts]


def count_concat(counter: TokenCounter, parts: Sequence[str]) -> int:
    """Exact count of ``"".join(parts)`` for any counter."""
    concat = getattr(counter, "count_concat", None)
    if concat is not None:
        return int(concat(parts))
    return _checked(counter.count("".join(parts)), getattr(counter, "name", "counter"))


# --------------------------------------------------------------------------- chat messages

PRIMING_TOKENS = 3
"""Every reply is primed with ``<|start|>assistant<|message|>``."""
TOKENS_PER_MESSAGE = 4
"""Per-message overhead of the chat format (role and separators)."""
TOKENS_PER_NAME = 1


def _field(message: Any, key: str) -> Any:
    if isinstance(message, Mapping):
        return message.get(key)
    return getattr(message, key, None)


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, fixed separators, no ASCII escaping."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_text(content: Any) -> str:
    """The text of a message's content: strings as they are, text parts joined by newlines, other parts
    (images, tool-use blocks) as canonical JSON, so that they are counted rather than ignored."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                texts.append(canonical_json(part))
        return "\n".join(texts)
    return str(content)


def _tool_calls_text(tool_calls: Any) -> str:
    if not tool_calls:
        return ""
    calls = []
    for call in tool_calls:
        fn = _field(call, "function") or call
        name = _field(fn, "name") or ""
        args = _field(fn, "arguments")
        if args is None:
            args = _field(call, "args")
        if not isinstance(args, str):
            args = canonical_json(args if args is not None else {})
        calls.append(f"{name}({args})")
    return "\n".join(calls)


def message_token_count(message: Any, counter: TokenCounter) -> int:
    """Tokens one chat message costs: overhead, role, content, name and tool-call payloads.

    Messages are dicts or objects with ``role``/``content`` (and optionally
    ``name``, ``tool_calls``, ``tool_call_id``).
    """
    texts = [str(_field(message, "role") or ""), content_text(_field(message, "content"))]
    total = TOKENS_PER_MESSAGE
    name = _field(message, "name")
    if name:
        texts.append(str(name))
        total += TOKENS_PER_NAME
    calls = _tool_calls_text(_field(message, "tool_calls"))
    if calls:
        texts.append(calls)
    call_id = _field(message, "tool_call_id")
    if call_id:
        texts.append(str(call_id))
    return total + sum(count_many(counter, [t for t in texts if t]))


def count_message_tokens(messages: Iterable[Any], counter: TokenCounter | str = "o200k_base") -> int:
    """Tokens a list of chat messages costs, as OpenAI counts them.

    3 priming tokens, 4 per message, plus role, content, names (+1 each) and
    tool-call payloads (function names and arguments) and tool-call ids, which
    the seed's code forgets.

    >>> count_message_tokens([{"role": "user", "content": "hi"}], "whitespace")
    9
    """
    resolved = get_counter(counter)
    return PRIMING_TOKENS + sum(message_token_count(m, resolved) for m in messages)
