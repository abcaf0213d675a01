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

Counts are remembered per counter by a digest of the text in a cache bounded
in bytes (:mod:`tokenbox_core.tokens._cache`), so the same text is not tokenised
twice.  Encodings load offline first (:mod:`tokenbox_core.tokens._encodings`).

The package's modules, one idea each: ``base`` (the protocol and text checks),
``cache`` (the count cache), ``counters`` (counters that need no files),
``encodings`` (offline loading), ``tiktoken_counter``, ``cut`` (cutting to N
tokens of an encoding), ``fast`` (the ``fast`` extra's exact counter), ``guard``
(your own counter objects, their failures reported as ``CounterError``),
``registry`` (names to counters), ``messages`` (chat message costs).  Every
public name is importable from ``tokenbox_core.tokens``.
"""

from tokenbox_core.tokens._base import Keep, TokenCounter
from tokenbox_core.tokens._cache import COUNT_CACHE
from tokenbox_core.tokens._messages import PRIMING_TOKENS, canonical_json, content_text, count_message_tokens
from tokenbox_core.tokens._registry import get_counter

__all__ = [
    "COUNT_CACHE",
    "Keep",
    "PRIMING_TOKENS",
    "TokenCounter",
    "canonical_json",
    "content_text",
    "count_message_tokens",
    "get_counter",
]
