"""Each prompt-cache rule, on the providers' documented examples (sources in tokenbox_core/cache/_rules.py).

Sizes are counted with the whitespace counter so that every prefix has an exact,
readable size: a message costs 4 (chat overhead) + 1 (its role) + its words.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokenbox_core.cache import CacheRules, cache_rules, rule_names, simulate_cache
from tokenbox_core.cache._rules import claude_min_prefix
from tokenbox_core.errors import BudgetError
from tokenbox_core.models._registry import builtin_profiles
from tokenbox_core.testing._transcripts import agent_session

W = "whitespace"


def msg(role: str, tokens: int, tag: str, *, mark: dict | None = None, field: str = "cache_control") -> dict:
    """A message that costs exactly ``tokens`` whitespace tokens (``tokens`` >= 6)."""
    text = " ".join(f"{tag}{i}" for i in range(tokens - 5))
    if mark is None:
        return {"role": role, "content": text}
    return {"role": role, "content": [{"type": "text", "text": text, field: mark}]}


def fixed(*requests: list[dict]):
    """A trimmer that sends ``requests[t]`` on turn ``t`` (whatever the transcript holds)."""
    sent = iter(requests)
    return lambda _messages: next(sent)


def turns(n: int) -> list[dict]:
    """A transcript of ``n`` user turns (its content is replaced by the trimmer)."""
    return [{"role": "user", "content": f"question {i}"} for i in range(n)]


# -- OpenAI automatic caching ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "cached"),
    [(1023, 0), (1024, 1024), (1151, 1024), (1152, 1152), (1280, 1280), (2003, 1920)],
)
def test_openai_caches_from_1024_tokens_in_steps_of_128(prefix: int, cached: int) -> None:
    """[oai-guide] cached tokens run 1024, 1152, 1280, ...; the guide's 2,006-token prompt caches 1,920."""
    request = [msg("system", prefix - 6, "s"), msg("user", 6, "u")]
    sim = simulate_cache(turns(2), fixed(request, request), rules="openai", counter=W)
    assert sim.turns[1].prompt_tokens == prefix + 3  # the reply's priming tokens are never cached
    assert sim.turns[1].cached_tokens == cached
    assert sim.turns[1].written_tokens == 0  # writes are free before GPT-5.6


def test_openai_retention_in_memory_and_24h() -> None:
    """[oai-guide] in_memory: gone after 5-10 idle minutes (5 simulated); 24h: still there after ten."""
    session = agent_session(6, words_per_turn=400)
    assert cache_rules("openai-in-memory").ttl_seconds == 300 and cache_rules("openai").max_age_seconds == 3600
    short = simulate_cache(session, lambda ms: ms, rules="openai", seconds_between_turns=600)
    long = simulate_cache(session, lambda ms: ms, rules="openai-24h", seconds_between_turns=600)
    assert short.cached_tokens == 0
    assert long.cached_share > 0.5
    assert cache_rules("openai").with_retention("24h") == cache_rules("openai-24h")
    assert cache_rules("openai-24h").with_retention("in_memory").ttl_seconds == 300


def test_retention_errors() -> None:
    """prompt_cache_retention takes 'in_memory' or '24h', and only OpenAI rules have it."""
    with pytest.raises(BudgetError, match="must be 'in_memory' or '24h', got '1h'"):
        cache_rules("openai").with_retention("1h")  # type: ignore[arg-type]
    with pytest.raises(BudgetError, match="OpenAI parameter; the 'anthropic' rules"):
        cache_rules("anthropic").with_retention("24h")


def test_gpt_5_5_keeps_only_24h_retention() -> None:
    """[oai-sdk] "For gpt-5.5, gpt-5.5-pro, and future models, only 24h is supported"."""
    assert cache_rules("gpt-5.5-pro").ttl_seconds == 86400
    assert cache_rules("gpt-5.1").ttl_seconds == 300


def test_prompt_cache_key_routes_requests() -> None:
    """[oai-guide] the key joins the routing hash: a key that changes every request never hits; a stable one
    routes like no key."""
    session = agent_session(8, words_per_turn=300)
    plain = simulate_cache(session, lambda ms: ms, rules="openai")
    stable = simulate_cache(session, lambda ms: ms, rules="openai", prompt_cache_key="user-42")
    rotating = simulate_cache(session, lambda ms: ms, rules="openai", prompt_cache_key=lambda turn: f"req-{turn}")
    assert stable.turns == plain.turns and plain.cached_tokens > 0
    assert rotating.cached_tokens == 0


