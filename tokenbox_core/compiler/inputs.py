"""The compiler's typed inputs: one frozen value per ingredient of the context (chapter §6.3).

Each value belongs to a tier of the budget architecture (§6.2.6) and carries
a trust level (§6.5, §6.9): the operator's policy and the developer's
instructions are :attr:`Trust.TRUSTED`, the user's text
:attr:`Trust.SEMI_TRUSTED`, everything a tool, a retriever or a memory store
produced :attr:`Trust.UNTRUSTED`.

Values validate at construction and raise
:class:`~tokenbox_core.errors.CompilerInputError` naming the field.
:class:`Evidence` without provenance (source, retrieval time, authority,
relevance) cannot be built: the chapter prohibits anonymous context blobs
(§6.3.3).

>>> from datetime import datetime, timezone
>>> e = Evidence("doc-1#3", "Revenue grew 12%.", source="s3://reports/q3.pdf",
...              retrieved_at=datetime(2025, 1, 1, tzinfo=timezone.utc), authority=0.9, relevance=0.8)
>>> e.tier, e.trust.value
(<Tier.EVIDENCE: 2>, 'untrusted')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum, IntEnum
from typing import Any

from tokenbox_core.errors import CompilerInputError
from tokenbox_core.frozen import FrozenDict
from tokenbox_core.tokens import canonical_json

__all__ = [
    "Developer",
    "Evidence",
    "Memory",
    "Policy",
    "TaskState",
    "Tier",
    "Tool",
    "Trust",
]


class Tier(IntEnum):
    """The budget tiers of chapter §6.2.6: 0 and 1 fixed, 2–4 elastic, 5 the generation reserve."""

    POLICY = 0
    TASK = 1
    EVIDENCE = 2
    MEMORY = 3
    HISTORY = 4
    RESERVE = 5


class Trust(str, Enum):
    """Who vouches for a text (chapter §6.5.2, §6.9): it decides directive authority and isolation."""

    TRUSTED = "trusted"
    SEMI_TRUSTED = "semi_trusted"
    UNTRUSTED = "untrusted"


def _text(owner: str, name: str, value: object, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise CompilerInputError(f"{owner}: {name} must be a string, got {type(value).__name__}")
    if not empty and not value.strip():
        raise CompilerInputError(f"{owner}: {name} must not be empty")
    return value


def _unit(owner: str, name: str, value: object, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CompilerInputError(f"{owner}: {name} must be a finite number in [0, 1], got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise CompilerInputError(
            f"{owner}: {name} must be in [0, 1], got {value!r}; normalise the score (e.g. divide a BM25 score "
            f"by the best score of the query)"
        )
    return float(value)


def _moment(owner: str, name: str, value: object, *, optional: bool = False) -> datetime | None:
    if value is None and optional:
        return None
    if not isinstance(value, datetime):
        raise CompilerInputError(f"{owner}: {name} must be a datetime, got {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise CompilerInputError(
            f"{owner}: {name} must be timezone-aware (got naive {value.isoformat()}); "
            f"use datetime(..., tzinfo=timezone.utc)"
        )
    return value


def _frozen(owner: str, name: str, value: object) -> FrozenDict[str, Any]:
    if not isinstance(value, Mapping):
        raise CompilerInputError(f"{owner}: {name} must be a mapping, got {type(value).__name__}")
    return FrozenDict(dict(value))


class FrozenList(tuple[Any, ...]):
    """A list frozen inside a tool schema: a tuple (immutable, hashable, JSON-encoded as an array) that
    still compares equal to the list it was made from."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


class _Memoised:
    """Base of the typed inputs: the compiler keeps derived values on an instance (renderings, hash chunks,
    its rank row and item, under ``_tokenbox_*`` names), which are left out when it is pickled or copied —
    they are rebuilt on demand, and one of them holds the token counter, which need not pickle."""

    __slots__ = ()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not k.startswith("_tokenbox_")}


def kept(value: Any, name: str) -> Any:
    """The derived value kept on a typed input under ``name`` (a ``_tokenbox_*`` name), or None."""
    state = getattr(value, "__dict__", None)
    return state.get(name) if state is not None else None


