"""The model registry: built-in profiles, user registrations, name resolution and the stated fallback.

Names resolve in this order (issue 10 item 18, issue 14 §1):

1. a name registered with :func:`register_profile` (exact, case-insensitive);
2. a built-in family name or alias;
3. the same after removing a provider prefix (``openai/``, ``models/``,
   ``anthropic.``, ``meta-llama/``) and a version tail (``:8b``, ``@2024…``,
   ``-v1:0``) and a dated-snapshot suffix (``-2024-08-06``, ``-20241022``,
   ``-0613``, ``-001``, ``-latest``);
4. the longest family name the result starts with, followed by ``-``
   (``gpt-4o-mini-search`` → ``gpt-4o-mini``; ``gpt-4o`` never matches ``gpt-4``).

An unknown model is not an error: :func:`get_model_profile` returns the
calculator seed's fallback (8,192 tokens, cl100k_base) marked
``window_source="fallback"`` and logs a warning under the ``tokenbox`` logger
that names the model and how to register it.
"""

from __future__ import annotations

import difflib
import re
import threading

from tokenbox_core.errors import ConfigTypeError
from tokenbox_core.models._anthropic import ANTHROPIC_PROFILES
from tokenbox_core.models._google import GOOGLE_PROFILES
from tokenbox_core.models._open_weights import OPEN_WEIGHT_PROFILES
from tokenbox_core.models._openai import OPENAI_PROFILES
from tokenbox_core.models._profile import CountingRule, ModelProfile

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "builtin_profiles",
    "fallback_profile",
    "find_model_profile",
    "get_model_profile",
    "normalise_model_name",
    "register_profile",
    "registered_names",
    "suggest_model",
    "warn_unknown",
]


DEFAULT_CONTEXT_WINDOW = 8_192
"""The calculator seed's conservative fallback window for unknown models."""

FALLBACK_ENCODING = "cl100k_base"
"""The calculator seed's fallback encoding ("Unknown model falls back to cl100k_base encoder without raising")."""

_BUILTIN: dict[str, ModelProfile] = {}
for _profile in (*OPENAI_PROFILES, *ANTHROPIC_PROFILES, *GOOGLE_PROFILES, *OPEN_WEIGHT_PROFILES):
    for _key in (_profile.name, *_profile.aliases):
        _BUILTIN[_key.lower()] = _profile
_FAMILIES = sorted(_BUILTIN, key=lambda k: (-len(k), k))  # longest first, deterministic

_REGISTERED: dict[str, ModelProfile] = {}
_LOCK = threading.Lock()

_PREFIXES = re.compile(
    r"^(?:openai|anthropic|google|gemini|models|meta-llama|meta|mistralai|mistral|deepseek-ai|deepseek|qwen|"
    r"azure|bedrock|vertex_ai|vertex|openrouter|together|groq|ollama|us|eu|apac)[/.]"
)
_TAIL = re.compile(r"(?:@.*|:.*|-v\d+(?::\d+)?)$")
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|\d{3}|latest|preview(?:-\d{2}-\d{2})?|exp)$")


def _candidates(name: str) -> list[str]:
    """The lookup keys for a name, most specific first (see the module docstring)."""
    key = name.strip().lower()
    keys = [key]
    while True:
        stripped = _PREFIXES.sub("", key)
        if stripped == key:
            break
        key = stripped
    key = _TAIL.sub("", key.rsplit("/", 1)[-1])
    keys.append(key)
    while True:
        stripped = _SNAPSHOT.sub("", key)
        if stripped == key or not stripped:
            break
        key = stripped
        keys.append(key)
    return list(dict.fromkeys(keys))


def normalise_model_name(name: str) -> str:
    """Lower-case, without provider prefixes, version tails and dated-snapshot suffixes.

    >>> normalise_model_name("openai/gpt-4o-2024-08-06")
    'gpt-4o'
    >>> normalise_model_name("anthropic.claude-3-5-sonnet-20240620-v1:0")
    'claude-3-5-sonnet'
    """
    return _candidates(name)[-1]


def _lookup(key: str) -> ModelProfile | None:
    with _LOCK:
        found = _REGISTERED.get(key)
    return found if found is not None else _BUILTIN.get(key)