def test_prompt_cache_key_is_openai_only() -> None:
    """Anthropic has no prompt_cache_key: passing one is an error that says so."""
    with pytest.raises(BudgetError, match="prompt_cache_key is an OpenAI parameter; the 'anthropic' rules"):
        simulate_cache(turns(1), lambda ms: ms, rules="anthropic", prompt_cache_key="k")


# -- OpenAI breakpoints (GPT-5.6 and later) -------------------------------------------------------------------------


def test_gpt_5_6_rules_from_the_sdk() -> None:
    """[oai-sdk] up to four breakpoints, one implicit, 30-minute TTL, latest 80 breakpoints, no look-back limit;
    [oai-guide] writes at 1.25x."""
    rules = cache_rules("gpt-5.6-terra")
    assert (rules.mode, rules.max_breakpoints, rules.implicit_breakpoints) == ("breakpoints", 4, 1)
    assert (rules.ttl_seconds, rules.max_entries, rules.lookback_blocks) == (1800, 80, None)
    assert (rules.write_multiplier, rules.marker, rules.increment) == (1.25, "prompt_cache_breakpoint", 1)
    assert cache_rules("gpt-6.1-sol").name == "openai-gpt-5.6"  # "gpt-5.6 and later models"
    assert cache_rules("gpt-5").name == "openai-gpt-5"


def test_gpt_5_6_matches_only_at_breakpoints() -> None:
    """A shared system prompt is read back by automatic caching, but not by GPT-5.6's implicit breakpoint alone
    (it sits at the end of the newest message); an explicit breakpoint after the system prompt brings it back."""
    system = msg("system", 2000, "s")
    requests = [[system, msg("user", 40, f"q{t}")] for t in range(3)]
    auto = simulate_cache(turns(3), fixed(*requests), rules="openai", counter=W)
    implicit = simulate_cache(turns(3), fixed(*requests), rules="openai-gpt-5.6", counter=W)
    assert auto.turns[2].cached_tokens == 1920 and implicit.cached_tokens == 0
    marked_system = msg("system", 2000, "s", mark={"mode": "explicit"}, field="prompt_cache_breakpoint")
    marked = [[marked_system, msg("user", 40, f"q{t}")] for t in range(3)]
    explicit = simulate_cache(turns(3), fixed(*marked), rules="openai-gpt-5.6", counter=W)
    assert [t.cached_tokens for t in explicit.turns] == [0, 2000, 2000]  # not rounded to a token block
    assert explicit.turns[0].written_tokens == 2040  # the whole prompt up to the implicit breakpoint
    assert explicit.turns[1].written_tokens == 40  # from the hit to the last breakpoint, billed at 1.25x
    assert explicit.turns[1].cost == pytest.approx((3 + 2000 * 0.1 + 40 * 1.25) * 5.0 / 1e6)


def test_gpt_5_6_explicit_mode_without_breakpoints_does_not_cache() -> None:
    """[oai-sdk] mode "explicit": "If there are no explicit breakpoints, the request does not use prompt caching"."""
    session = agent_session(5, words_per_turn=400)
    sim = simulate_cache(session, lambda ms: ms, rules="openai-gpt-5.6-explicit", breakpoints="none")
    assert sim.cached_tokens == 0 and all(t.written_tokens == 0 for t in sim.turns)
    marked = simulate_cache(session, lambda ms: ms, rules="openai-gpt-5.6-explicit")  # the client marks
    assert marked.cached_share > 0.5


def test_gpt_5_6_considers_the_latest_80_breakpoints() -> None:
    """[oai-sdk] "OpenAI considers up to the latest 80 breakpoints in the conversation": a prefix written before
    80 newer ones is not read back."""
    system = msg("system", 1500, "s")
    first = [system, msg("user", 20, "first")]
    others = [[system, msg("user", 20, f"other{t}")] for t in range(81)]
    requests = [first, *others, first]
    kept = simulate_cache(turns(83), fixed(*requests), rules="openai-gpt-5.6", counter=W, seconds_between_turns=1)
    assert kept.turns[-1].cached_tokens == 0
    unlimited = replace(cache_rules("openai-gpt-5.6"), max_entries=None)
    again = simulate_cache(turns(83), fixed(*requests), rules=unlimited, counter=W, seconds_between_turns=1)
    assert again.turns[-1].cached_tokens == 1520


