"""Deterministic lexical signals shared by the summarizer, archive search and hygiene (chapter §6.7.1, §6.8.4).

Words are lower-cased runs of letters, digits and ``_``; stopwords are a fixed
English list.  Decision and correction detectors are fixed regular expressions
(chapter §6.7.1: "explicit choice", "the user corrected the agent").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from tokenbox_core.errors import SessionError

__all__ = [
    "STOPWORDS",
    "contains_correction",
    "contains_decision",
    "content_words",
    "cosine",
    "information_density",
    "lexical_similarity",
    "term_vector",
    "words",
]

_WORD = re.compile(r"[^\W_][\w]*(?:[.\-/][\w]+)*")
_TECHNICAL = re.compile(r"\d|[_./\-]|[a-z][A-Z]|^[A-Z]")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just let me more most my myself no nor not now
    of off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves ok okay sure yes please
    thanks thank also get got like one well""".split()
)

_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|let'?s (?:go with|use|do|pick|choose)|we(?:'ll| will) (?:use|go|do|pick)|"
    r"i(?:'ll| will) (?:use|go with|pick)|going with|chose|choose|chosen|agreed|settle[d]? on|we should use|"
    r"final answer|the plan is|approved?)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"(?:^\s*no\b|\bactually\b|\bthat'?s (?:wrong|incorrect|not right)\b|\bcorrection\b|\bi meant\b|"
    r"\binstead\b|\bnot what i\b|\bwrong\b|\bmistake\b|\bshould (?:be|have been)\b|\bchange (?:it|that) to\b|"
    r"\bscratch that\b|\bdon'?t use\b)",
    re.IGNORECASE,
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens (identifiers such as ``data.csv`` or ``v1.2`` stay whole)."""
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Words that are not stopwords."""
    return [w for w in words(text) if w not in STOPWORDS]


def information_density(text: str) -> float:
    """Share of content: (non-stopwords + technical terms and names) / (2 × words), in [0, 1] (§6.7.1 factor 1)."""
    raw = _WORD.findall(text)
    if not raw:
        return 0.0
    content = sum(1 for w in raw if w.lower() not in STOPWORDS)
    # a lower-case alphabetic word is never technical: only the others are searched (most words; summaries
    # score every turn of a block this way)
    technical = sum(1 for w in raw if not (w.isalpha() and w.islower()) and _TECHNICAL.search(w))
    return (content + min(technical, content)) / (2 * len(raw))


def cosine(a: Sequence[float] | Mapping[str, float], b: Sequence[float] | Mapping[str, float]) -> float:
    """Cosine similarity of two dense vectors or two sparse (term → weight) vectors; 0 for a zero vector."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        dot = sum(w * b.get(t, 0.0) for t, w in a.items())
        na, nb = math.sqrt(sum(w * w for w in a.values())), math.sqrt(sum(w * w for w in b.values()))
    else:
        va, vb = [float(x) for x in a], [float(x) for x in b]
        if len(va) != len(vb):
            raise SessionError(
                f"embedding lengths differ: {len(va)} and {len(vb)}; use one embedding model for the whole session"
            )
        dot = sum(x * y for x, y in zip(va, vb, strict=True))
        na, nb = math.sqrt(sum(x * x for x in va)), math.sqrt(sum(y * y for y in vb))
    return dot / (na * nb) if na and nb else 0.0


def term_vector(terms: Iterable[str]) -> dict[str, float]:
    """Bag-of-words counts as a sparse vector."""
    return {t: float(n) for t, n in sorted(Counter(terms).items())}


def lexical_similarity(text: str, other: str) -> float:
    """Cosine of the two texts' content-word vectors (the default task relevance, §6.7.1 factor 2)."""
    return cosine(term_vector(content_words(text)), term_vector(content_words(other)))


def contains_decision(text: str) -> bool:
    """True when the text states an explicit choice ("let's use", "we decided", "going with")."""
    return _DECISION.search(text) is not None


_CORRECTION_WORDS = (
    "actually", "wrong", "incorrect", "not right", "correction", "meant", "instead", "not what", "mistake", "should",
    "change", "scratch",
)  # fmt: skip
"""A word every match of ``_CORRECTION`` holds (besides a leading "no" and "don't use"): a text holding none is not
searched (the search tries a dozen patterns at every character)."""


def contains_correction(text: str) -> bool:
    """True when the text corrects something said before ("no,", "actually", "that's wrong", "instead")."""
    folded = text.casefold()
    if (
        not folded.lstrip().startswith("no")
        and not ("don" in folded and "use" in folded)
        and not any(w in folded for w in _CORRECTION_WORDS)
    ):
        return False
    return _CORRECTION.search(text) is not None
