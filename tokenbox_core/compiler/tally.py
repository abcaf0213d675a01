"""Counts the compile derives instead of encoding a text twice (issue 11: "never count the same text twice").

Rank needs each passage's size on its own (the token-cost-inverse factor, chapter §6.4.1 stage 3); the
Token Box then measures the same passage followed by its section's item separator.  Encoding both would
read every passage twice.  :func:`count_before` counts the Token Box's string (``text + suffix``, cached
for the layout) and derives ``count(text)`` from the few characters after the text's last position no token
can span — the tokens layer's :func:`~tokenbox_core.tokens.fast_tail.count_apart`; which positions those are
for each encoding, and why, is :mod:`tokenbox_core.tokens.neutral`.
"""

from __future__ import annotations

from tokenbox_core.tokens import TokenCounter
from tokenbox_core.tokens.fast_tail import count_apart

__all__ = ["count_before"]


def count_before(counter: TokenCounter, text: str, suffix: str) -> int:
    """``counter.count(text)``, having counted ``text + suffix`` and re-counted only the tail (both cached).

    >>> from tokenbox_core.tokens import get_counter
    >>> counter = get_counter("o200k_base")
    >>> count_before(counter, "Refunds take two weeks.", "\\n") == counter.count("Refunds take two weeks.")
    True
    """
    return count_apart(counter, text, suffix)