def keep(value: Any, name: str, derived: Any) -> None:
    """Keep ``derived`` on the (frozen) typed input under ``name``; a subclass with ``__slots__`` only keeps
    nothing, so its values are derived every time."""
    if hasattr(value, "__dict__"):
        object.__setattr__(value, name, derived)


def _deep_frozen(value: Any) -> Any:
    """A deep, immutable copy of a JSON-like value: mappings become :class:`FrozenDict`, lists and tuples
    :class:`FrozenList`; anything else is kept as it is (an object that stays mutable keeps its input
    re-hashed on every compile, see ``trace._immutable``)."""
    if isinstance(value, Mapping):
        return FrozenDict({k: _deep_frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList(_deep_frozen(v) for v in value)
    return value


def _thawed(value: Any) -> Any:
    """Plain dicts and lists again (for ``json.dumps``, which would ``str()`` a FrozenDict)."""
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return value


@dataclass(frozen=True)
class Policy(_Memoised):
    """Tier 0 role policy: the operator's versioned, constitutional text (chapter §6.3.1). Trusted."""

    text: str
    version: str = "1"

    tier = Tier.POLICY
    trust = Trust.TRUSTED
    source_type = "policy"

    def __post_init__(self) -> None:
        _text("policy", "text", self.text, empty=False)
        _text("policy", "version", self.version, empty=False)


@dataclass(frozen=True)
class Developer(_Memoised):
    """Tier 0 developer instructions, subordinate to the policy (chapter §6.5.2 Tier D). Trusted."""

    text: str

    tier = Tier.POLICY
    trust = Trust.TRUSTED
    source_type = "developer"

    def __post_init__(self) -> None:
        _text("developer", "text", self.text, empty=False)


@dataclass(frozen=True)
class TaskState(_Memoised):
    """Tier 1 task state, serialised as canonical JSON (chapter §6.3.2, §6.4.2).

    Args:
        state: the objective, plan step, intermediate results, pending actions, errors.
        current_step: the plan step tools are filtered against (chapter §6.3.4), if any.
        pii_authorized: the task may see personal data in evidence (Filter's PII gate).
    """

    state: Mapping[str, Any]
    current_step: str | None = None
    pii_authorized: bool = False

    tier = Tier.TASK
    trust = Trust.TRUSTED
    source_type = "task"

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", _frozen("task", "state", self.state))
        if self.current_step is not None:
            _text("task", "current_step", self.current_step)
        if not isinstance(self.pii_authorized, bool):
            raise CompilerInputError(f"task: pii_authorized must be a bool, got {self.pii_authorized!r}")

    @property
    def text(self) -> str:
        """Canonical JSON: sorted keys, fixed separators (byte-identical for equal states)."""
        return canonical_json(dict(self.state))


@dataclass(frozen=True)
class Tool(_Memoised):
    """A Tier 1 tool affordance: name, description and input schema (chapter §6.3.4).

    ``relevance`` (0..1) is the tool's relevance to the current step, when the
    caller or a tool router knows it; Filter drops tools below
    ``CompilerConfig.tool_threshold``, and a tool without a relevance score is
    scored by word overlap between its name/description and the task's current step.

    The schema is copied deep into an immutable form at construction (mappings as ``FrozenDict``, lists
    as :class:`FrozenList`, which compares equal to the list it came from): changing the caller's dict
    afterwards does not change the tool, and the compiler digests and renders it once (chapter §6.3.4's
    stable, cache-friendly tool prefix).
    """

    name: str
    description: str = ""
    schema: Mapping[str, Any] = field(default_factory=dict)
    relevance: float | None = None

    tier = Tier.TASK
    trust = Trust.UNTRUSTED  # schemas come from tool servers (MCP), not from the operator
    source_type = "tool"

    def __post_init__(self) -> None:
        _text("tool", "name", self.name, empty=False)
        _text(f"tool {self.name!r}", "description", self.description)
        _frozen(f"tool {self.name!r}", "schema", self.schema)  # the type check
        object.__setattr__(self, "schema", _deep_frozen(self.schema))
        _unit(f"tool {self.name!r}", "relevance", self.relevance, optional=True)

    @property
    def id(self) -> str:
        return f"tool:{self.name}"

    @property
    def text(self) -> str:
        """The affordance as canonical JSON (sorted keys: a stable, cache-friendly prefix).

        The schema is a deep immutable copy taken at construction (a later change to the caller's dict
        does not reach the tool), so the text is built once and kept on the instance."""
        found = kept(self, "_tokenbox_text")
        if found is None:
            found = canonical_json(
                {"name": self.name, "description": self.description, "parameters": _thawed(self.schema)}
            )
            keep(self, "_tokenbox_text", found)
        return str(found)


@dataclass(frozen=True)
class Evidence(_Memoised):
    """A Tier 2 retrieved passage with the provenance chapter §6.3.3 requires. Untrusted.

    Args:
        id: unique evidence id (a pointer ``[REF: id — "…"]`` names it).
        text: the passage.
        source: source identifier (URI, record key, endpoint); required.
        retrieved_at: timezone-aware retrieval timestamp; required (freshness).
        authority: source credibility in [0, 1]; required.
        relevance: retrieval relevance in [0, 1]; required.
        span: ``(start, end)`` chunk boundaries in the source document.
        lineage: the subquery or retrieval strategy that produced it.
        metadata: free data carried into the trace.
    """

    id: str
    text: str
    source: str
    retrieved_at: datetime
    authority: float
    relevance: float
    span: tuple[int, int] | None = None
    lineage: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    tier = Tier.EVIDENCE
    trust = Trust.UNTRUSTED
    source_type = "evidence"

    def __init__(
        self,
        id: str,
        text: str,
        *,
        source: str,
        retrieved_at: datetime,
        authority: float,
        relevance: float,
        span: tuple[int, int] | None = None,
        lineage: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "id", _text("evidence", "id", id, empty=False))
        owner = f"evidence {id!r}"
        set_(self, "text", _text(owner, "text", text))
        if not isinstance(source, str) or not source.strip():
            raise CompilerInputError(
                f"{owner}: source must be a non-empty source identifier (URI, record key), got {source!r}; "
                f"evidence without provenance is rejected (chapter §6.3.3)"
            )
        set_(self, "source", source)
        set_(self, "retrieved_at", _moment(owner, "retrieved_at", retrieved_at))
        set_(self, "authority", _unit(owner, "authority", authority))
        set_(self, "relevance", _unit(owner, "relevance", relevance))
        if span is not None:
            if (
                not isinstance(span, tuple | list)
                or len(span) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in span)
                or not 0 <= span[0] <= span[1]
            ):
                raise CompilerInputError(f"{owner}: span must be (start, end) with 0 <= start <= end, got {span!r}")
            span = (span[0], span[1])
        set_(self, "span", span)
        if lineage is not None:
            _text(owner, "lineage", lineage)
        set_(self, "lineage", lineage)
        set_(self, "metadata", _frozen(owner, "metadata", metadata or {}))

    @property
    def provenance(self) -> dict[str, Any]:
        """The provenance tag emitted with the passage (and checked by Validate)."""
        tag: dict[str, Any] = {
            "id": self.id,
            "source": self.source,
            "retrieved_at": self.retrieved_at.isoformat(),
            "authority": self.authority,
            "relevance": self.relevance,
        }
        if self.span is not None:
            tag["span"] = list(self.span)
        if self.lineage is not None:
            tag["lineage"] = self.lineage
        return tag


@dataclass(frozen=True)
class Memory(_Memoised):
    """A Tier 3 memory summary: session, episodic, semantic or procedural (chapter §6.3.5). Untrusted.

    ``relevance`` and ``authority`` are in [0, 1] when known; ``expires_at``
    makes Filter discard it once the compile's clock passes it.
    """

    id: str
    text: str
    kind: str = "semantic"
    relevance: float | None = None
    authority: float | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None

    tier = Tier.MEMORY
    trust = Trust.UNTRUSTED
    source_type = "memory"

    def __post_init__(self) -> None:
        _text("memory", "id", self.id, empty=False)
        owner = f"memory {self.id!r}"
        _text(owner, "text", self.text)
        _text(owner, "kind", self.kind, empty=False)
        _unit(owner, "relevance", self.relevance, optional=True)
        _unit(owner, "authority", self.authority, optional=True)
        _moment(owner, "created_at", self.created_at, optional=True)
        _moment(owner, "expires_at", self.expires_at, optional=True)
