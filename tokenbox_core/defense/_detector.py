"""Injection detection (chapter §6.9.2 Layer 1 "instruction pattern detection", Algorithm 6.6).

:class:`InjectionDetector` is the extension point: ``detect(text, source)``
returns a :class:`Detection` — a score in 0..1 and the findings that
produced it.  :class:`HeuristicDetector` is the deterministic default (no
model, no download); :class:`CompositeDetector` combines several (``max`` or
a weighted mean), for instance the heuristic and an ML classifier plug-in.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from tokenbox_core.defense._analyzers import (
    REVERSED_KEYWORDS,
    ROT13_KEYWORDS,
    decoded_blobs,
    exfiltration_urls,
    hidden_spans,
    reversed_candidate,
    rot13_candidate,
)
from tokenbox_core.defense._claims import CLAIM_RULES
from tokenbox_core.defense._decoders import (
    BINARY_PROBE,
    CAESAR_PROBES,
    MORSE_PROBES,
    PROBES,
    binary_blobs,
    caesar_candidate,
    morse_blobs,
)
from tokenbox_core.defense._detached import DETACHED_RULES
from tokenbox_core.defense._dismissal import DISMISSAL_RULES
from tokenbox_core.defense._homoglyphs import fold_mixed_words
from tokenbox_core.defense._leet import leet_candidate
from tokenbox_core.defense._lexicon import VERBS, find_overrides
from tokenbox_core.defense._multilingual import MULTILINGUAL_RULES
from tokenbox_core.defense._prefilter import Prefilter
from tokenbox_core.defense._rules import CASED_RULES, RULES, Rule, discusses_attacks, introduces_example
from tokenbox_core.defense._sanitize import detection_view
from tokenbox_core.defense._structure import STRUCTURE_RULES
from tokenbox_core.errors import ConfigError, ConfigTypeError

__all__ = [
    "DETECTOR_RULES",
    "CompositeDetector",
    "Detection",
    "Finding",
    "HeuristicDetector",
    "InjectionDetector",
    "combine",
]

_SNIPPET = 80
_PER_RULE = 3
_QUOTED = re.compile(r"\"[^\"\n]{3,300}\"|“[^”\n]{3,300}”|(?<!\w)'[^'\n]{8,300}'(?!\w)|«[^»\n]{3,300}»|`[^`\n]{3,300}`")
"""A quotation; an apostrophe inside a word ("dell'esercizio", "don't") neither opens nor closes one."""
_TAG_RUN = re.compile("[\U000e0000-\U000e007f]{4,}")
"""Four or more characters of the Unicode tag block (:data:`~tokenbox_core.defense._chars.CHAR_CLASSES` ``"tag"``)."""
_IN_WORD = "\u200b\u200c\u200d\u2060\u00ad\ufeff"
_SPLIT_WORD = re.compile(f"\\w[{_IN_WORD}]+\\w")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
"""The bidi embedding, override and isolate controls (U+202A-U+202E, U+2066-U+2069)."""
_SMUGGLING = re.compile(f"[{_IN_WORD}\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")
"""Any character one of the three smuggling findings needs (one search: most text holds none)."""
_NEGATED = re.compile(r"(?:\bdo not|\bdon't|\bnever|\bnot to|\bshould not|\bshouldn't|\bmust not)\s+$")
_NEGATABLE = frozenset({"leak", "exfil_action"})
DETECTOR_RULES: tuple[Rule, ...] = (
    RULES + STRUCTURE_RULES + DETACHED_RULES + MULTILINGUAL_RULES + DISMISSAL_RULES + CLAIM_RULES
)
"""Every rule over the case-folded view: stock phrases and forged markup, structures, requests detached from their
document, other languages (their structures, "ignore the page and say", mode and authority claims)."""
_ENCODED_PROBES = frozenset(ROT13_KEYWORDS + REVERSED_KEYWORDS + PROBES)
_REQUESTS = frozenset(
    {"output_directive", "output_format", "reply_language", "assistant_task", "detached_question", "detached_task"}
)
"""Rules that read a request to the assistant ("translate your answer into French"): what a user asks in their
own message, and an injection only inside data (any other source)."""


@dataclass(frozen=True)
class Finding:
    """One piece of evidence: the rule, its family, its weight and what it matched.

    Attributes:
        rule: the rule name (``"chat_template_token"``, ``"override_phrase"``, ...).
        family: the evidence family; only the strongest finding of a family counts.
        weight: 0..1 after discounts (quotation, discussion of attacks).
        match: the matched text, at most 80 characters, from the detection view.
        offset: where the match starts in the detection view.
    """

    rule: str
    family: str
    weight: float
    match: str
    offset: int

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready form for the trace."""
        return {"rule": self.rule, "family": self.family, "weight": round(self.weight, 4), "match": self.match}


