"""Errors users can hit in the defence and cache modules belong to the tree (issue 36 §7): ConfigError, still the
ValueError (ConfigTypeError: the TypeError) they were, each message naming the field and the value."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tokenbox_core.cache import cache_breakpoints
from tokenbox_core.defense import (
    CompositeDetector,
    DefensePolicy,
    HeuristicDetector,
    SourcePolicy,
    check_output,
    sanitize,
)
from tokenbox_core.errors import ConfigError, ConfigTypeError, TokenBoxError

VALUE: dict[str, tuple[Callable[[], object], str]] = {
    "source-action": (lambda: SourcePolicy(action="explode"), "SourcePolicy action"),  # type: ignore[arg-type]
    "source-threshold-type": (lambda: SourcePolicy(threshold="high"), "SourcePolicy threshold"),  # type: ignore[arg-type]
    "source-threshold-zero": (lambda: SourcePolicy(threshold=0.0), "0 would flag every input"),
    "source-max-tokens": (lambda: SourcePolicy(max_tokens=0), "SourcePolicy max_tokens"),
    "policy-sources": (lambda: DefensePolicy(sources={"tool": "reject"}), "sources['tool']"),  # type: ignore[dict-item]
    "policy-detector": (lambda: DefensePolicy(detector=object()), "has no detect(text, source)"),  # type: ignore[arg-type]
    "policy-spotlight": (lambda: DefensePolicy(spotlight="neon"), "spotlight"),  # type: ignore[arg-type]
    "policy-secret": (lambda: DefensePolicy(secret="short"), "at least 16 characters"),
    "policy-emission": (lambda: DefensePolicy(emission="NFD"), "emission"),  # type: ignore[arg-type]
    "policy-max-surface": (lambda: DefensePolicy(max_surface=-1), "max_surface"),
    "policy-trust": (lambda: DefensePolicy(trust={"tool": "low"}), "trust['tool']"),  # type: ignore[dict-item]
    "policy-leak-ngram": (lambda: DefensePolicy(leak_ngram=1), "leak_ngram"),
    "policy-leak-threshold": (lambda: DefensePolicy(leak_threshold=0.0), "leak_threshold"),
    "heuristic-threshold": (lambda: HeuristicDetector(max_depth=-1), "max_depth"),
    "composite-empty": (lambda: CompositeDetector([]), "at least one detector"),
    "composite-mode": (lambda: CompositeDetector([HeuristicDetector()], mode="min"), "mode"),  # type: ignore[arg-type]
    "sanitize-form": (lambda: sanitize("x", form="NFD"), "emission form"),  # type: ignore[arg-type]
    "breakpoints-max": (lambda: cache_breakpoints([{"role": "user", "content": "x"}], max_breakpoints=-1), "max_"),
}
TYPE: dict[str, tuple[Callable[[], object], str]] = {
    "check-output-undefended": (lambda: check_output("x", []), "needs a compile made with defence on"),
    "sanitize-bytes": (lambda: sanitize(b"x"), "sanitize expects str, got bytes"),  # type: ignore[arg-type]
    "composite-not-detector": (lambda: CompositeDetector([object()]), "is not an InjectionDetector"),  # type: ignore[list-item]
}


@pytest.mark.parametrize("name", list(VALUE))
def test_invalid_options_raise_config_error(name: str) -> None:
    """A bad option is a ConfigError (a TokenBoxError and a ValueError) naming the field."""
    call, text = VALUE[name]
    with pytest.raises(ConfigError) as info:
        call()
    assert isinstance(info.value, TokenBoxError) and isinstance(info.value, ValueError)
    assert text in str(info.value)


@pytest.mark.parametrize("name", list(TYPE))
def test_wrong_types_raise_config_type_error(name: str) -> None:
    """A wrongly typed argument is a ConfigTypeError: in the tree, and the TypeError it was."""
    call, text = TYPE[name]
    with pytest.raises(ConfigTypeError, match=text) as info:
        call()
    assert isinstance(info.value, TypeError)
