"""Loading tiktoken encodings, offline first.

tiktoken downloads encodings on first use.  To work offline, the counter first
looks for a local copy: ``TIKTOKEN_CACHE_DIR`` (or ``DATA_GYM_CACHE_DIR``),
tiktoken's default cache, then the cl100k/o200k files that llama-index-core
ships, and builds the encoding from that file directly (checked against the
registry's hash; the process environment is never modified).  Only when none
exists does tiktoken try the network; if that fails the error is
:class:`~tokenbox_core.errors.TokenizerUnavailable`, naming the fix.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import tempfile
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tokenbox_core.errors import TokenizerUnavailable

if TYPE_CHECKING:
    import tiktoken

__all__: list[str] = []


_load_lock = threading.Lock()
_LOADED: dict[str, tiktoken.Encoding] = {}  # encodings built here from local files (tiktoken's registry untouched)


class _NoLocalCopy(Exception):
    """No local file holds the encoding (or none matches its expected hash)."""


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


def _read_local_bpe(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """``load_tiktoken_bpe`` for a local copy: the first file named like tiktoken's cache key that matches the hash.

    The format is tiktoken's (one ``base64-token rank`` per line).  The file is
    read here rather than through ``tiktoken.load.load_tiktoken_bpe(path)``
    because that would copy it into tiktoken's cache directory.
    """
    key = hashlib.sha1(url.encode()).hexdigest()
    for directory in _local_cache_dirs():
        path = os.path.join(directory, key)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if expected_hash is not None and hashlib.sha256(data).hexdigest() != expected_hash:
            continue  # a corrupt or different copy: try the next one
        ranks: dict[bytes, int] = {}
        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks
    raise _NoLocalCopy(url)


def _local_constructor(name: str) -> Callable[[], dict[str, Any]] | None:
    """The registry's constructor for ``name``, reading its BPE file with :func:`_read_local_bpe`.

    tiktoken's constructors (``tiktoken_ext.openai_public``) hold each
    encoding's pattern and special tokens and fetch the ranks with
    ``load_tiktoken_bpe(url, expected_hash=...)``.  The constructor is rebound
    to a copy of its module's namespace in which that loader reads local files,
    so the pattern and special tokens stay the registry's, and neither the
    environment nor tiktoken's modules are modified.
    """
    import tiktoken.registry

    constructors = tiktoken.registry.ENCODING_CONSTRUCTORS or {}
    original = constructors.get(name)
    if not isinstance(original, types.FunctionType) or "load_tiktoken_bpe" not in original.__globals__:
        return None
    namespace = dict(original.__globals__)
    namespace["load_tiktoken_bpe"] = _read_local_bpe
    for key, value in original.__globals__.items():  # o200k_harmony calls o200k_base: rebind them all
        if isinstance(value, types.FunctionType) and value.__globals__ is original.__globals__:
            namespace[key] = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__)
    rebound = namespace[original.__name__]
    return rebound if callable(rebound) else None


def _load_local(name: str) -> tiktoken.Encoding | None:
    """Build ``name`` from a local copy of its file, or ``None`` when there is none."""
    import tiktoken

    with _load_lock:
        if name in _LOADED:
            return _LOADED[name]
        constructor = _local_constructor(name)
        if constructor is None:
            return None
        try:
            encoding = tiktoken.Encoding(**constructor())
        except _NoLocalCopy:
            return None
        _LOADED[name] = encoding
        return encoding


def _load_encoding(name: str) -> tiktoken.Encoding:
    import tiktoken
    import tiktoken.registry

    if name in tiktoken.registry.ENCODINGS:  # the host already loaded it
        return tiktoken.registry.ENCODINGS[name]
    if name not in tiktoken.list_encoding_names():
        raise TokenizerUnavailable(
            f"unknown tiktoken encoding {name!r}; known encodings: {', '.join(tiktoken.list_encoding_names())}"
        )
    local = _load_local(name)
    if local is not None:
        return local
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
