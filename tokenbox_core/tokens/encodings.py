"""Loading tiktoken encodings, offline first.

tiktoken downloads encodings on first use.  To work offline, the counter first
looks for a local copy: ``TIKTOKEN_CACHE_DIR`` (or ``DATA_GYM_CACHE_DIR``),
tiktoken's default cache, then the cl100k/o200k files that llama-index-core
ships.  Only when none exists does tiktoken try the network; if that fails the
error is :class:`~tokenbox_core.errors.TokenizerUnavailable`, naming the fix.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
from typing import TYPE_CHECKING

from tokenbox_core.errors import TokenizerUnavailable

if TYPE_CHECKING:
    import tiktoken

__all__: list[str] = []


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
