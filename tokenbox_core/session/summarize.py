"""Summarizers: the ``Summarizer`` protocol and the extractive summarizer of Algorithm 6.3 (chapter §6.7.1).

>>> from tokenbox_core.tokens import get_counter
>>> s = ExtractiveSummarizer()
>>> turns = [
...     {"role": "user", "content": "hi there", "id": "t_1"},
...     {"role": "user", "content": "We decided to use PostgreSQL 16 for the orders service.", "id": "t_2"},
...     {"role": "assistant", "content": "ok", "id": "t_3"},
... ]
>>> print(s.summarize(turns, 16, counter=get_counter("whitespace")))
[Extracted from conversation history]
t_2 user: We decided to use PostgreSQL 16 for the orders service.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from tokenbox_core.errors import SessionError
from tokenbox_core.session.lexical import (
    contains_correction,
    contains_decision,
    content_words,
    cosine,
    information_density,
    lexical_similarity,
    term_vector,
)
from tokenbox_core.session.model import message_text
from tokenbox_core.tokens import TokenCounter

__all__ = ["PREAMBLE", "ExtractiveSummarizer", "Summarizer", "TurnScore", "turn_line"]

PREAMBLE = "[Extracted from conversation history]"
"""The preamble Algorithm 6.3 puts before the extracted turns."""

Embed = Callable[[str], Sequence[float]]


@runtime_checkable
class Summarizer(Protocol):
    """Turns (neutral messages, each with an ``id``) and a target size → summary text of at most ``target_tokens``.

    ``name`` identifies the summarizer *and its version/prompt*: it is part of every summary's provenance and
    fingerprint, so changing what a summarizer writes must change its name.
    """

    @property
    def name(self) -> str: ...

    def summarize(self, messages: Sequence[Mapping[str, Any]], target_tokens: int, *, counter: TokenCounter) -> str:
        """Summarise ``messages`` into at most ``target_tokens`` tokens of ``counter``."""
        ...


def turn_line(message: Mapping[str, Any]) -> str:
    """One line per turn: ``<id> <role>: <text>`` with the text's whitespace collapsed."""
    text = " ".join(message_text(message).split())
    head = f"{message['id']} " if message.get("id") else ""
    return f"{head}{message.get('role', '')}: {text}"


@dataclass(frozen=True)
class TurnScore:
    """The five factors of Algorithm 6.3 for one turn, and the weighted score."""

    index: int
    density: float
    relevance: float
    recency: float
    decision: bool
    correction: bool
    score: float


@dataclass(frozen=True)
class ExtractiveSummarizer:
    """Algorithm 6.3: score each turn, take the best greedily under the target, restore chronological order.

    score = w1·InformationDensity + w2·TaskRelevance + w3·e^(−λ·age) + w4·ContainsDecision + w5·ContainsCorrection

    Args:
        weights: ``(w1, w2, w3, w4, w5)``.
        decay: ``λ``, the recency decay per turn of age (age 0 = the block's last turn).
        task: the current task objective for relevance; ``None`` scores relevance against the block's own
            content (its centroid), which keeps a block's summary independent of the moment it is written.
        embed: optional embedding function; relevance becomes the cosine of embeddings instead of the lexical
            cosine of content words.
        preamble: the first line of the summary.

    Ties in score are broken by position (earlier first), so the output is deterministic.
    """

    weights: tuple[float, float, float, float, float] = (1.0, 1.0, 0.5, 1.5, 2.0)
    decay: float = 0.1
    task: str | None = None
    embed: Embed | None = None
    preamble: str = PREAMBLE
    name: str = "extractive/1"

    def __post_init__(self) -> None:
        if len(self.weights) != 5 or any(not math.isfinite(w) or w < 0 for w in self.weights):
            raise SessionError(f"weights must be five finite numbers >= 0 (w1..w5), got {self.weights!r}")
        if not math.isfinite(self.decay) or self.decay < 0:
            raise SessionError(f"decay must be a finite number >= 0, got {self.decay!r}")

    def score(self, messages: Sequence[Mapping[str, Any]]) -> list[TurnScore]:
        """The factors and score of every turn, in input order."""
        texts = [message_text(m) for m in messages]
        relevance = self._relevance(texts)
        w1, w2, w3, w4, w5 = self.weights
        last = len(messages) - 1
        out = []
        for i, text in enumerate(texts):
            density = information_density(text)
            recency = math.exp(-self.decay * (last - i))
            decision, correction = contains_decision(text), contains_correction(text)
            total = w1 * density + w2 * relevance[i] + w3 * recency + w4 * decision + w5 * correction
            out.append(TurnScore(i, density, relevance[i], recency, decision, correction, total))
        return out

    def _relevance(self, texts: Sequence[str]) -> list[float]:
        if self.embed is not None:
            target_vec = self.embed(self.task if self.task is not None else "\n".join(texts))
            return [max(0.0, cosine(self.embed(t), target_vec)) for t in texts]
        if self.task is not None:
            return [lexical_similarity(t, self.task) for t in texts]
        centroid = term_vector(w for t in texts for w in content_words(t))
        return [cosine(term_vector(content_words(t)), centroid) for t in texts]

    def summarize(self, messages: Sequence[Mapping[str, Any]], target_tokens: int, *, counter: TokenCounter) -> str:
        """The extractive summary: preamble, then the selected turns as ``<id> <role>: <text>`` lines in order.

        Fits in ``target_tokens`` (counted on the whole text); when no whole turn fits, the best-scoring turn
        is cut to the room left rather than returning the preamble alone.
        """
        base = counter.count(self.preamble)
        if target_tokens < base:
            raise SessionError(
                f"target_tokens={target_tokens} is below the preamble's {base} tokens; raise min_summary_tokens"
            )
        lines = [turn_line(m) for m in messages]
        ranked = sorted(self.score(messages), key=lambda s: (-s.score, s.index))
        room = target_tokens - counter.count(self.preamble + "\n")
        selected: list[int] = []
        used = 0
        for s in ranked:
            cost = counter.count(lines[s.index] + "\n")
            if used + cost <= room:
                selected.append(s.index)
                used += cost
        if not selected and ranked and room > 0:
            best = ranked[0].index
            lines[best] = counter.truncate(lines[best], room)
            selected.append(best)
        while selected:
            text = "\n".join([self.preamble, *(lines[i] for i in sorted(selected))])
            if counter.count(text) <= target_tokens:
                return text
            selected.pop()  # joins can merge tokens differently: drop the weakest until it fits
        return self.preamble
