"""The options of a :class:`~tokenbox_core.ContextSession`: recall, observation masking and offload.

Each is a frozen dataclass validated at construction (a misspelt keyword fails
with a did-you-mean); the session takes ``True`` (the defaults), ``False``
(off), an instance, or a dict of its fields.

>>> MaskingConfig(keep_last=2).keep_last
2
>>> RecallConfig(shrae=0.2)
Traceback (most recent call last):
...
tokenbox_core._arguments.UnknownArgumentError: RecallConfig got unknown argument 'shrae' (did you mean 'share'?); \
its arguments are cached_share, embedder, limit, max_term_share, min_coverage, min_relevance, min_share, min_terms, \
neighbours, rrf_k, share, summaries
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tokenbox_core._arguments import check_arguments
from tokenbox_core.errors import SessionError

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "MaskingConfig",
    "OffloadConfig",
    "RecallConfig",
    "coerce_option",
]

DEFAULT_PLACEHOLDER = (
    '[tool result {id} ({tool}, {tokens} tokens) masked to save room; it is archived whole: rehydrate("{id}"). '
    "First line: {preview}]"
)
"""The masking placeholder: ``{id}`` (archived id), ``{tool}`` (the tool's name), ``{tokens}`` (its size),
``{preview}`` (its first line, shortened)."""

_T = TypeVar("_T")


def _strict(cls: type[_T]) -> type[_T]:
    """Unknown keyword arguments fail at construction with a did-you-mean (not Python's bare TypeError)."""
    init = cls.__init__
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        check_arguments(cls.__name__, kwargs, names)
        init(self, *args, **kwargs)

    cls.__init__ = checked  # type: ignore[method-assign]
    return cls


def _int(owner: str, name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SessionError(f"{owner}: {name} must be an integer >= {low}, got {value!r}")


def _share(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise SessionError(f"{owner}: {name} must be a number between 0 and 1, got {value!r}; e.g. 0.15")


@_strict
@dataclass(frozen=True)
class RecallConfig:
    """Recall: archived turns outside the window that the current question needs, brought back verbatim.

    Args:
        share: most of the room (what the other tiers leave) recalled turns may use, e.g. 0.8: recall takes what
            its hits (and their calls and neighbours) need, up to this share; a question matching nothing takes
            none, and what recall does not need stays with the history (``_allocate``).  Measured on LoCoMo
            (``benchmarks/bench_recall.py``): a fixed 15 % held one to four messages.
        cached_share: with ``cache_aware``, recall's room is this fixed share of the budget instead: a room that
            followed the question would move the window's cut with every new question, and every cached prefix
            with it (``benchmarks/bench_agent_loop.py``: 88 % of prompt tokens cacheable at 10 % of the session
            with a fixed 15 %, 21 % when the room followed the evidence).  Prompt caching or recall: the option
            says which a session favours.
        min_share: recall is skipped when less than this share of the room is left for it.
        limit: most archived messages a compile recalls (hits; their calls and neighbours come on top).
        neighbours: messages either side of a hit brought along when room allows (the answer is often
            the reply next to the turn the question's words match).
        embedder: optional ``text -> vector`` (:class:`~tokenbox_core.session._recall.Embedder`), fused with
            BM25 by reciprocal-rank fusion.
        rrf_k: the fusion's constant ``k`` in ``1 / (k + rank)``.
        summaries: checkpoint summaries of omitted turns where they buy more than verbatim turns would in the same
            tokens.  The rule: recall's room goes to verbatim messages first (the hits, their calls, their
            neighbours); what it leaves goes to verbatim turns too — the window grows into it — unless the window
            is cache-aware and cannot grow without moving its cut; only then does it hold summaries, newest first,
            each covering at least ``min_coverage`` times its own size in omitted turns none of which is recalled
            (the same tokens spent verbatim would show at most ``1 / min_coverage`` of what it covers).
        min_coverage: see ``summaries``.
        min_relevance: the relevance gate's score floor: a hit is recalled only when it scores at least this
            share of the best hit's score (BM25's, or the fused score with an embedder); off by default (on
            LoCoMo a floor of 0.25 lost 4–6 points of evidence recall and saved no false recall worth having).
        min_terms: the relevance gate's evidence: a BM25 hit must hold at least this many *distinctive* query
            terms — words found in at most ``max_term_share`` of the session's messages (or in at most 10) — so a
            question whose only shared words are ones the whole conversation uses recalls nothing (``0``: no term
            gate).  The default (1 term in at most 20 % of messages) was measured on LoCoMo: 5 % left a fifth of a
            long conversation's questions with nothing recalled.
        max_term_share: see ``min_terms``.
    """

    share: float = 0.8
    cached_share: float = 0.15
    min_share: float = 0.02
    limit: int = 60
    neighbours: int = 1
    embedder: Callable[[str], Sequence[float]] | None = None
    rrf_k: int = 60
    summaries: bool = True
    min_coverage: float = 4.0
    min_relevance: float = 0.0
    min_terms: int = 1
    max_term_share: float = 0.2

    def __post_init__(self) -> None:
        if (
            isinstance(self.min_coverage, bool)
            or not isinstance(self.min_coverage, int | float)
            or self.min_coverage < 1
        ):
            raise SessionError(f"RecallConfig: min_coverage must be a number >= 1, got {self.min_coverage!r}; e.g. 4")
        _share("RecallConfig", "share", self.share)
        _share("RecallConfig", "cached_share", self.cached_share)
        _share("RecallConfig", "min_share", self.min_share)
        _int("RecallConfig", "limit", self.limit, 1)
        _int("RecallConfig", "neighbours", self.neighbours, 0)
        _int("RecallConfig", "rrf_k", self.rrf_k, 1)
        _share("RecallConfig", "min_relevance", self.min_relevance)
        _int("RecallConfig", "min_terms", self.min_terms, 0)
        _share("RecallConfig", "max_term_share", self.max_term_share)
        if self.embedder is not None and not callable(self.embedder):
            raise SessionError(f"RecallConfig: embedder must be callable text -> vector, got {self.embedder!r}")


@_strict
@dataclass(frozen=True)
class MaskingConfig:
    """Observation masking: old tool results shown as a one-line placeholder in the compiled view.

    When the history does not fit, tool results older than the newest ``keep_last`` tool groups are masked,
    oldest first, before any whole turn or tool group is dropped.  The archive keeps them whole.

    Args:
        keep_last: the newest tool groups never masked.
        exclude_tools: tool names whose results are never masked.
        placeholder: the placeholder's template (:data:`DEFAULT_PLACEHOLDER`'s fields).
        preview_chars: the most characters of the first line shown.
    """

    keep_last: int = 3
    exclude_tools: tuple[str, ...] = ()
    placeholder: str = DEFAULT_PLACEHOLDER
    preview_chars: int = 120

    def __post_init__(self) -> None:
        _int("MaskingConfig", "keep_last", self.keep_last, 0)
        _int("MaskingConfig", "preview_chars", self.preview_chars, 0)
        if isinstance(self.exclude_tools, str) or not all(isinstance(t, str) for t in self.exclude_tools):
            raise SessionError(
                f"MaskingConfig: exclude_tools must be a tuple of tool names, got {self.exclude_tools!r}"
            )
        object.__setattr__(self, "exclude_tools", tuple(self.exclude_tools))
        try:
            self.placeholder.format(id="t_1", tool="t", tokens=1, preview="p")
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            raise SessionError(
                f"MaskingConfig: placeholder {self.placeholder!r} is not a template over {{id}}, {{tool}}, "
                f"{{tokens}} and {{preview}}: {exc!r}"
            ) from exc


@_strict
@dataclass(frozen=True)
class OffloadConfig:
    """Offload: a tool result over ``threshold_tokens`` is shown as its head and tail with its archived id.

    The archive holds it whole; ``ContextSession.rehydrate(id, offset=, limit=)`` returns any part of it
    (offsets in characters).

    Args:
        threshold_tokens: results larger than this are offloaded.
        head / tail: tokens of the result's start and end shown.
    """

    threshold_tokens: int = 2000
    head: int = 300
    tail: int = 200

    def __post_init__(self) -> None:
        _int("OffloadConfig", "threshold_tokens", self.threshold_tokens, 1)
        _int("OffloadConfig", "head", self.head, 0)
        _int("OffloadConfig", "tail", self.tail, 0)
        if self.head + self.tail >= self.threshold_tokens:
            raise SessionError(
                f"OffloadConfig: head + tail ({self.head + self.tail}) must be below threshold_tokens "
                f"({self.threshold_tokens}), or a preview would be as large as what it stands for"
            )


def coerce_option(name: str, value: object, kind: type[_T]) -> _T | None:
    """``True`` → defaults, ``False``/``None`` → off, an instance as is, a dict → its fields."""
    if value is True:
        return kind()
    if value is False or value is None:
        return None
    if isinstance(value, kind):
        return value
    if isinstance(value, Mapping):
        return kind(**value)
    raise SessionError(f"{name} must be True, False, a {kind.__name__} or a dict of its fields, got {value!r}")
