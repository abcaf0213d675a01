"""``CompilerConfig``: the compiler's versioned, immutable configuration (chapter §6.4.2 "Versioned configuration").

Every threshold, weight, allocation bound and policy of the six stages lives
here, validated at construction: a misspelt allocator, overflow policy or
tier name fails where it was typed.  ``version`` is a SemVer string recorded
in every trace (``config_version``).

Elastic tiers are named ``"evidence"`` (2), ``"memory"`` (3) and
``"history"`` (4); ranking weights are also keyed by ``"tools"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from tokenbox_core._arguments import suggest_keywords
from tokenbox_core._frozen import FrozenDict
from tokenbox_core.cache._window import CacheWindow
from tokenbox_core.compiler._pii import PIIDetector, RegexPIIDetector
from tokenbox_core.compiler._utility import BoundedLogUtility, UtilityFunction
from tokenbox_core.errors import CompilerInputError
from tokenbox_core.lenses import get_lens

__all__ = [
    "ALLOCATORS",
    "ELASTIC_TIERS",
    "OVERFLOW_POLICIES",
    "TASK_CLASSES",
    "Allocator",
    "CompilerConfig",
    "OverflowPolicy",
    "RankingWeights",
    "TaskClass",
]

Allocator = Literal["priority", "utility"]
OverflowPolicy = Literal["fail_loud", "truncate_lowest", "cascade_compress", "defer_retrieval", "paginate"]
TaskClass = Literal["interactive", "safety_critical", "batch"]
ALLOCATORS: tuple[str, ...] = ("priority", "utility")
OVERFLOW_POLICIES: tuple[str, ...] = ("fail_loud", "truncate_lowest", "cascade_compress", "defer_retrieval", "paginate")
TASK_CLASSES: tuple[str, ...] = ("interactive", "safety_critical", "batch")
ELASTIC_TIERS: tuple[str, ...] = ("evidence", "memory", "history")
_RANKED = ("evidence", "memory", "tools", "history")
_DEFAULT_OVERFLOW = {"interactive": "cascade_compress", "safety_critical": "fail_loud", "batch": "paginate"}
_SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
_SECTIONS = ("policy", "developer", "task", "tools", "evidence", "memory", "history", "user")
_METRICS = (
    "budget_utilization",
    "signal_density",
    "provenance_coverage",
    "constraint_density",
    "duplication_rate",
    "staleness_index",
    "injection_vulnerability_surface",
    "compression_fidelity",
)


def _number(name: str, value: object, *, low: float = 0.0, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CompilerInputError(f"CompilerConfig: {name} must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise CompilerInputError(f"CompilerConfig: {name} must be in [{low}, {high}], got {value!r}")
    return float(value)


def _keyed(name: str, value: object, keys: Sequence[str]) -> FrozenDict[str, Any]:
    if not isinstance(value, Mapping):
        raise CompilerInputError(f"CompilerConfig: {name} must be a mapping keyed by {list(keys)}, got {value!r}")
    for key in value:
        if key not in keys:
            raise CompilerInputError(f"CompilerConfig: {name} has unknown key {key!r}; known: {list(keys)}")
    return FrozenDict(dict(value))


@dataclass(frozen=True)
class RankingWeights:
    """Weights of the composite score of chapter §6.4.1 stage 3 (relative; need not sum to 1).

    Factors: retrieval ``relevance``, source ``authority``, ``freshness``
    (exponential decay of age), ``utility`` (execution utility: the item's own
    hint, e.g. a tool's relevance to the step) and ``cost`` (token-cost
    inverse: shorter items score higher).
    """

    relevance: float = 1.0
    authority: float = 0.5
    freshness: float = 0.25
    utility: float = 0.0
    cost: float = 0.1

    def __post_init__(self) -> None:
        total = 0.0
        for name in ("relevance", "authority", "freshness", "utility", "cost"):
            total += _number(f"RankingWeights.{name}", getattr(self, name))
        if total <= 0:
            raise CompilerInputError("RankingWeights: at least one weight must be > 0")


def _default_weights() -> dict[str, RankingWeights]:
    return {
        "evidence": RankingWeights(),
        "memory": RankingWeights(relevance=1.0, authority=0.25, freshness=0.5, cost=0.1),
        "tools": RankingWeights(relevance=1.0, authority=0.0, freshness=0.0, utility=0.5, cost=0.1),
        "history": RankingWeights(relevance=0.0, authority=0.0, freshness=1.0, cost=0.0),
    }


@suggest_keywords
@dataclass(frozen=True)
class CompilerConfig:
    """How the compiler filters, ranks, allocates, assembles and validates (chapter §6.4).

    Allocation:
        allocator: ``"priority"`` (the Token Box's rule: lower priority is lost
            first) or ``"utility"`` (Algorithm 6.2 water-filling, §6.4.4).
        overflow: one of :data:`OVERFLOW_POLICIES` (§6.4.3); ``None`` takes the
            task class's default: ``safety_critical`` → ``fail_loud``,
            ``interactive`` → ``cascade_compress``, ``batch`` → ``paginate``.
        task_class: ``"interactive"`` (default), ``"safety_critical"`` or ``"batch"``.
        quantum: tokens per water-filling step (default 64).
        priorities: Token Box priority per elastic tier (lower is lost first).
        minimums / maximums: ``t_min`` / ``t_max`` per elastic tier, in tokens.
        weights: priority weight ``w_i`` per elastic tier (utility allocator).
        utilities: utility function per elastic tier (default
            :class:`~tokenbox_core.compiler._utility.BoundedLogUtility`).
        cost_coefficients / cost_sensitivity: ``c_i`` per tier and ``γ`` of the
            cost-aware objective ``Σ w_i U_i(t_i) - γ Σ c_i t_i`` (§6.2.5).
        cascade_lenses: the lenses ``cascade_compress`` applies to every elastic item.

    Filter (§6.4.1 stage 2):
        evidence_threshold, authority_floor, freshness_floor, tool_threshold,
        memory_threshold: gates in [0, 1]; freshness is ``2 ** (-age / freshness_half_life)``.
        pii_detector: finds personal data in evidence (``None`` disables the gate);
            evidence with findings is discarded unless the task sets ``pii_authorized``.
        clock: the compile's reference time (a datetime or a callable returning
            one); ``None`` uses the newest timestamp among the inputs, so a
            compile never reads the system clock on its own.

    Assemble (§6.5, §6.6.5):
        output: ``"messages"`` (chat messages) or ``"text"`` (one prompt string).
        headers: structural section headers; ``None`` means on for text output,
            off for messages (roles and labels delimit sections there).
        precedence_statement: append §6.5.5's precedence rule to the policy.
        developer_role: chat role of developer instructions (``"system"`` or ``"developer"``).
        tools_as: ``"text"`` (default) emits the tool schemas as a labelled system message of JSON;
            ``"schemas"`` leaves them out of the messages and the text and returns them as
            :attr:`CompiledContext.tools` (OpenAI tool dicts of the kept tools) for the request's
            ``tools`` parameter or ``bind_tools``, so they are not paid twice.  Either way they are
            counted exactly in the compile's units: as the message that carries them, or as their
            canonical JSON (name, description, parameters) — what the API receives; providers render
            definitions for the model their own way, OpenAI's more compactly, so this errs on the safe side.
        constraint_density_limit: the policy tier (policy + developer) may use at
            most this fraction of the prefill budget (default 0.15); ``None`` disables.

    Reference compression (§6.7.3):
        dedupe, dedupe_threshold (Jaccard of word shingles), shingle_size,
        embedder (optional ``text -> vector``) and embedding_threshold (cosine).
        near_duplicates: ``True`` (default) looks for near-duplicates by shingle
            Jaccard; ``False`` only for exact duplicates (equal normalised words:
            a signature pass, far cheaper on large material; the embedder, when
            set, still runs).  Described in ``input_hash`` only when ``False``.

    Validate and metrics (§6.4.1 stage 6, §6.11.5):
        required_sections: sections that must be emitted (default ``("policy",)``;
            the chapter's list is ``("policy", "task")``).
        checks: user checks ``f(compiled) -> None | str | list[str]`` (violation messages).
        on_invalid: a ``history`` a provider would reject (an unknown role, a tool result apart from its call
            or twice, an unanswered call — :func:`tokenbox_core.chat.check_conversation`): ``"raise"`` a
            :class:`~tokenbox_core.errors.ConversationError` or ``"repair"`` it with a
            :class:`~tokenbox_core.errors.ConversationRepairWarning` naming each change.
        min_metrics / max_metrics: gates on :data:`METRICS` names that reject a compile.
        defense: the defensive-compilation policy (issue 12), ``None`` for none.

    Prompt caching (issue 15; see :mod:`tokenbox_core.compiler._stable`):
        cache_aware: ``False`` (default: canonical order, history evicted just
            enough), ``True`` or a :class:`~tokenbox_core.cache.CacheWindow`
            (``low_water``, ``summarizer``, ``summary_tokens``, ``role``): the
            context is assembled by volatility — static (policy, developer
            instructions, tools, the conversation's leading system messages) →
            session (memories, the summary or omission marker of cut history, the
            history) → turn (task state, evidence, the current user message and
            any agent loop after it) — and history is cut in prefix-stable blocks
            against the history tier's allocation, so consecutive turns share
            their whole prefix until the next block cut
            (``CacheWindow(cut_history=False)``: the order only, for a history
            already cut in blocks, as a ``ContextSession`` plans it).
        version: SemVer of this configuration, recorded as ``config_version``.
    """

    allocator: Allocator = "priority"
    overflow: OverflowPolicy | None = None
    task_class: TaskClass = "interactive"
    quantum: int = 64
    priorities: Mapping[str, int] = field(default_factory=lambda: {"evidence": 3, "memory": 2, "history": 1})
    minimums: Mapping[str, int] = field(default_factory=dict)
    maximums: Mapping[str, int] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=lambda: {"evidence": 1.0, "memory": 0.7, "history": 0.5})
    utilities: Mapping[str, UtilityFunction] = field(default_factory=dict)
    cost_coefficients: Mapping[str, float] = field(default_factory=dict)
    cost_sensitivity: float = 0.0
    cascade_lenses: tuple[str, ...] = ("whitespace", "dedupe_lines", "json_minify")
    evidence_threshold: float = 0.0
    authority_floor: float = 0.0
    freshness_floor: float = 0.0
    freshness_half_life: timedelta = timedelta(days=30)
    tool_threshold: float = 0.0
    memory_threshold: float = 0.0
    pii_detector: PIIDetector | None = field(default_factory=RegexPIIDetector)
    clock: datetime | Callable[[], datetime] | None = None
    ranking_weights: Mapping[str, RankingWeights] = field(default_factory=_default_weights)
    output: Literal["messages", "text"] = "messages"
    headers: bool | None = None
    precedence_statement: bool = True
    developer_role: Literal["system", "developer"] = "system"
    tools_as: Literal["text", "schemas"] = "text"
    constraint_density_limit: float | None = 0.15
    dedupe: bool = True
    dedupe_threshold: float = 0.9
    shingle_size: int = 3
    near_duplicates: bool = True
    embedder: Callable[[str], Sequence[float]] | None = None
    embedding_threshold: float = 0.95
    required_sections: tuple[str, ...] = ("policy",)
    checks: tuple[Callable[[Any], Any], ...] = ()
    on_invalid: Literal["raise", "repair"] = "raise"
    min_metrics: Mapping[str, float] = field(default_factory=dict)
    max_metrics: Mapping[str, float] = field(default_factory=dict)
    defense: Any = None
    cache_aware: bool | CacheWindow = False
    version: str = "1.0.0"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.allocator not in ALLOCATORS:
            raise CompilerInputError(f"CompilerConfig: allocator must be one of {ALLOCATORS}, got {self.allocator!r}")
        if self.overflow is not None and self.overflow not in OVERFLOW_POLICIES:
            raise CompilerInputError(
                f"CompilerConfig: overflow must be one of {OVERFLOW_POLICIES}, got {self.overflow!r}"
            )
        if self.task_class not in TASK_CLASSES:
            raise CompilerInputError(
                f"CompilerConfig: task_class must be one of {TASK_CLASSES}, got {self.task_class!r}"
            )
        if isinstance(self.quantum, bool) or not isinstance(self.quantum, int) or self.quantum < 1:
            raise CompilerInputError(f"CompilerConfig: quantum must be an integer >= 1, got {self.quantum!r}")
        priorities = _keyed("priorities", self.priorities, ELASTIC_TIERS)
        for key, value in priorities.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise CompilerInputError(f"CompilerConfig: priorities[{key!r}] must be an integer, got {value!r}")
        set_(self, "priorities", FrozenDict({t: priorities.get(t, 0) for t in ELASTIC_TIERS}))
        for name in ("minimums", "maximums"):
            bounds = _keyed(name, getattr(self, name), ELASTIC_TIERS)
            for key, value in bounds.items():
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise CompilerInputError(f"CompilerConfig: {name}[{key!r}] must be an integer >= 0, got {value!r}")
            set_(self, name, bounds)
        for key in ELASTIC_TIERS:
            low, high = self.minimums.get(key, 0), self.maximums.get(key)
            if high is not None and high < low:
                raise CompilerInputError(
                    f"CompilerConfig: minimums[{key!r}] ({low}) must be <= maximums[{key!r}] ({high})"
                )
        weights = _keyed("weights", self.weights, ELASTIC_TIERS)
        set_(self, "weights", FrozenDict({t: _number(f"weights[{t!r}]", weights.get(t, 1.0)) for t in ELASTIC_TIERS}))
        utilities = _keyed("utilities", self.utilities, ELASTIC_TIERS)
        for key, fn in utilities.items():
            if not callable(fn):
                raise CompilerInputError(f"CompilerConfig: utilities[{key!r}] must be callable f(tokens) -> float")
        set_(self, "utilities", FrozenDict({t: utilities.get(t, BoundedLogUtility()) for t in ELASTIC_TIERS}))
        costs = _keyed("cost_coefficients", self.cost_coefficients, ELASTIC_TIERS)
        set_(
            self,
            "cost_coefficients",
            FrozenDict({t: _number(f"cost_coefficients[{t!r}]", costs.get(t, 0.0)) for t in ELASTIC_TIERS}),
        )
        _number("cost_sensitivity", self.cost_sensitivity)
        lenses = (self.cascade_lenses,) if isinstance(self.cascade_lenses, str) else tuple(self.cascade_lenses)
        for lens in lenses:
            try:
                get_lens(lens)
            except Exception as exc:
                raise CompilerInputError(f"CompilerConfig: cascade_lenses has an unknown lens {lens!r}") from exc
        set_(self, "cascade_lenses", lenses)
        for name in ("evidence_threshold", "authority_floor", "freshness_floor", "tool_threshold", "memory_threshold"):
            _number(name, getattr(self, name), high=1.0)
        if not isinstance(self.freshness_half_life, timedelta) or self.freshness_half_life.total_seconds() <= 0:
            raise CompilerInputError(
                f"CompilerConfig: freshness_half_life must be a positive timedelta, got {self.freshness_half_life!r}"
            )
        if self.pii_detector is not None and not isinstance(self.pii_detector, PIIDetector):
            raise CompilerInputError("CompilerConfig: pii_detector must have find(text) -> list[PIIMatch], or be None")
        if self.clock is not None and not (isinstance(self.clock, datetime) or callable(self.clock)):
            raise CompilerInputError(f"CompilerConfig: clock must be a datetime or a callable, got {self.clock!r}")
        if isinstance(self.clock, datetime) and self.clock.tzinfo is None:
            raise CompilerInputError("CompilerConfig: clock must be timezone-aware (tzinfo=timezone.utc)")
        ranking = _keyed("ranking_weights", self.ranking_weights, _RANKED)
        for key, value in ranking.items():
            if not isinstance(value, RankingWeights):
                raise CompilerInputError(f"CompilerConfig: ranking_weights[{key!r}] must be a RankingWeights")
        set_(self, "ranking_weights", FrozenDict({**_default_weights(), **ranking}))
        if self.output not in ("messages", "text"):
            raise CompilerInputError(f"CompilerConfig: output must be 'messages' or 'text', got {self.output!r}")
        if self.headers is not None and not isinstance(self.headers, bool):
            raise CompilerInputError(f"CompilerConfig: headers must be True, False or None, got {self.headers!r}")
        if self.developer_role not in ("system", "developer"):
            raise CompilerInputError(
                f"CompilerConfig: developer_role must be 'system' or 'developer', got {self.developer_role!r}"
            )
        if self.tools_as not in ("text", "schemas"):
            raise CompilerInputError(
                f"CompilerConfig: tools_as must be 'text' (a system message of JSON) or 'schemas' (the request's "
                f"tools parameter, CompiledContext.tools), got {self.tools_as!r}"
            )
        if self.constraint_density_limit is not None:
            _number("constraint_density_limit", self.constraint_density_limit, high=1.0)
        _number("dedupe_threshold", self.dedupe_threshold, high=1.0)
        _number("embedding_threshold", self.embedding_threshold, low=-1.0, high=1.0)
        if isinstance(self.shingle_size, bool) or not isinstance(self.shingle_size, int) or self.shingle_size < 1:
            raise CompilerInputError(f"CompilerConfig: shingle_size must be an integer >= 1, got {self.shingle_size!r}")
        if self.on_invalid not in ("raise", "repair"):
            raise CompilerInputError(f"CompilerConfig: on_invalid must be 'raise' or 'repair', got {self.on_invalid!r}")
        if not isinstance(self.near_duplicates, bool):
            raise CompilerInputError(
                f"CompilerConfig: near_duplicates must be True or False, got {self.near_duplicates!r} "
                "(False looks for exact duplicates only)"
            )
        if self.embedder is not None and not callable(self.embedder):
            raise CompilerInputError("CompilerConfig: embedder must be callable text -> vector, or None")
        required = (self.required_sections,) if isinstance(self.required_sections, str) else self.required_sections
        required = tuple(required)
        for name in required:
            if name not in _SECTIONS:
                raise CompilerInputError(
                    f"CompilerConfig: required_sections has unknown section {name!r}; known: {list(_SECTIONS)}"
                )
        set_(self, "required_sections", required)
        checks = (self.checks,) if callable(self.checks) else tuple(self.checks)
        for check in checks:
            if not callable(check):
                raise CompilerInputError(f"CompilerConfig: checks must be callables, got {check!r}")
        set_(self, "checks", checks)
        for name in ("min_metrics", "max_metrics"):
            gates = _keyed(name, getattr(self, name), _METRICS)
            for key, value in gates.items():
                _number(f"{name}[{key!r}]", value, low=-math.inf)
            set_(self, name, gates)
        if self.cache_aware is not False and not (
            self.cache_aware is True or isinstance(self.cache_aware, CacheWindow)
        ):
            raise CompilerInputError(
                f"CompilerConfig: cache_aware must be True, False or a CacheWindow(low_water=0.7, ...), "
                f"got {self.cache_aware!r}"
            )
        if not isinstance(self.version, str) or not _SEMVER.match(self.version):
            raise CompilerInputError(f"CompilerConfig: version must be SemVer like '1.2.0', got {self.version!r}")

    @property
    def overflow_policy(self) -> OverflowPolicy:
        """The overflow policy in force: ``overflow`` or the task class's default (§6.4.3)."""
        policy = self.overflow or _DEFAULT_OVERFLOW[self.task_class]
        return policy  # type: ignore[return-value]

    @property
    def use_headers(self) -> bool:
        """Whether Assemble writes structural headers (default: text output only)."""
        return self.output == "text" if self.headers is None else self.headers

    @property
    def cache_window(self) -> CacheWindow | None:
        """The cache-aware window in force (``cache_aware=True`` gives the default one), else ``None``."""
        if self.cache_aware is False:
            return None
        return CacheWindow.coerce(self.cache_aware)

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary of the settings that change a compile's output (hashed into ``input_hash``)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name in ("checks", "clock"):
                continue
            if name in _SINCE_1_0 and value == _SINCE_1_0[name]:
                continue  # settings added later are described only when changed: existing input hashes hold
            if isinstance(value, CacheWindow):
                value = {
                    "low_water": value.low_water,
                    "summarizer": _describe(value.summarizer),
                    "summary_tokens": value.summary_tokens,
                    "role": value.role,
                    **({} if value.cut_history else {"cut_history": False}),  # existing input hashes hold
                }
            elif isinstance(value, Mapping):
                value = {k: _describe(v) for k, v in sorted(value.items())}
            else:
                value = _describe(value)
            out[name] = value
        return out


_SINCE_1_0: dict[str, Any] = {"near_duplicates": True, "tools_as": "text", "on_invalid": "raise"}
"""Settings added after the 1.0 configuration, with their defaults (left out of :meth:`describe` at them)."""


def _describe(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, tuple | list):
        return [_describe(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    default_repr = getattr(type(value), "__repr__", None) is object.__repr__
    if default_repr or (callable(value) and hasattr(value, "__qualname__")):
        kind = value if hasattr(value, "__qualname__") else type(value)
        return f"{getattr(kind, '__module__', '?')}.{kind.__qualname__}"  # never an address: hashes must not vary
    return repr(value)
