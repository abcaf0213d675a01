from __future__ import annotations

import pytest

from tokenbox_core.cache import CacheRules, cache_rules, simulate_cache
from tokenbox_core.cache._eviction import plain_cut, plan_block_cut
from tokenbox_core.testing._transcripts import agent_session
from tokenbox_core.tokens import get_counter
from tokenbox_core.tokens._messages import message_token_count

COUNTER = get_counter("o200k_base")


def _units(messages):
    units: list[list[dict]] = []
    for m in messages:
        if m["role"] == "user" or not units:
            units.append([])
        units[-1].append(m)
    return units


def window(capacity, step=None):
    def trim(messages):
        system, rest = messages[:1], messages[1:]
        units = _units(rest)
        sizes = [sum(message_token_count(m, COUNTER) for m in u) for u in units]
        cut = plain_cut(sizes, capacity) if step is None else plan_block_cut(sizes, capacity, step=step)
        return system + [m for u in units[cut:] for m in u]

    return trim


@pytest.fixture(scope="module")
def session():
    return agent_session(80, words_per_turn=200)


def test_identity_trimmer_caches_everything_but_the_new_turn(session):
    sim = simulate_cache(session, lambda ms: ms, rules="openai")
    assert sim.turns[0].cached_tokens == 0
    later = sim.turns[10]
    # the previous prompt is a prefix of this one: all of it is cached, rounded down to 128
    assert later.cached_tokens == sim.turns[9].prompt_tokens // 128 * 128 or later.cached_tokens > 0
    assert sim.cached_share > 0.8
    assert all(t.visible_turns == t.turn for t in sim.turns)


def test_block_eviction_beats_the_sliding_window_under_both_providers(session):
    for rules in ("openai", "anthropic"):
        plain = simulate_cache(session, window(6000), rules=rules, label="plain")
        block = simulate_cache(session, window(6000, step=2000), rules=rules, label="block")
        assert block.cached_share > plain.cached_share + 0.2, (rules, plain.summary(), block.summary())
        assert block.cost < plain.cost
        system = message_token_count(session[0], COUNTER)
        assert max(t.prompt_tokens for t in block.turns) <= 6000 + system + 3  # system + window + priming


def test_sliding_window_caches_only_the_system_prompt_once_full(session):
    sim = simulate_cache(session, window(6000), rules="openai")
    full = [t for t in sim.turns if t.visible_turns < t.turn]  # the window has started to slide
    assert full
    system = message_token_count(session[0], COUNTER)
    assert all(t.cached_tokens <= system for t in full[1:])


def test_minimum_and_increment_rules():
    rules = CacheRules("x", min_tokens=10_000, increment=128)
    sim = simulate_cache(agent_session(5, words_per_turn=100), lambda ms: ms, rules=rules)
    assert sim.cached_tokens == 0  # never reaches the minimum


def test_ttl_expires_entries():
    short = cache_rules("openai")
    sim = simulate_cache(agent_session(10), lambda ms: ms, rules=short, seconds_between_turns=600)
    assert sim.cached_tokens == 0


def test_anthropic_breakpoints_written_and_read():
    sim = simulate_cache(agent_session(10), lambda ms: ms, rules="anthropic")
    assert sim.turns[0].written_tokens > 0 and sim.turns[0].cached_tokens == 0
    assert sim.turns[1].cached_tokens >= sim.turns[0].prompt_tokens - 10
    none = simulate_cache(agent_session(10), lambda ms: ms, rules="anthropic", breakpoints="none")
    assert none.cached_tokens == 0 and none.cost == pytest.approx(none.uncached_cost)


def test_explicit_cache_control_is_honoured():
    def marked(messages):
        out = [dict(m) for m in messages]
        out[0]["cache_control"] = {"type": "ephemeral"}
        return out

    sim = simulate_cache(agent_session(6), marked, rules="anthropic")
    system = message_token_count(agent_session(1)[0], COUNTER)
    assert all(t.cached_tokens in (0, system) for t in sim.turns)
    assert sim.turns[-1].cached_tokens == system


def test_summaries_count_as_visible():
    class Result:
        def __init__(self, messages, summarized):
            self.messages, self.summarized_ids = messages, summarized

    def summarising(messages):
        kept = [messages[0], *messages[-1:]]
        return Result(kept, [m["id"] for m in messages[1:-1]])

    sim = simulate_cache(agent_session(5), summarising)
    assert [t.visible_turns for t in sim.turns] == [0, 1, 2, 3, 4]