# -- Anthropic ------------------------------------------------------------------------------------------------------


def _blocks(n: int, marks: set[int]) -> list[dict]:
    """A big system block 0 (so every prefix passes the minimum) and small blocks after it."""
    out = []
    for i in range(n + 1):
        role = "system" if i == 0 else ("user" if i % 2 else "assistant")
        out.append(msg(role, 1100 if i == 0 else 10, f"b{i}-", mark={"type": "ephemeral"} if i in marks else None))
    return out


def test_anthropic_lookback_is_20_positions_counting_the_breakpoint() -> None:
    """[ant-docs] worked example: a write at block 10 is found from a breakpoint at block 15, not from one at 35
    (it checks 35 down to 16); a second breakpoint at 20 resumes the search and finds block 15."""
    requests = [_blocks(10, {10}), _blocks(15, {15}), _blocks(35, {35})]
    sim = simulate_cache(turns(3), fixed(*requests), rules="anthropic", counter=W, breakpoints="none")
    size = [1100 + 10 * i for i in range(36)]  # tokens up to and including block i
    assert [t.cached_tokens for t in sim.turns] == [0, size[10], 0]
    assert sim.turns[2].written_tokens == size[35]
    two = [_blocks(10, {10}), _blocks(15, {15}), _blocks(35, {20, 35})]
    sim = simulate_cache(turns(3), fixed(*two), rules="anthropic", counter=W, breakpoints="none")
    assert sim.turns[2].cached_tokens == size[15]
    assert sim.turns[2].written_tokens == size[35] - size[15]


def test_anthropic_minimum_prefix_per_model() -> None:
    """[ant-min] 4,096 tokens for Haiku 4.5 and Opus 4.5/4.6, 2,048 for Opus 4.7 and Haiku 3.5, 1,024 for Sonnet 4.5
    and 4.6, 512 for Opus 5; below it nothing is cached and no error is raised."""
    expected = {
        "claude-haiku-4-5-20251001": 4096,
        "claude-opus-4-5": 4096,
        "claude-opus-4-6": 4096,
        "claude-opus-4-7": 2048,
        "claude-3-5-haiku-20241022": 2048,
        "claude-sonnet-4-5": 1024,
        "claude-sonnet-4-6": 1024,
        "anthropic/claude-opus-4.1": 1024,
        "claude-opus-5": 512,
    }
    assert {m: cache_rules(m).min_tokens for m in expected} == expected
    assert claude_min_prefix("claude-unknown-9") is None and cache_rules("claude-unknown-9").min_tokens == 1024
    request = [msg("system", 2000, "s", mark={"type": "ephemeral"}), msg("user", 10, "u")]
    for model, cached in (("claude-sonnet-4-5", 2000), ("claude-haiku-4-5", 0)):
        sim = simulate_cache(turns(2), fixed(request, request), rules=model, counter=W, breakpoints="none")
        assert sim.turns[1].cached_tokens == cached, model


def test_claude_profiles_agree_with_the_minimum_table() -> None:
    """One rule, one place: every built-in Claude profile's cache minimum is the simulator's."""
    for profile in builtin_profiles():
        if profile.provider == "anthropic" and profile.cache is not None:
            assert claude_min_prefix(profile.name) == profile.cache.min_prefix_tokens, profile.name


def test_anthropic_one_hour_ttl_and_its_write_price() -> None:
    """[ant-docs] "ttl": "1h" lives an hour and writes cost 2x (Opus 4.6: $10 vs $6.25 per MTok for 5 minutes)."""
    rules = cache_rules("anthropic-1h")
    assert (rules.ttl_seconds, rules.write_multiplier, rules.read_multiplier) == (3600, 2.0, 0.1)
    session = agent_session(5, words_per_turn=400)
    five = simulate_cache(session, lambda ms: ms, rules="anthropic", seconds_between_turns=600)
    hour = simulate_cache(session, lambda ms: ms, rules="anthropic-1h", seconds_between_turns=600)
    assert five.cached_tokens == 0 and hour.cached_share > 0.5
    first = hour.turns[0]
    assert first.cost == pytest.approx((first.prompt_tokens - first.written_tokens + 2 * first.written_tokens) * 3e-6)


