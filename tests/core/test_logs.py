"""The ``tokenbox`` logger: fallbacks at WARNING (once per name), one DEBUG line per layout (issue 10 item 20)."""

from __future__ import annotations

import logging

import pytest

from tokenbox_core import Section, TokenBox, TokenBudgetCalculator, get_counter
from tokenbox_core import _logs as logs_module
from tokenbox_core.errors import UnknownModelWarning
from tokenbox_core.tokens import _registry as registry


def test_unknown_model_fallback_is_logged_once_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    """Counting with an unknown model logs the cl100k_base fallback once, under the tokenbox logger."""
    with caplog.at_level(logging.WARNING, logger="tokenbox"), pytest.warns(UnknownModelWarning):
        get_counter("acme-logs-model-1").count("hello")
        get_counter("acme-logs-model-1").count("again")
    records = [r for r in caplog.records if r.name == "tokenbox"]
    assert [r.levelno for r in records] == [logging.WARNING]
    assert "unknown model 'acme-logs-model-1': counting with cl100k_base" in records[0].getMessage()


def test_unknown_context_window_is_logged_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    """The calculator's 8,192-token fallback window for an unknown model is logged."""
    with caplog.at_level(logging.WARNING, logger="tokenbox"), pytest.warns(UnknownModelWarning):
        TokenBudgetCalculator(counter="whitespace").calculate("acme-logs-window", [])
    assert any("assuming the 8,192-token fallback context window" in r.getMessage() for r in caplog.records)


def test_approximate_counts_are_logged_at_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Choosing the approximate counter logs that counts are estimates."""
    monkeypatch.delitem(registry._COUNTERS, "approximate", raising=False)
    monkeypatch.setattr(logs_module, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="tokenbox"):
        get_counter("approximate")
    assert any("sizes are estimates" in r.getMessage() for r in caplog.records)


def test_layout_summary_is_one_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    """Every layout logs one DEBUG line with its total, statuses, removals, counter and fingerprint."""
    with caplog.at_level(logging.DEBUG, logger="tokenbox"):
        layout = TokenBox(5, counter="whitespace").layout(
            [Section("a", "one two"), Section("b", "three four five six", shrink=1)]
        )
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert lines == [
        f"layout: 5 / 5 tokens (text), 2 section(s): 1 kept, 1 truncated; 0 item(s) removed; counter whitespace; "
        f"fingerprint {layout.fingerprint[:12]}"
    ]


def test_library_logs_nothing_without_logging_configured(capfd: pytest.CaptureFixture[str]) -> None:
    """The tokenbox logger has a NullHandler: it prints nothing unless the application configures logging; an
    unknown model is stated once as an UnknownModelWarning, which Python's own warning filters control."""
    with pytest.warns(UnknownModelWarning, match="acme-logs-model-2"):
        get_counter("acme-logs-model-2").count("x")
    assert capfd.readouterr().err == ""
