"""Usage anchoring: approximate counts tightened by the input tokens a provider reported for requests already sent.

Claude's and Gemini's tokenizers are not published, so their text is counted
as chars/4 plus a stated 30 % margin.  The provider's ``usage`` on every
response is the ground truth for that request.  :class:`UsageCalibrator`
collects (what was sent, what the provider counted) per model and derives a
factor over a base estimate (o200k_base counts by default, or chars/4):

- ``units``: the base count of the request's text parts (for messages, the
  texts :func:`~tokenbox_core.tokens._messages.message_token_count` counts), and
  ``fixed``: the chat overhead it adds without the counter (per-message
  framing, media); a request needs the factor ``(reported - fixed) / units``;
- the pooled ratio ``R = Σ(reported - fixed) / Σ units`` is the central
  estimate; the factor is ``R × (1 + m)`` with ``m`` the largest of
  ``min_margin``, the spread the observations show (the ``coverage`` quantile
  of the needed factors over ``R``) and the model's stated error bound (30 %)
  decaying as ``prior × prior_weight / (prior_weight + n)``: consistent
  observations shrink it, scattered ones keep it wide;
- the factor is rounded *up* to 1/10,000 and applied as
  ``ceil(base count × factor)`` in exact rational arithmetic;
- a text (or request) it was fed is counted at least at what the provider
  reported for it: the counter keeps those counts by content hash (the hashes,
  not the texts, are what is stored).

The result depends only on the set of observations (sums, a quantile, a
maximum: no order, no clock, no randomness), and a repeated observation is
recorded once.  :meth:`UsageCalibrator.counter` returns a
:class:`CalibratedCounter`, a ``TokenCounter`` usable wherever one is accepted.

Persisted format (``save`` / ``load``, JSON, texts never stored)::

    {"format": "tokenbox-usage-calibration", "version": 1, "base": "o200k_base",
     "prior_weight": 8, "min_margin": 0.02, "coverage": 0.9,
     "observations": [{"model": "claude-sonnet-4-5", "id": "<32 hex digits>", "content": "t<32 hex digits>",
                       "units": 812, "fixed": 11, "reported": 1003}, ...]}

``content`` is ``t`` (a text) or ``m`` (chat messages) and a SHA-256 prefix of
what was sent (the text, or the canonical JSON of the messages); ``id`` is one
of the model, the content and the reported count; observations are sorted by
model and id.

Kept with the session: ``UsageCalibrator(store=session.store, session_id=...)``
reads the observations the session archive already holds (same ``base``) and
writes each new one to it as it is observed, so a calibration survives
restarts with the conversation it was learnt on (``SQLiteSessionStore`` and
``MemorySessionStore`` keep them; ``clear`` deletes them with the session).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tokenbox_core.errors import CounterError, TokenBoxWarning, UsageReportError
from tokenbox_core.models._calibrated import CalibratedCounter, Calibration, Observation, _Measure, content_key
from tokenbox_core.models._profile import DEFAULT_APPROXIMATION_ERROR, ModelProfile
from tokenbox_core.models._registry import find_model_profile, normalise_model_name
from tokenbox_core.models._usage import read_usage

__all__ = ["UsageCalibrator"]

FORMAT = "tokenbox-usage-calibration"
VERSION = 1
GRID = 10_000
"""Factors are rounded up to a multiple of 1/GRID."""
_BASES = ("approximate", "bytes", "whitespace")


@runtime_checkable
class UsageStore(Protocol):
    """A session store that keeps usage observations (both of TokenBox's stores do)."""

    def record_usage(self, session_id: str, rows: Iterable[Mapping[str, Any]]) -> None: ...

    def usage(self, session_id: str) -> list[dict[str, Any]]: ...


def _quantile(values: list[Fraction], q: float) -> Fraction:
    """The nearest-rank ``q`` quantile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _ceil_grid(value: Fraction) -> Fraction:
    return Fraction(-((-value.numerator * GRID) // value.denominator), GRID)


def _count_arg(name: str, value: object, *, fraction: bool = False) -> None:
    ok = isinstance(value, int | float) if fraction else isinstance(value, int)
    if isinstance(value, bool) or not ok or not math.isfinite(float(value)) or float(value) < 0:  # type: ignore[arg-type]
        kind = "a finite number" if fraction else "an integer"
        raise CounterError(f"{name} must be {kind} >= 0, got {value!r}")


class UsageCalibrator:
    """Calibrates approximate counts per model from provider-reported input tokens.

    >>> cal = UsageCalibrator()
    >>> text = "Calibration anchors estimates to what the provider billed. " * 20
    >>> _ = cal.observe("claude-sonnet-4-5", text, 260)
    >>> cal.counter("claude-sonnet-4-5").count(text) >= 260
    True

    Args:
        prior_weight: how many observations the model's stated error bound counts
            for (the margin halves after this many consistent observations).
        min_margin: the smallest margin over the pooled ratio, however many
            observations agree.
        coverage: the share of the observed requests the factor alone must cover
            (the quantile of their needed factors); the rest are covered only by
            the counts remembered for them.
        base: the counter the factor scales: a tiktoken encoding (``"o200k_base"``,
            the default), ``"approximate"`` (chars/4), ``"bytes"`` or ``"whitespace"``.
            On held-out text counted by a real Claude tokenizer, a calibrated
            o200k_base count was off by +6.7 % on average (4.6 % of texts under),
            a calibrated chars/4 by +58.8 % (16.1 % under), because one factor
            over chars/4 cannot fit prose, code, JSON and CJK at once
            (``benchmarks/bench_calibration.py``).
        store: a session store to keep the observations in (``session.store``);
            the ones it already holds for ``session_id`` and ``base`` are loaded.
        session_id: the session they belong to (required with ``store``).
    """

    def __init__(
        self,
        *,
        prior_weight: int = 8,
        min_margin: float = 0.02,
        coverage: float = 0.9,
        base: str = "o200k_base",
        store: UsageStore | None = None,
        session_id: str | None = None,
    ) -> None:
        _count_arg("prior_weight", prior_weight)
        _count_arg("min_margin", min_margin, fraction=True)
        if isinstance(coverage, bool) or not isinstance(coverage, int | float) or not 0 < coverage <= 1:
            raise CounterError(f"coverage must be a fraction in (0, 1] (0.9 = 90 %), got {coverage!r}")
        if not isinstance(base, str) or not base:
            raise CounterError(f"base must be a counter name such as 'approximate' or 'o200k_base', got {base!r}")
        if base not in _BASES:
            import tiktoken

            if base not in tiktoken.list_encoding_names():
                raise CounterError(
                    f"base must be 'approximate', 'bytes', 'whitespace' or a tiktoken encoding "
                    f"({', '.join(tiktoken.list_encoding_names())}), got {base!r}"
                )
        from tokenbox_core.tokens._registry import get_counter

        self.prior_weight = prior_weight
        self.min_margin = float(min_margin)
        self.coverage = float(coverage)
        self.base = base
        self._base = get_counter(base)
        self._observations: dict[tuple[str, str], Observation] = {}
        self._lock = threading.Lock()
        self._store, self._session_id = _bind(store, session_id)
        if self._store is not None:
            rows = self._store.usage(self._session_id)
            for n, row in enumerate(rows):
                if row["base"] == base:
                    self._add(_observation(n, row))
            other = sorted({str(row["base"]) for row in rows} - {base})
            if other:
                warnings.warn(
                    f"session {self._session_id!r} keeps usage observations measured with base {', '.join(other)}; "
                    f"this calibrator counts with {base!r}, so they are not used (pass base={other[0]!r} to use them)",
                    TokenBoxWarning,
                    stacklevel=2,
                )

    # -- feeding ------------------------------------------------------------------------------------------------------

    @staticmethod
    def model_key(model: str) -> str:
        """The name observations are filed under: the model's profile family, else its normalised name."""
        if not isinstance(model, str) or not model.strip():
            raise CounterError(f"model must be a model name such as 'claude-sonnet-4-5', got {model!r}")
        profile = find_model_profile(model)
        return profile.name if profile is not None else normalise_model_name(model)

    def _profile(self, model: str) -> ModelProfile | None:
        profile = find_model_profile(model)
        if profile is not None and not profile.approximate:
            how = profile.counting.encoding or profile.counting.tokenizer_file
            raise CounterError(
                f"counts for {profile.name} are exact ({how}): there is nothing to calibrate; calibration is for "
                f"models counted approximately (Claude, Gemini)"
            )
        return profile

    def observe(self, model: str, sent: Any, reported: Any) -> Observation:
        """Record one request: ``sent`` (a text, a chat message or a list of them) and the provider's ``reported``
        usage (a number, a usage dict, LangChain ``usage_metadata``, a LlamaIndex response: see
        :func:`~tokenbox_core.models.read_usage`).  Returns the observation; an identical one is recorded once."""
        key = self.model_key(model)
        profile = self._profile(model)
        tokens = read_usage(reported).input_tokens
        if tokens is None:
            raise UsageReportError(
                f"the usage reported for {key} carries no input token count (cache diagnostics only?): pass the "
                f"response's usage, e.g. response.usage or message.usage_metadata"
            )
        units, fixed, content = self._measure(sent, profile)
        if units == 0 and tokens > fixed:
            raise UsageReportError(
                f"{key}: the request has no text to scale ({fixed} fixed tokens) but {tokens} were reported; "
                f"feed the whole request that was sent (system prompt and messages)"
            )
        digest = hashlib.sha256(json.dumps([key, content, tokens]).encode()).hexdigest()[:32]
        observation = Observation(key, digest, units, fixed, tokens, content)
        if self._store is not None and (key, digest) not in self._observations:
            row = {"base": self.base, "model": key, "id": digest, "content": content}
            self._store.record_usage(self._session_id, [{**row, "units": units, "fixed": fixed, "reported": tokens}])
        self._add(observation)
        return observation

    def _add(self, observation: Observation) -> None:
        with self._lock:
            self._observations.setdefault((observation.model, observation.id), observation)

    def _measure(self, sent: Any, profile: ModelProfile | None) -> tuple[int, int, str]:
        from tokenbox_core.tokens._messages import count_message_tokens

        if isinstance(sent, str):
            return self._base.count(sent), 0, content_key(sent)
        messages: Sequence[Any]
        if isinstance(sent, Mapping):
            messages = [sent]
        elif isinstance(sent, Sequence) and not isinstance(sent, bytes | bytearray):
            messages = sent
        else:
            raise UsageReportError(
                f"sent must be the text or the chat messages of the request, got {type(sent).__name__}"
            )
        if not messages:
            raise UsageReportError("sent is an empty list of messages: feed the messages the request carried")
        fixed = count_message_tokens(messages, _Measure(self._base, profile, False))
        total = count_message_tokens(messages, _Measure(self._base, profile, True))
        return total - fixed, fixed, content_key(list(messages))

    def observe_many(self, model: str, requests: Iterable[tuple[Any, Any]]) -> None:
        """Record many ``(sent, reported)`` pairs."""
        for sent, reported in requests:
            self.observe(model, sent, reported)

    # -- reading ------------------------------------------------------------------------------------------------------

    @property
    def observations(self) -> tuple[Observation, ...]:
        with self._lock:
            return tuple(sorted(self._observations.values()))

    def __len__(self) -> int:
        return len(self._observations)

    def models(self) -> list[str]:
        """The models with observations, sorted."""
        return sorted({o.model for o in self.observations})

    def calibration(self, model: str) -> Calibration:
        """The model's calibration from the observations so far (the prior alone when there are none)."""
        key = self.model_key(model)
        profile = find_model_profile(model)
        prior = (
            Fraction(str(profile.counting.error_bound))
            if profile is not None
            else Fraction(str(DEFAULT_APPROXIMATION_ERROR))
        )
        seen = [o for o in self.observations if o.model == key and o.units > 0]
        if not seen:
            factor = _ceil_grid(1 + prior)
            return Calibration(key, self.base, 0, 1.0, float(factor - 1), factor)
        units = sum(o.units for o in seen)
        scaled = sum(max(0, o.reported - o.fixed) for o in seen)
        ratio = Fraction(scaled, units)
        decay = prior * Fraction(self.prior_weight, self.prior_weight + len(seen))
        spread = _quantile([o.needed for o in seen], self.coverage) / ratio - 1 if ratio else Fraction(0)
        margin = max(Fraction(str(self.min_margin)), decay, spread)
        factor = _ceil_grid(ratio * (1 + margin)) if ratio else _ceil_grid(1 + margin)
        shown = float(factor / ratio - 1) if ratio else float(margin)
        return Calibration(key, self.base, len(seen), float(ratio), shown, factor)

    def counter(self, model: str) -> CalibratedCounter:
        """A counter for ``model`` with its calibration as of now (later observations do not change it)."""
        profile = self._profile(model)
        key = self.model_key(model)
        seen: dict[str, int] = {}
        for o in self.observations:
            if o.model == key and o.content:
                seen[o.content] = max(seen.get(o.content, 0), o.reported)
        return CalibratedCounter(self.calibration(model), self._base, profile, seen)

    # -- persistence --------------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "base": self.base,
            "prior_weight": self.prior_weight,
            "min_margin": self.min_margin,
            "coverage": self.coverage,
            "observations": [
                {
                    "model": o.model,
                    "id": o.id,
                    "content": o.content,
                    "units": o.units,
                    "fixed": o.fixed,
                    "reported": o.reported,
                }
                for o in self.observations
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UsageCalibrator:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise UsageReportError(f"not a calibration: expected a dict with format {FORMAT!r}")
        if data.get("version") != VERSION:
            raise UsageReportError(
                f"calibration format version {data.get('version')!r} is not supported (this TokenBox reads "
                f"version {VERSION}); recalibrate from the session's usage"
            )
        cal = cls(
            prior_weight=data.get("prior_weight", 8),
            min_margin=data.get("min_margin", 0.02),
            coverage=data.get("coverage", 0.9),
            base=data.get("base", "approximate"),
        )
        for n, row in enumerate(data.get("observations") or []):
            cal._add(_observation(n, row))
        return cal

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the calibration as JSON (atomically: a reader never sees half a file)."""
        target = Path(path)
        text = json.dumps(self.to_dict(), indent=1, sort_keys=True)
        fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent or None)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> UsageCalibrator:
        """Read a calibration written by :meth:`save`."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageReportError(
                f"cannot read calibration {os.fspath(path)!r}: {exc.strerror or exc}; start with UsageCalibrator()"
            ) from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageReportError(
                f"calibration {os.fspath(path)!r} is not JSON ({exc.msg} at line {exc.lineno})"
            ) from exc
        return cls.from_dict(data)

    def __repr__(self) -> str:
        return f"UsageCalibrator({len(self)} observations of {len(self.models())} models, base={self.base!r})"


def _bind(store: object, session_id: object) -> tuple[Any, str]:
    if store is None:
        if session_id is not None:
            raise UsageReportError("session_id needs a store: pass store=session.store as well (or neither)")
        return None, ""
    if not isinstance(store, UsageStore):
        raise UsageReportError(
            f"{type(store).__name__} does not keep usage observations (it has no record_usage/usage); use "
            f"SQLiteSessionStore or MemorySessionStore, or save the calibration to a file with save()"
        )
    if not isinstance(session_id, str) or not session_id:
        raise UsageReportError(f"session_id must name the session the usage belongs to, got {session_id!r}")
    return store, session_id


def _observation(n: int, row: Mapping[str, Any]) -> Observation:
    """A persisted observation, checked (``n`` is its position, for the message)."""
    try:
        fields = (row["units"], row["fixed"], row["reported"], str(row.get("content") or ""))
        o = Observation(str(row["model"]), str(row["id"]), *fields)
    except (KeyError, TypeError) as exc:
        raise UsageReportError(f"calibration observation {n} is malformed ({exc!r}): {row!r}") from exc
    for name in ("units", "fixed", "reported"):
        value = getattr(o, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageReportError(f"calibration observation {n}: {name} must be an integer >= 0, got {value!r}")
    return o