@dataclass(frozen=True)
class Detection:
    """A detector's verdict: ``score`` in 0..1 and the ``findings`` behind it."""

    score: float
    findings: tuple[Finding, ...] = ()
    detector: str = "heuristic"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready form for the trace."""
        return {
            "detector": self.detector,
            "score": round(self.score, 4),
            "findings": [f.to_dict() for f in self.findings],
        }


@runtime_checkable
class InjectionDetector(Protocol):
    """Scores a text for injected instructions (chapter §6.9.3, ``InjectionDetector(input)``).

    ``source`` is the source type (``"user"``, ``"tool"``, ``"retrieval"``, ...)
    so a detector may judge differently per source.  Must be deterministic.
    """

    def detect(self, text: str, source: str) -> Detection:
        """Return the score in 0..1 and the findings that produced it."""
        ...


def combine(findings: Iterable[Finding]) -> float:
    """Noisy-OR over families: ``1 - Π(1 - max weight of the family)``.

    >>> combine([Finding("a", "x", 0.5, "", 0), Finding("b", "x", 0.3, "", 0), Finding("c", "y", 0.5, "", 0)])
    0.75
    """
    best: dict[str, float] = {}
    for f in findings:
        best[f.family] = max(best.get(f.family, 0.0), f.weight)
    miss = 1.0
    for family in sorted(best):
        miss *= 1.0 - min(1.0, max(0.0, best[family]))
    return round(1.0 - miss, 6)


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"


def _quoted_spans(low: str) -> tuple[list[int], list[int]]:
    """Start and end offsets of quotations (not JSON strings or attribute values)."""
    starts: list[int] = []
    ends: list[int] = []
    for m in _QUOTED.finditer(low):
        before = low[max(0, m.start() - 8) : m.start()].rstrip()[-1:]
        after = low[m.end() : m.end() + 8].lstrip()[:1]
        if before in (":", "[", "{", ",", "=") or after == ":":
            continue
        starts.append(m.start())
        ends.append(m.end())
    return starts, ends


class _Discounter:
    """Quotation and discussion discounts, computed only when a linguistic finding needs them."""

    def __init__(self, low: str, quote: float, meta: float) -> None:
        self.low, self.quote, self.meta = low, quote, meta
        self.spans: tuple[list[int], list[int]] | None = None
        self.discusses: bool | None = None

    def __call__(self, linguistic: bool, offset: int, weight: float) -> float:
        if not linguistic:
            return weight
        if self.spans is None:
            self.spans = _quoted_spans(self.low)
        starts, ends = self.spans
        i = bisect.bisect_right(starts, offset) - 1
        if i >= 0 and offset < ends[i]:
            return weight * self.quote
        if self.discusses is None:
            self.discusses = discusses_attacks(self.low)
        return weight * self.meta if self.discusses or introduces_example(self.low, offset) else weight


class HeuristicDetector:
    """The default deterministic injection detector (chapter §6.9.1-6.9.2).

    Reads the detection view of :func:`~tokenbox_core.defense._sanitize.detection_view`
    (entities and escapes decoded, invisible characters removed, NFKC), case-
    folds it and folds homoglyphs inside mixed-script words, then collects
    findings from:

    - instruction overrides in 16 languages (a dismissal verb and an
      instruction object in one sentence; strong with a backward qualifier);
    - fake roles and chat-template tokens (``<|im_start|>``, ``[INST]``,
      ``<<SYS>>``, ``### Instruction``, ``system:`` lines), forged section
      delimiters and boundary strings;
    - text addressed to the model from inside data (not to an "AI team"),
      persona switches, claims that its instructions are void or outdated,
      demands of exclusive obedience, requests to leak the system prompt,
      the preamble or secrets (discounted when negated: "never share your
      password"), secrecy, tool abuse and money transfers;
    - instructions inside HTML/markdown comments and hidden elements;
    - markdown/HTML image and link URLs built to exfiltrate data;
    - base64 (also after ``key=``), hex and binary blobs, Morse code, rot13
      and other Caesar shifts, and leetspeak ("1gn0re") that decode to
      instructions (scanned recursively, ``max_depth`` levels);
    - smuggling: Unicode tag runs, zero-width characters inside words, bidi
      overrides, mixed-script (homoglyph) words.

    Linguistic findings inside a quotation are multiplied by
    ``quote_discount`` and, in a text that discusses attacks, by
    ``meta_discount``; structural findings never are.  The score is the
    noisy-OR of the strongest finding per family (:func:`combine`).
    """

    name = "heuristic"

    def __init__(
        self,
        *,
        quote_discount: float = 0.3,
        meta_discount: float = 0.6,
        max_depth: int = 2,
        native: bool | None = None,
    ) -> None:
        for label, value in (("quote_discount", quote_discount), ("meta_discount", meta_discount)):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"HeuristicDetector {label} must be in 0..1, got {value!r}")
        if max_depth < 0:
            raise ConfigError(f"HeuristicDetector max_depth must be >= 0, got {max_depth!r}")
        self.quote_discount = quote_discount
        self.meta_discount = meta_discount
        self.max_depth = max_depth
        probes = VERBS + ROT13_KEYWORDS + REVERSED_KEYWORDS + PROBES
        self._rules = Prefilter(DETECTOR_RULES, native=native, probes=probes)
        self._cased = Prefilter(CASED_RULES, native=native)

    def __repr__(self) -> str:
        return (
            f"HeuristicDetector(quote_discount={self.quote_discount}, meta_discount={self.meta_discount}, "
            f"max_depth={self.max_depth})"
        )

    def detect(self, text: str, source: str = "tool") -> Detection:
        """Score ``text`` from source type ``source``: a request to the assistant counts only outside ``"user"``."""
        findings = self._smuggling(text) + self._scan(detection_view(text), 0)
        if source == "user":
            findings = [f for f in findings if f.rule not in _REQUESTS]
        return Detection(combine(findings), tuple(findings), self.name)

    def _smuggling(self, raw: str) -> list[Finding]:
        found: list[Finding] = []
        if raw.isascii() or _SMUGGLING.search(raw) is None:
            return found
        tags = _TAG_RUN.search(raw)
        if tags:
            found.append(Finding("tag_smuggling", "invisible", 0.55, f"{len(tags.group())} tag characters", 0))
        split = _SPLIT_WORD.findall(raw)
        if len(split) >= 3:
            found.append(Finding("split_keywords", "invisible", 0.4, f"{len(split)} words split by invisibles", 0))
        bidi = _BIDI.search(raw)
        if bidi:
            found.append(Finding("bidi_override", "invisible", 0.35, f"U+{ord(bidi.group()):04X}", bidi.start()))
        return found

    def _scan(self, view: str, depth: int) -> list[Finding]:
        low, mixed = fold_mixed_words(view.casefold())
        discounted = _Discounter(low, self.quote_discount, self.meta_discount)
        findings: list[Finding] = []
        if mixed:
            findings.append(Finding("mixed_script", "homoglyph", 0.45 if mixed >= 3 else 0.3, f"{mixed} words", 0))
        # One pass finds every gate literal, override verb and decoder gate: only the rules it opens run.
        rules, probes = self._rules.scan(low)
        verbs = [p for p in probes if p not in _ENCODED_PROBES]
        for o in find_overrides(low, verbs)[:_PER_RULE] if verbs else ():
            weight = 0.6 if o.strong else (0.35 if o.text.isascii() or o.ambiguous else 0.5)
            findings.append(Finding("override_phrase", "override", discounted(True, o.start, weight),
                                    _snippet(o.text), o.start))  # fmt: skip
        findings.extend(self._apply(rules, low, discounted))
        findings.extend(self._apply(self._cased.scan(view)[0], view, discounted))
        for offset, url, weight in exfiltration_urls(view):
            findings.append(Finding("exfiltration_url", "exfil_url", weight, _snippet(url), offset))
        if depth >= self.max_depth:
            return findings
        if depth == 0:
            for offset, hidden in hidden_spans(view):
                inner = combine(self._scan(hidden, depth + 1))
                if inner >= 0.25:
                    findings.append(Finding("hidden_instruction", "hidden", 0.4, _snippet(hidden), offset))
        blobs = decoded_blobs(view)
        blobs += binary_blobs(view) if BINARY_PROBE in probes else []
        blobs += morse_blobs(view) if any(p in MORSE_PROBES for p in probes) else []
        for offset, encoding, decoded in blobs:
            findings.extend(self._decoded(f"{encoding}_instruction", decoded, offset, depth, 0.15))
        leet = leet_candidate(low) if depth == 0 else None
        if leet is not None:
            findings.extend(self._decoded("leetspeak_instruction", leet, 0, depth, 0.1))
        rot = rot13_candidate(view) if sum(p in ROT13_KEYWORDS for p in probes) >= 2 else None
        if rot is not None:
            findings.extend(self._decoded("rot13_instruction", rot, 0, depth, 0.15))
        # Every shift whose shifted common words occur; rot13 again only if its keyword path did not decode it.
        shifts = [CAESAR_PROBES[p] for p in probes if p in CAESAR_PROBES and (rot is None or CAESAR_PROBES[p] != 13)]
        caesar = caesar_candidate(view, shifts) if shifts else None
        if caesar is not None:
            rule = "rot13_instruction" if caesar[0] == 13 else "caesar_instruction"
            findings.extend(self._decoded(rule, caesar[1], 0, depth, 0.15))
        backwards = reversed_candidate(low) if sum(p in REVERSED_KEYWORDS for p in probes) >= 2 else None
        if backwards is not None:
            findings.extend(self._decoded("reversed_instruction", backwards, 0, depth, 0.15))
        return findings

    def _decoded(self, rule: str, decoded: str, offset: int, depth: int, bonus: float) -> list[Finding]:
        """A finding ``rule`` when ``decoded`` (text a decoder found at ``offset``) scores 0.3 or more one level
        deeper: the decoded score plus ``bonus`` (hiding an instruction is evidence too)."""
        inner = combine(self._scan(decoded, depth + 1))
        if inner < 0.3:
            return []
        return [Finding(rule, "encoded", min(1.0, inner + bonus), _snippet(decoded), offset)]

    @staticmethod
    def _apply(rules: Sequence[Rule], text: str, discounted: _Discounter) -> list[Finding]:
        out: list[Finding] = []
        for rule in rules:
            k = 0
            for m in rule.pattern.finditer(text):
                start = m.start()
                if rule.lead is not None and rule.lead.search(text, max(0, start - 12), start) is None:
                    continue
                if rule.context is not None and not rule.context(text, start, m.end()):
                    continue
                k += 1
                weight = discounted(rule.linguistic, start, rule.weight)
                if rule.family in _NEGATABLE and _NEGATED.search(text, max(0, start - 16), start):
                    weight *= 0.3  # "do not share your password": advice, not a request
                out.append(Finding(rule.name, rule.family, weight, _snippet(m.group()), start))
                if k == _PER_RULE:
                    break
        return out


class CompositeDetector:
    """Several detectors as one: ``mode="max"`` or a ``"weighted"`` mean of scores.

    Findings of every member are kept, each tagged with its detector's name.

    >>> class Always:
    ...     def detect(self, text, source): return Detection(0.9, (), "always")
    >>> CompositeDetector([HeuristicDetector(), Always()]).detect("hello", "tool").score
    0.9
    """

    def __init__(
        self,
        detectors: Sequence[InjectionDetector],
        *,
        mode: Literal["max", "weighted"] = "max",
        weights: Sequence[float] | None = None,
    ) -> None:
        if not detectors:
            raise ConfigError("CompositeDetector needs at least one detector")
        if mode not in ("max", "weighted"):
            raise ConfigError(f"CompositeDetector mode must be 'max' or 'weighted', got {mode!r}")
        if weights is not None and (len(weights) != len(detectors) or any(w < 0 for w in weights) or not any(weights)):
            raise ConfigError(
                f"CompositeDetector weights must be {len(detectors)} non-negative numbers, not all zero; "
                f"got {list(weights)!r}"
            )
        for d in detectors:
            if not isinstance(d, InjectionDetector):
                raise ConfigTypeError(f"{d!r} is not an InjectionDetector (it needs detect(text, source) -> Detection)")
        self.detectors = tuple(detectors)
        self.mode = mode
        self.weights = tuple(float(w) for w in weights) if weights is not None else (1.0,) * len(detectors)

    def detect(self, text: str, source: str = "tool") -> Detection:
        """Run every member; combine the scores by ``mode``."""
        results = [d.detect(text, source) for d in self.detectors]
        if self.mode == "max":
            score = max(r.score for r in results)
        else:
            score = sum(w * r.score for w, r in zip(self.weights, results, strict=True)) / sum(self.weights)
        findings = tuple(
            Finding(f"{r.detector}:{f.rule}", f.family, f.weight, f.match, f.offset)
            for r in results
            for f in r.findings
        )
        return Detection(round(score, 6), findings, "+".join(r.detector for r in results))
