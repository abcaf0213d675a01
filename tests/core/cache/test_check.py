"""A live session's reported usage, checked turn by turn against the simulation."""

from __future__ import annotations

import pytest

from tokenbox_core.cache import TurnCheck, simulate_cache
from tokenbox_core.errors import UsageReportError
from tokenbox_core.testing._transcripts import agent_session

SESSION = agent_session(6, words_per_turn=300)


def anthropic_usage(turn) -> dict:
    """What Anthropic would report for a simulated turn (input_tokens is the uncached remainder)."""
    rest = turn.prompt_tokens - turn.cached_tokens - turn.written_tokens
    return {
        "input_tokens": rest,
        "cache_read_input_tokens": turn.cached_tokens,
        "cache_creation_input_tokens": turn.written_tokens,
    }


def test_a_session_that_behaves_as_simulated_has_no_differences() -> None:
    """Usage equal to the simulation's is paired turn by turn and differs nowhere."""
    sim = simulate_cache(SESSION, lambda ms: ms, rules="anthropic")
    checked = simulate_cache(
        SESSION, lambda ms: ms, rules="anthropic", reported=[anthropic_usage(t) for t in sim.turns]
    )
    assert len(checked.checks) == len(sim.turns)
    assert all(c.prompt_delta == c.cached_delta == c.written_delta == 0 for c in checked.checks)
    assert checked.differences() == ()
    assert "checked against reported usage: 0 of 6 turns differ" in checked.table()


def test_a_broken_prefix_shows_up_with_the_providers_reason() -> None:
    """A turn the provider did not cache, with its diagnostics, is listed with both sides' figures and reasons."""
    sim = simulate_cache(SESSION, lambda ms: ms, rules="anthropic")
    reported: list = [anthropic_usage(t) for t in sim.turns]
    broken = sim.turns[3]
    reported[3] = {
        "usage": {
            "input_tokens": 20,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": broken.prompt_tokens - 20,
        },
        "diagnostics": {"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 2100}},
    }
    checked = simulate_cache(SESSION, lambda ms: ms, rules="anthropic", reported=reported)
    (diff,) = checked.differences()
    assert isinstance(diff, TurnCheck) and diff.turn == 3
    assert diff.cached_delta == -broken.cached_tokens and diff.reason_agrees is False
    line = diff.describe()
    assert "provider cached 0 of" in line and "provider says messages_changed (~2,100 tokens)" in line
    assert "simulation says no miss" in line
    data = checked.to_dict()["checks"][3]
    assert data["reported_miss_reason"] == "messages_changed" and data["simulated_miss_reason"] is None


def test_counts_from_another_tokenizer_compare_by_share() -> None:
    """Prompt sizes from the provider's tokenizer differ from the simulation's; equal cached shares do not
    count as a difference, and the tolerance is the caller's."""
    sim = simulate_cache(SESSION, lambda ms: ms, rules="openai")
    scaled = [
        {
            "prompt_tokens": round(t.prompt_tokens * 1.2),
            "prompt_tokens_details": {"cached_tokens": round(t.cached_tokens * 1.2)},
        }
        for t in sim.turns
    ]
    checked = simulate_cache(SESSION, lambda ms: ms, rules="openai", reported=scaled)
    assert all(c.prompt_delta and c.prompt_delta > 0 for c in checked.checks)
    assert checked.differences() == ()
    assert checked.differences(tolerance=-1.0) == checked.checks


def test_plain_numbers_check_sizes_only() -> None:
    """Reported input tokens alone give a size check and no cache verdict."""
    sim = simulate_cache(SESSION, lambda ms: ms, rules="openai", reported=[1000] * 6)
    check = sim.checks[0]
    assert check.cached_delta is None and check.share_delta is None and not check.differs()
    assert "provider counted 1,000 input tokens" in check.describe()


def test_reported_usage_must_match_the_requests() -> None:
    """One usage per request, in order; the error gives both counts and the fix."""
    with pytest.raises(UsageReportError, match="has 2 entries but the transcript has 6 requests"):
        simulate_cache(SESSION, lambda ms: ms, reported=[1, 2])
    with pytest.raises(UsageReportError, match="must be a list with one entry per request, got dict"):
        simulate_cache(SESSION, lambda ms: ms, reported={"prompt_tokens": 3})  # type: ignore[arg-type]
