"""The compilation trace of chapter §6.4.2, and the input hash behind it.

``input_hash`` is a sha256 over *every* input that can change the output:
each candidate with all its fields (timestamps, metadata, spans, lineage,
tool schemas, message payloads), the configuration (:meth:`CompilerConfig.describe`),
the budget, the counter's name and the compile's reference time.  ``output_hash``
is the sha256 of the emitted messages (or text).  ``trace_id``, ``timestamp``
and latencies are outside both, so two runs over the same inputs share their
hashes and differ only in those fields.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core.compiler._collect import Candidates
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._filter import Exclusion
from tokenbox_core.tokens import canonical_json

__all__ = ["CompilationTrace", "input_hash", "output_hash"]


def _plain(value: Any) -> Any:
    """A JSON-able copy of ``value``: dataclasses and mappings as dicts (keys as strings), tuples and lists as
    lists, datetimes in ISO form, anything else unknown by its ``repr``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def _feed(h: Any, value: Any) -> None:
    """Stream a value into the hash, typed and length-prefixed: texts as raw bytes, scalars by repr, the rest
    as canonical JSON."""
    if isinstance(value, str):
        tag, data = b"s", value.encode("utf-8", "surrogatepass")
    elif value is None or isinstance(value, bool | int | float):
        tag, data = b"n", repr(value).encode()
    elif isinstance(value, datetime):
        tag, data = b"t", value.isoformat().encode()
    elif isinstance(value, Mapping) and not value:
        tag, data = b"j", b"{}"
    elif isinstance(value, tuple) and all(type(v) is int for v in value):
        tag, data = b"j", b"[%s]" % b",".join(b"%d" % v for v in value)
    else:
        tag, data = b"j", canonical_json(_plain(value)).encode("utf-8", "surrogatepass")
    h.update(b"%s%d:" % (tag, len(data)))
    h.update(data)


def _feed_mapping(h: Any, entry: Mapping[Any, Any]) -> None:
    """A message (or another mapping) streamed into the hash: its keys in order, each as a string, with its
    value."""
    for key in sorted(entry, key=str):
        _feed(h, str(key))
        _feed(h, entry[key])


def input_hash(
    candidates: Candidates, config: CompilerConfig, budget: ContextBudget, counter_name: str, now: datetime | None
) -> str:
    """sha256 over every input that can change the output (see the module docstring)."""
    h = hashlib.sha256()
    _feed(h, {"config": config.describe(), "budget": budget.to_dict(), "counter": counter_name})
    _feed(h, None if now is None else now.isoformat())
    for slot in dataclasses.fields(candidates):
        value = getattr(candidates, slot.name)
        h.update(slot.name.encode())
        for entry in value if isinstance(value, tuple) else (value,):
            if type(entry) is dict:  # a message
                _feed_mapping(h, entry)
            elif dataclasses.is_dataclass(entry) and not isinstance(entry, type):  # a typed input: field by field
                for f in dataclasses.fields(entry):
                    _feed(h, getattr(entry, f.name))
            elif isinstance(entry, Mapping):
                _feed_mapping(h, entry)
            else:
                _feed(h, entry)
    return h.hexdigest()


def output_hash(messages: Any, text: str, output: str) -> str:
    """sha256 of what is sent: the canonical JSON of the messages, or the text."""
    sent = canonical_json(_plain(list(messages))) if output == "messages" else text
    return hashlib.sha256(sent.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CompilationTrace:
    """Every decision of one compile (chapter §6.4.2's ``CompilationTrace`` plus the allocator's numbers).

    Fields of the chapter's schema: ``trace_id``, ``timestamp``,
    ``config_version``, ``input_hash``, ``output_hash``, ``total_tokens``,
    ``section_allocations`` (``{section: {allocated, used, overflow, demand,
    status}}``), ``excluded_items`` (filtered items, items and sections lost
    in compression, each with reason and score), ``compression_ratios``
    (emitted / demanded tokens per section) and ``latency_ms``.  Beyond it:
    the allocator, the overflow policy and its events, the shadow price and
    marginal utilities (utility allocator), the reference pointers, the
    pending retrieval, per-stage latencies and the Token Box's own trace.
    """

    trace_id: str
    timestamp: str
    config_version: str
    input_hash: str
    output_hash: str
    total_tokens: int
    section_allocations: Mapping[str, Mapping[str, Any]]
    excluded_items: tuple[Exclusion, ...]
    compression_ratios: Mapping[str, float]
    latency_ms: float
    policy_version: str | None = None
    allocator: str = "priority"
    overflow_policy: str = "fail_loud"
    overflow_events: tuple[Mapping[str, Any], ...] = ()
    shadow_price: float | None = None
    marginal_utilities: Mapping[str, float] = field(default_factory=dict)
    references: tuple[Mapping[str, Any], ...] = ()
    retrieval_pending: tuple[str, ...] = ()
    page: int = 1
    pages: int = 1
    stage_latency_ms: Mapping[str, float] = field(default_factory=dict)
    defense: Mapping[str, Any] | None = None  # DefenseReport.to_dict() when defence is on (issue 12)
    session: Mapping[str, Any] | None = None  # a ContextSession's history tier: omitted, recalled, masked, ...

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (excluded items as dicts; ``session`` only for a session's compile)."""
        out = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["excluded_items"] = [e.to_dict() for e in self.excluded_items]
        if self.session is None:
            del out["session"]
        return out

    def decisions(self) -> dict[str, Any]:
        """The deterministic part: everything except the run id, the timestamp and the latencies."""
        out = self.to_dict()
        for key in ("trace_id", "timestamp", "latency_ms", "stage_latency_ms"):
            out.pop(key, None)
        return out
