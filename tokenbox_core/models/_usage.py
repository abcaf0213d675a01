"""What a provider reported for one request: input tokens, cached and written tokens, a cache-miss reason.

:func:`read_usage` accepts the shapes the SDKs and frameworks return, as dicts
or as their objects (anything with ``model_dump()`` or the attributes below):

- a plain number: the request's input tokens;
- OpenAI Chat Completions ``usage``: ``prompt_tokens`` and
  ``prompt_tokens_details.cached_tokens`` / ``cache_write_tokens`` (a flat
  ``{"prompt_tokens": m, "cached_tokens": n}`` is read the same way);
- OpenAI Responses ``usage``: ``input_tokens`` and
  ``input_tokens_details.cached_tokens`` / ``cache_write_tokens``;
- Anthropic ``usage``: ``input_tokens`` is only the uncached remainder, so the
  request's input is ``input_tokens + cache_read_input_tokens +
  cache_creation_input_tokens``;
- LangChain ``usage_metadata`` (``input_tokens`` already includes cached
  tokens; ``input_token_details.cache_read`` / ``cache_creation``), or an
  ``AIMessage`` carrying it;
- Gemini ``usage_metadata``: ``prompt_token_count`` (includes
  ``cached_content_token_count``), snake or camel case;
- a whole response (``{"usage": ..., "diagnostics": ...}``, an SDK response
  object, a LlamaIndex ``ChatResponse`` whose ``raw`` is one of these);
- Anthropic cache diagnostics (beta): ``diagnostics.cache_miss_reason`` with
  its ``type`` and ``cache_missed_input_tokens``.

A figure the shape does not carry is ``None``, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenbox_core.errors import UsageReportError

__all__ = ["MISS_REASONS", "ReportedUsage", "read_usage"]

MISS_REASONS = (
    "model_changed",
    "system_changed",
    "tools_changed",
    "messages_changed",
    "previous_message_not_found",
    "unavailable",
)
"""Anthropic's ``cache_miss_reason`` types (``anthropic`` SDK, ``types/beta/beta_diagnostics.py``, 2026-08-07)."""

_FIELDS = (
    "usage",
    "usage_metadata",
    "raw",
    "diagnostics",
    "prompt_tokens",
    "prompt_tokens_details",
    "input_tokens",
    "input_tokens_details",
    "input_token_details",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "cache_read",
    "cache_creation",
    "prompt_token_count",
    "cached_content_token_count",
    "cache_miss_reason",
    "cache_missed_input_tokens",
    "type",
)
"""Attributes read from objects without ``model_dump()`` (the names of the shapes above)."""


@dataclass(frozen=True)
class ReportedUsage:
    """One request as the provider billed it.

    ``input_tokens`` counts the whole prompt (cached, written and uncached);
    ``cached_tokens`` were read from the prompt cache, ``written_tokens`` were
    written to it; ``miss_reason`` / ``missed_tokens`` come from Anthropic's
    cache diagnostics; ``shape`` names the form it was read from.
    """

    input_tokens: int | None = None
    cached_tokens: int | None = None
    written_tokens: int | None = None
    miss_reason: str | None = None
    missed_tokens: int | None = None
    shape: str = ""