def find_model_profile(name: str) -> ModelProfile | None:
    """The profile for ``name`` (registered, built-in, snapshot or family prefix), or ``None``.

    >>> find_model_profile("gpt-4.1-2025-04-14").context_window
    1047576
    >>> find_model_profile("gpt4o") is None
    True
    """
    if not isinstance(name, str) or not name.strip():
        return None
    keys = _candidates(name)
    for key in keys:
        found = _lookup(key)
        if found is not None:
            return found
    with _LOCK:
        registered = sorted(_REGISTERED, key=lambda k: (-len(k), k))
    for key in keys:
        for family in (*registered, *_FAMILIES):
            if key.startswith(family + "-"):
                found = _lookup(family)
                if found is not None:
                    return found
    return None


def fallback_profile(name: str, *, encoding: str = FALLBACK_ENCODING) -> ModelProfile:
    """The seed's fallback for an unknown model: 8,192 tokens, cl100k_base, marked as a fallback."""
    return ModelProfile(
        name=name if isinstance(name, str) and name.strip() else "unknown",
        provider="unknown",
        context_window=DEFAULT_CONTEXT_WINDOW,
        counting=CountingRule("tiktoken", encoding=encoding),
        window_source="fallback",
        sources=("seed token-budget-calculator.txt",),
        notes="unknown model: the calculator seed's fallback window and encoding",
    )


def suggest_model(name: str) -> str | None:
    """The known model name closest to ``name`` (built-in, registered, or one tiktoken knows), else ``None``.

    >>> suggest_model("gtp-4o"), suggest_model("gpt4o"), suggest_model("zzz")
    ('gpt-4o', 'gpt-4o', None)
    """
    candidates = [*_BUILTIN, *registered_names()]
    try:
        import tiktoken.model

        candidates += sorted(tiktoken.model.MODEL_TO_ENCODING)
    except ImportError:  # pragma: no cover - tiktoken is a dependency
        pass
    close = difflib.get_close_matches(normalise_model_name(name), candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def fallback_message(name: str, *, encoding: str = FALLBACK_ENCODING) -> str:
    """The warning text for an unknown model: what was assumed and how to register it."""
    suggestion = suggest_model(name)
    hint = f" Did you mean {suggestion!r}?" if suggestion else ""
    return (
        f"unknown model {name!r}: counting with {encoding} and assuming the {DEFAULT_CONTEXT_WINDOW:,}-token "
        f"fallback context window.{hint} Register it with "
        f"tokenbox_core.register_model({name!r}, context_window=..., encoding=...)"
    )


def get_model_profile(name: str, *, warn: bool = True) -> ModelProfile:
    """The profile for ``name``; an unknown model gets the seed's fallback, stated, never an error.

    The fallback profile has ``window_source == "fallback"``; a warning under
    the ``tokenbox`` logger (once per name and process) names the model and
    how to register it.

    >>> get_model_profile("claude-sonnet-4-5-20250929").approximate
    True
    >>> get_model_profile("acme-9000", warn=False).window_source
    'fallback'
    """
    found = find_model_profile(name)
    if found is not None:
        return found
    if warn:
        warn_unknown(name)
    return fallback_profile(name)


def warn_unknown(name: str, *, encoding: str = FALLBACK_ENCODING) -> None:
    """State the fallback for ``name``: an :class:`~tokenbox_core.errors.UnknownModelWarning` (Python's
    warning filters show it on stderr, once per place by default) and a WARNING under the ``tokenbox`` logger."""
    import warnings

    from tokenbox_core._logs import warn_once
    from tokenbox_core.errors import UnknownModelWarning

    message = fallback_message(name, encoding=encoding)
    warnings.warn(message, UnknownModelWarning, stacklevel=3)
    warn_once("unknown-model", name, message)


def register_profile(profile: ModelProfile, *names: str) -> None:
    """Register (or override) a profile under its name, its aliases and ``names``."""
    if not isinstance(profile, ModelProfile):
        raise ConfigTypeError(f"register_profile expects a ModelProfile, got {type(profile).__name__}")
    with _LOCK:
        for key in (profile.name, *profile.aliases, *names):
            _REGISTERED[key.strip().lower()] = profile


def registered_names() -> list[str]:
    """Names registered by the user (sorted)."""
    with _LOCK:
        return sorted(_REGISTERED)


def builtin_profiles() -> tuple[ModelProfile, ...]:
    """Every built-in profile once, in registry order."""
    seen: dict[str, ModelProfile] = {}
    for profile in _BUILTIN.values():
        seen.setdefault(profile.name, profile)
    return tuple(seen.values())
