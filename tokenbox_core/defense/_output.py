"""Output-side checks (chapter §6.9.2, Layer 4).

:func:`check_output` inspects a model's answer against the compile that
produced it: a leaked canary token, leaked boundary markers (or their
tokens), a leaked system prompt measured as the share of the system
prompt's word n-grams that reappear in the output, and secret shapes — API
keys (``sk-…``, ``AKIA…``, ``ghp_…``, ``xox?-…``, ``AIza…``) and private-key
blocks (``-----BEGIN … PRIVATE KEY-----``), found by the PII detector's
patterns.

Each check reads the output in the shapes a leak takes (:mod:`~tokenbox_core.defense._leaks`): a canary or
boundary token upper- or lower-cased, spaced out, split by newlines or other separators, joined by zero-width
characters, in full-width letters, or encoded as base64, hex, percent-encoding or rot13; the system prompt
copied in full-width letters, with invisible characters, or inside a base64, hex, binary or Morse run.

What to do with a failed check is the caller's choice: ``check.redact(text)``
replaces every secret span with ``[REDACTED api_key]`` (send the answer on),
or ``check.raise_if_leaked()`` raises :class:`~tokenbox_core.errors.SecurityError`
(reject it).  Not detected: secrets without a recognisable shape (passwords,
tokens of unknown format), a system prompt paraphrased rather than copied, and a
token spelt out in words, reversed or encrypted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tokenbox_core.defense._leaks import OutputView
from tokenbox_core.defense._sanitize import detection_view
from tokenbox_core.defense._trace import DefenseReport
from tokenbox_core.errors import ConfigError, ConfigTypeError, SecurityError

__all__ = ["OutputCheck", "check_output"]

SECRET_KINDS = ("api_key", "private_key")
"""The PII detector's kinds that :func:`check_output` treats as leaked secrets."""

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class OutputCheck:
    """The verdict of :func:`check_output`.

    Attributes:
        canary_leaked: the canary token appears in the output.
        leaked_boundaries: boundary markers or tokens that appear in the output.
        system_overlap: share (0..1) of the system prompt's word n-grams found in the output.
        system_leaked: ``system_overlap`` reached the policy's ``leak_threshold``.
        secrets: ``(kind, start, end)`` of every API key or private-key block in the output.
    """

    canary_leaked: bool
    leaked_boundaries: tuple[str, ...]
    system_overlap: float
    system_leaked: bool
    secrets: tuple[tuple[str, int, int], ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing leaked."""
        return not (self.canary_leaked or self.leaked_boundaries or self.system_leaked or self.secrets)

    def redact(self, text: str) -> str:
        """``text`` (the output this check read) with every secret span replaced by ``[REDACTED kind]``."""
        for kind, start, end in sorted(self.secrets, key=lambda s: s[1], reverse=True):
            text = f"{text[:start]}[REDACTED {kind}]{text[end:]}"
        return text

    def raise_if_leaked(self) -> None:
        """Raise :class:`~tokenbox_core.errors.SecurityError` naming what leaked, unless :attr:`ok`."""
        if self.ok:
            return
        what = [
            *(["the canary"] if self.canary_leaked else []),
            *([f"boundary markers ({', '.join(self.leaked_boundaries)})"] if self.leaked_boundaries else []),
            *([f"the system prompt ({self.system_overlap:.0%} of its n-grams)"] if self.system_leaked else []),
            *([f"secrets ({', '.join(sorted({k for k, _, _ in self.secrets}))})"] if self.secrets else []),
        ]
        raise SecurityError(
            f"the model's output leaks {'; '.join(what)}: do not send it on; check.redact(text) removes secret "
            f"spans, or regenerate"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "ok": self.ok,
            "canary_leaked": self.canary_leaked,
            "leaked_boundaries": list(self.leaked_boundaries),
            "system_overlap": round(self.system_overlap, 4),
            "system_leaked": self.system_leaked,
            "secrets": [{"kind": k, "start": a, "end": b} for k, a, b in self.secrets],
        }


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.casefold())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _report_of(compiled: Any) -> DefenseReport:
    if isinstance(compiled, DefenseReport):
        return compiled
    report = getattr(compiled, "defense", None)
    if isinstance(report, DefenseReport):
        return report
    raise ConfigTypeError(
        "check_output needs a compile made with defence on (CompilerConfig(defense=DefensePolicy(...))) "
        f"or its DefenseReport; got {type(compiled).__name__} without one"
    )


def check_output(text: str, compiled: Any, *, ngram: int | None = None, threshold: float | None = None) -> OutputCheck:
    """Check a model's output for leaks (chapter §6.9.2, Layer 4).

    ``compiled`` is a compiled context with a ``.defense`` report, or the
    :class:`~tokenbox_core.defense._trace.DefenseReport` itself.  The system
    prompt is every trusted text section of the compile; its word ``ngram``-
    grams are compared with the output's, and a share at or above
    ``threshold`` is a leak (both default to the policy's ``leak_ngram`` and
    ``leak_threshold``).
    """
    report = _report_of(compiled)
    ngram = report.leak_ngram if ngram is None else ngram
    threshold = report.leak_threshold if threshold is None else threshold
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(f"check_output threshold must be in (0, 1], got {threshold!r}")
    if ngram < 2:
        raise ConfigError(f"check_output ngram must be >= 2, got {ngram!r}")
    view = OutputView(text)
    canary = report.canary is not None and (report.canary in text or view.holds(report.canary.rsplit("-", 1)[-1]))
    tokens = sorted({w.event.token for w in report.wrapped if w.event.token})
    leaked = tuple(f"boundary_{t}" for t in tokens if t in text or view.holds(t))
    system = "\n".join(report.trusted[k] for k in sorted(report.trusted))
    grams = _ngrams(detection_view(system), ngram)
    overlap = len(grams & _ngrams(view.text, ngram)) / len(grams) if grams else 0.0
    from tokenbox_core.compiler._pii import RegexPIIDetector  # the PII gate's patterns, one definition

    secrets = tuple((m.kind, m.start, m.end) for m in RegexPIIDetector(kinds=SECRET_KINDS).find(text))
    return OutputCheck(canary, leaked, overlap, overlap >= threshold, secrets)