def test_deterministic(session):
    a = simulate_cache(session, window(6000, step=2000)).to_dict()
    b = simulate_cache(session, window(6000, step=2000)).to_dict()
    assert a == b


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: simulate_cache([], lambda m: m), ValueError, "no user message"),
        (lambda: simulate_cache([{"content": "x"}], lambda m: m), ValueError, "must be a dict with a 'role'"),
        (lambda: simulate_cache(agent_session(1), lambda m: 3), TypeError, "must return a list of messages"),
        (lambda: simulate_cache(agent_session(1), lambda m: ["x"]), TypeError, "as dicts"),
        (lambda: simulate_cache(agent_session(1), lambda m: m, rules="mystery"), ValueError, "no prompt-cache rules"),
        (lambda: simulate_cache(agent_session(1), lambda m: m, breakpoints="all"), ValueError, "breakpoints must be"),
        (lambda: CacheRules("x", increment=0), ValueError, "increment must be >= 1"),
        (lambda: CacheRules("x", read_multiplier=float("nan")), ValueError, "read_multiplier must be a finite"),
        (lambda: cache_rules("openai").with_discount(1.5), ValueError, "discount must be between 0 and 1"),
    ],
)
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_breakpoints_on_a_growing_conversation_are_read_back():
    from tokenbox_core.cache import cache_breakpoints, with_cache_control

    def marked(messages):
        return with_cache_control(messages, cache_breakpoints(messages))

    sim = simulate_cache(agent_session(12), marked, rules="anthropic", breakpoints="none")
    # every turn reads back the whole previous request (less the reply-priming tokens)
    assert all(t.cached_tokens >= p.prompt_tokens - 3 for p, t in zip(sim.turns, sim.turns[1:], strict=False))


def test_breakpoint_choice_and_errors():
    from tokenbox_core.cache import cache_breakpoints, with_cache_control

    session = agent_session(3)
    assert cache_breakpoints(session, max_breakpoints=0) == []
    assert cache_breakpoints(session[:2], min_tokens=10**9) == []
    points = cache_breakpoints(session)
    assert points[0] == 0 and points[-1] == len(session) - 1 and len(points) <= 4
    marked = with_cache_control(session, points, ttl="1h")
    assert marked[0]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert isinstance(session[0]["content"], str)  # input untouched
    with pytest.raises(ValueError, match="ttl must be"):
        with_cache_control(session, points, ttl="2h")
    with pytest.raises(ValueError, match="max_breakpoints must be"):
        cache_breakpoints(session, max_breakpoints=-1)
    with pytest.raises(ValueError, match="no content to carry"):
        with_cache_control([{"role": "assistant", "content": None}], [0])


def _ttl_marked(first: str | None, last: str | None):
    """A trimmer marking the system message and the last message with cache_control of the given TTLs."""

    def mark(messages):
        out = [dict(m) for m in messages]
        for i, ttl in ((0, first), (len(out) - 1, last)):
            out[i]["cache_control"] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
        return out

    return mark


def test_a_one_hour_breakpoint_outlives_the_five_minute_ones():
    """With ten idle minutes between turns, the 1-hour breakpoint on the system prompt is still read back while the
    5-minute entries of the conversation have expired; with 5-minute breakpoints only, nothing is read back."""
    system = message_token_count(agent_session(1)[0], COUNTER)
    mixed = simulate_cache(agent_session(6), _ttl_marked("1h", None), rules="anthropic", seconds_between_turns=600)
    assert [t.cached_tokens for t in mixed.turns] == [0] + [system] * 5
    short = simulate_cache(agent_session(6), _ttl_marked(None, None), rules="anthropic", seconds_between_turns=600)
    assert all(t.cached_tokens == 0 for t in short.turns)


def test_mixed_ttl_writes_are_billed_per_stretch():
    """A first request writes the system prompt at the 1-hour rate (2×) and the rest at the 5-minute rate (1.25×),
    the split Anthropic reports as ephemeral_1h / ephemeral_5m input tokens."""
    sim = simulate_cache(agent_session(1), _ttl_marked("1h", "5m"), rules="anthropic")
    first = sim.turns[0]
    system = message_token_count(agent_session(1)[0], COUNTER)
    assert first.written_tokens == first.prompt_tokens - 3  # everything but the reply-priming tokens
    price = sim.rules.input_price / 1_000_000
    expected = (3 + system * 2.0 + (first.written_tokens - system) * 1.25) * price
    assert first.cost == pytest.approx(expected)


def test_a_one_hour_breakpoint_after_a_five_minute_one_is_refused():
    """Anthropic answers HTTP 400 when a 1-hour entry follows a 5-minute one; the simulator says so and the fix,
    and a malformed TTL is named."""
    from tokenbox_core.errors import BudgetError

    with pytest.raises(BudgetError, match="3600 s TTL follows one with 300 s.*1h breakpoints before the 5m ones"):
        simulate_cache(agent_session(1), _ttl_marked("5m", "1h"), rules="anthropic")
    with pytest.raises(BudgetError, match="ttl must look like '5m' or '1h', got 'soon'"):
        simulate_cache(agent_session(1), _ttl_marked("soon", None), rules="anthropic")