def test_anthropic_automatic_caching_moves_the_breakpoint_forward() -> None:
    """[ant-docs] top-level cache_control: one breakpoint on the last block, moving forward; each request reads the
    previous one and writes only what it added."""
    session = agent_session(6, words_per_turn=400)
    sim = simulate_cache(session, lambda ms: ms, rules="anthropic-auto")
    for before, after in zip(sim.turns, sim.turns[1:], strict=False):
        assert after.cached_tokens == before.prompt_tokens - 3  # the previous prompt, less its reply priming
        assert after.written_tokens == after.prompt_tokens - 3 - after.cached_tokens


def test_anthropic_automatic_caching_over_four_breakpoints_is_an_error() -> None:
    """[ant-docs] automatic caching on a request that already has 4 explicit breakpoints is an HTTP 400; on a
    marked last block it is a no-op."""
    marked = _blocks(6, {1, 2, 3, 4})
    with pytest.raises(BudgetError, match="carries 4 cache_control breakpoints and automatic caching adds one"):
        simulate_cache(turns(1), fixed(marked), rules="anthropic-auto", counter=W)
    last = _blocks(6, {3, 4, 5, 6})
    auto = simulate_cache(turns(1), fixed(last), rules="anthropic-auto", counter=W)
    explicit = simulate_cache(turns(1), fixed(_blocks(6, {3, 4, 5, 6})), rules="anthropic", counter=W)
    assert auto.turns[0].written_tokens == explicit.turns[0].written_tokens


# -- miss reasons and presets ---------------------------------------------------------------------------------------


def test_miss_reasons_like_anthropics_diagnostics() -> None:
    """The simulator names why a request did not read the previous prefix: system or messages changed, or the entry
    expired; appending only is no miss."""
    base = [msg("system", 1500, "s"), msg("user", 10, "a")]
    grown = [*base, msg("assistant", 10, "b"), msg("user", 10, "c")]
    new_system = [msg("system", 1500, "t"), *grown[1:]]
    slid = [base[0], msg("user", 10, "z"), *grown[2:]]
    sim = simulate_cache(turns(4), fixed(base, grown, slid, new_system), rules="anthropic-auto", counter=W)
    assert [t.miss_reason for t in sim.turns] == [None, None, "messages_changed", "system_changed"]
    idle = simulate_cache(turns(2), fixed(base, grown), rules="anthropic", counter=W, seconds_between_turns=900)
    assert idle.turns[1].miss_reason == "expired" and idle.turns[1].cached_tokens == 0


def test_presets_and_unknown_names() -> None:
    """Every preset name resolves; a misspelt one is answered with the closest name."""
    assert {"openai", "openai-24h", "anthropic", "anthropic-1h", "anthropic-auto", "openai-gpt-5.6"} <= set(
        rule_names()
    )
    assert all(cache_rules(n).name for n in rule_names())
    with pytest.raises(BudgetError, match="did you mean 'anthropic-1h'"):
        cache_rules("anthropic-1hr")
    with pytest.raises(BudgetError, match="non-empty string"):
        cache_rules("")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mode": "lazy"}, "mode must be 'automatic' or 'breakpoints'"),
        ({"increment": 0}, "increment must be >= 1"),
        ({"lookback_blocks": -1}, "lookback_blocks must be an integer >= 0"),
        ({"max_age_seconds": float("inf")}, "max_age_seconds must be a finite number"),
        ({"marker": "cache"}, "marker must be 'cache_control' or 'prompt_cache_breakpoint'"),
        ({"mode": "breakpoints", "max_breakpoints": 1, "implicit_breakpoints": 2}, "cannot exceed max_breakpoints"),
    ],
)
def test_invalid_rules(changes: dict, message: str) -> None:
    """Rules are validated at construction, with the value and the fix in the message."""
    with pytest.raises(BudgetError, match=message):
        CacheRules("x", **changes)


def test_model_profiles_and_cache_rules_agree() -> None:
    """The simulator's minimum and increment for a model are its profile's (OpenAI, Gemini), so they cannot drift."""
    for profile in builtin_profiles():
        if profile.cache is None or profile.provider not in ("openai", "google"):
            continue
        rules = cache_rules(profile.name)
        assert rules.min_tokens == profile.cache.min_prefix_tokens, profile.name
        if profile.cache.increment_tokens is not None:
            assert rules.increment == profile.cache.increment_tokens, profile.name
    assert cache_rules("gemini-2.5-pro").min_tokens == 4096 and cache_rules("gemini-2.5-flash").min_tokens == 1024
