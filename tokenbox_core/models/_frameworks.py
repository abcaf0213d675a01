"""Profiles from framework objects, by duck typing (no framework is imported here).

- LangChain chat models: the model name (``model_name``, ``model``, ``model_id``) and, from
  langchain-core 1.1, ``model.profile`` (a dict with ``max_input_tokens``/``max_output_tokens``);
- LlamaIndex LLMs: ``llm.metadata`` (an ``LLMMetadata`` with ``context_window``, ``num_output``,
  ``model_name``), or an ``LLMMetadata`` itself.

A window the framework reports wins over the registry (``window_source="framework"``); the rest of the
profile (counting, media and cache rules) comes from the registry when the name is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokenbox_core.models._profile import ModelProfile
from tokenbox_core.models._registry import fallback_profile, find_model_profile, get_model_profile

__all__ = ["profile_from_object"]

_NAME_ATTRS = ("model_name", "model", "model_id", "deployment_name", "name")


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _read(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    try:
        return getattr(obj, key, None)
    except Exception:  # a property of a third-party object that raises: treat as absent
        return None


def _model_name(*objects: Any) -> str | None:
    for obj in objects:
        if obj is None:
            continue
        for attr in _NAME_ATTRS:
            value = _read(obj, attr)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def profile_from_object(obj: Any) -> ModelProfile:
    """The profile for a LangChain chat model, a LlamaIndex LLM or ``LLMMetadata`` (issue 14 §1).

    >>> class Metadata:  # the shape of LlamaIndex's LLMMetadata
    ...     context_window, num_output, model_name = 32_000, 1_024, "acme-local"
    >>> p = profile_from_object(Metadata())
    >>> p.context_window, p.window_source
    (32000, 'framework')
    """
    if isinstance(obj, str):
        return get_model_profile(obj)
    metadata = _read(obj, "metadata")
    if _read(metadata, "context_window") is None:
        metadata = obj if _read(obj, "context_window") is not None else None
    lc_profile = _read(obj, "profile")
    if not isinstance(lc_profile, Mapping):
        lc_profile = None
    name = _model_name(metadata, obj)
    window = _positive(_read(metadata, "context_window")) or _positive(_read(lc_profile, "max_input_tokens"))
    max_output = _positive(_read(metadata, "num_output")) or _positive(_read(lc_profile, "max_output_tokens"))
    known = find_model_profile(name) if name else None
    if window is None:
        if known is not None:
            return known
        return get_model_profile(name or type(obj).__name__)
    base = known if known is not None else fallback_profile(name or type(obj).__name__)
    return base.replace(
        context_window=window,
        max_output_tokens=max_output or base.max_output_tokens,
        window_source="framework",
    )