def _mapping(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump()
        return dumped if isinstance(dumped, Mapping) else None
    found = {name: getattr(value, name) for name in _FIELDS if getattr(value, name, None) is not None}
    return found or None


def _int(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageReportError(f"{what} must be a whole number of tokens >= 0, got {value!r}")
    return value


def _get(m: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if m.get(name) is not None:
            return m[name]
    return None


def _details(m: Mapping[str, Any], *names: str) -> Mapping[str, Any]:
    found = _get(m, *names)
    return (_mapping(found) or {}) if found is not None else {}


def _diagnostics(value: Any) -> tuple[str | None, int | None]:
    d = _mapping(value) or {}
    reason = _mapping(d.get("cache_miss_reason"))
    if reason is None:
        return None, None
    kind = reason.get("type")
    if not isinstance(kind, str):
        raise UsageReportError(f"cache_miss_reason needs a 'type' (one of {', '.join(MISS_REASONS)}), got {reason!r}")
    return kind, _int(reason.get("cache_missed_input_tokens"), "cache_missed_input_tokens")


def _from_usage(m: Mapping[str, Any]) -> ReportedUsage | None:
    if "cache_read_input_tokens" in m or "cache_creation_input_tokens" in m:  # Anthropic: input is the remainder
        rest = _int(m.get("input_tokens"), "input_tokens") or 0
        hit = _int(m.get("cache_read_input_tokens"), "cache_read_input_tokens") or 0
        put = _int(m.get("cache_creation_input_tokens"), "cache_creation_input_tokens") or 0
        return ReportedUsage(rest + hit + put, hit, put, shape="anthropic")
    if _get(m, "prompt_tokens") is not None:  # OpenAI Chat Completions (or a flat dict)
        details = _details(m, "prompt_tokens_details")
        cached = _get(details, "cached_tokens") if details else None
        cached = cached if cached is not None else m.get("cached_tokens")
        written = _get(details, "cache_write_tokens") if details else None
        written = written if written is not None else m.get("cache_write_tokens")
        return ReportedUsage(
            _int(m["prompt_tokens"], "prompt_tokens"),
            _int(cached, "cached_tokens"),
            _int(written, "cache_write_tokens"),
            shape="openai-chat",
        )
    if _get(m, "input_tokens") is not None:  # OpenAI Responses, LangChain usage_metadata
        read: Any
        wrote: Any
        if "input_token_details" in m:
            details = _details(m, "input_token_details")
            read, wrote = details.get("cache_read"), details.get("cache_creation")
            by_ttl = [details.get(k) for k in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")]
            if not wrote and any(isinstance(t, int) for t in by_ttl):  # langchain-anthropic splits writes by TTL
                wrote = sum(t for t in by_ttl if isinstance(t, int))
            shape = "langchain"
        else:
            details = _details(m, "input_tokens_details")
            read, wrote, shape = details.get("cached_tokens"), details.get("cache_write_tokens"), "openai-responses"
        return ReportedUsage(
            _int(m["input_tokens"], "input_tokens"), _int(read, "cache_read"), _int(wrote, "cache_write"), shape=shape
        )
    prompt = _get(m, "prompt_token_count", "promptTokenCount")
    if prompt is not None:  # Gemini usage_metadata
        cached = _get(m, "cached_content_token_count", "cachedContentTokenCount")
        return ReportedUsage(
            _int(prompt, "prompt_token_count"), _int(cached, "cached_content_token_count"), shape="gemini"
        )
    return None


def read_usage(value: Any) -> ReportedUsage:
    """The :class:`ReportedUsage` in a number, a usage dict, a whole response or an SDK / framework object.

    >>> usage = read_usage({"input_tokens": 50, "cache_read_input_tokens": 10000, "cache_creation_input_tokens": 5000})
    >>> usage.input_tokens, usage.cached_tokens, usage.written_tokens, usage.shape
    (15050, 10000, 5000, 'anthropic')
    >>> read_usage({"prompt_tokens": 2006, "prompt_tokens_details": {"cached_tokens": 1920}}).cached_tokens
    1920
    """
    if isinstance(value, ReportedUsage):
        return value
    if isinstance(value, bool):
        raise UsageReportError(f"usage must be a number of input tokens or a usage object, got {value!r}")
    if isinstance(value, int):
        return ReportedUsage(_int(value, "input tokens"), shape="number")
    m = _mapping(value)
    if m is None:
        raise UsageReportError(
            f"cannot read usage from {type(value).__name__}: pass a number of input tokens, a provider's usage "
            f"dict (OpenAI, Anthropic, Gemini), LangChain usage_metadata, or a response that carries one"
        )
    usage = _from_usage(m)
    reason, missed = (None, None)
    if "cache_miss_reason" in m:
        reason, missed = _diagnostics(m)
    elif m.get("diagnostics") is not None:
        reason, missed = _diagnostics(m["diagnostics"])
    if usage is None:
        for name in ("usage", "usage_metadata", "raw"):
            inner = m.get(name)
            if inner is not None and not isinstance(inner, str | bytes):
                try:
                    usage = read_usage(inner)
                except UsageReportError:
                    continue
                break
    if usage is None:
        if reason is not None or "cache_miss_reason" in m or "diagnostics" in m:
            return ReportedUsage(miss_reason=reason, missed_tokens=missed, shape="diagnostics")
        raise UsageReportError(
            f"no token usage in {sorted(map(str, m))[:8]}: expected prompt_tokens (OpenAI), input_tokens "
            f"(Anthropic, LangChain), prompt_token_count (Gemini), or a 'usage' / 'usage_metadata' / 'raw' field"
        )
    if reason is not None or missed is not None:
        usage = ReportedUsage(
            usage.input_tokens, usage.cached_tokens, usage.written_tokens, reason, missed, usage.shape
        )
    return usage
