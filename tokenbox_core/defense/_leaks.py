"""The shapes a leaked token or prompt takes in a model's output, read back for :func:`check_output`.

A model asked to hide a canary still leaks it when told to "spell it out", "say it in capitals" or "encode it".
:class:`OutputView` reads an output once, in linear time, into the forms the checks search:

- the *view*: the detector's :func:`~tokenbox_core.defense._sanitize.detection_view` (HTML entities, escapes and
  percent-encoded runs decoded, invisible and format characters removed, NFKC, so full-width letters are ASCII),
  plus the text of the base64, hex, binary-octet and Morse runs in it that decode to prose (the detector's
  decoders, :mod:`~tokenbox_core.defense._analyzers` and :mod:`~tokenbox_core.defense._decoders`);
- the *skeleton*: the view case-folded with everything but letters and digits removed, so a token spaced out,
  split by a newline, upper-cased or joined by other separators reads as the token;
- the *compact* view: the view without whitespace, where base64 wrapped over lines reads as one run.

:meth:`OutputView.holds` looks for a random token (the 16 hex digits of a canary or boundary) in the skeleton —
as it is, hex-encoded (its ASCII bytes as hex digits, in any case, with any separators) and rot13'd — and in the
compact view base64-encoded (standard and URL-safe alphabets, at each of the three byte alignments a token can
have inside a longer encoded text; only the characters the token alone determines are searched).  The token is
the HMAC-derived part, so a match by chance needs 64 random bits to line up: the normalisation brings no false
positives on the benchmark's benign texts (``benchmarks/bench_output_check.py``).  Not read: a token translated
into words ("four a zero nine"), reversed, or encrypted.
"""

from __future__ import annotations

import base64
import codecs
import re

from tokenbox_core.defense._analyzers import decoded_blobs
from tokenbox_core.defense._decoders import binary_blobs, morse_blobs
from tokenbox_core.defense._sanitize import detection_view

__all__ = ["OutputView", "base64_cores"]

_NOT_ALNUM = re.compile(r"[\W_]+")
_SPACE = re.compile(r"\s+")


def _skeleton(text: str) -> str:
    return _NOT_ALNUM.sub("", text.casefold())


def base64_cores(data: bytes) -> list[str]:
    """The base64 characters ``data`` alone determines wherever it sits in an encoded text, per byte alignment
    (0, 1 or 2 bytes before it in its group of three), standard alphabet.

    >>> cores = base64_cores(b"4a096042c3205e68")
    >>> all(core in base64.b64encode(pre + b"4a096042c3205e68" + b"!").decode() for pre, core in
    ...     zip((b"", b"x", b"xy"), cores))
    True
    """
    cores = []
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + data).decode("ascii")
        first = -(-8 * pad // 6)  # the first character whose six bits all come from ``data``
        last = 8 * (pad + len(data)) // 6  # characters before this one hold no bit after ``data``
        cores.append(encoded[first:last])
    return cores


class OutputView:
    """One model output read into the forms the leak checks search (module docstring)."""

    def __init__(self, text: str) -> None:
        view = detection_view(text)
        decoded = [blob for _, _, blob in (*decoded_blobs(view), *binary_blobs(view), *morse_blobs(view))]
        self.text = "\n".join([view, *decoded])
        """The view with the decoded runs after it: what the system-prompt overlap reads."""
        self.skeleton = _skeleton(self.text)
        self.compact = _SPACE.sub("", view)

    def holds(self, token: str) -> bool:
        """Whether ``token`` (a random string of letters and digits) is in the output in any shape read here."""
        bare = _skeleton(token)
        if not bare:
            return False
        if any(
            n in self.skeleton for n in (bare, token.encode("utf-8").hex(), _skeleton(codecs.encode(token, "rot13")))
        ):
            return True
        cores = base64_cores(token.encode("utf-8"))
        urlsafe = [c.replace("+", "-").replace("/", "_") for c in cores]
        return any(core and core in self.compact for core in (*cores, *urlsafe))
