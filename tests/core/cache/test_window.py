from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import ContextBudget
from tokenbox_core.cache import CacheWindow, simulate_cache
from tokenbox_core.chat import fit_conversation
from tokenbox_core.errors import SectionError
from tokenbox_core.testing._transcripts import agent_session
from tokenbox_core.tokens import count_message_tokens

SESSION = agent_session(90, words_per_turn=200)


def requests(session):
    """Every request of the session: the messages up to and including each user message."""
    return [session[: i + 1] for i, m in enumerate(session) if m["role"] == "user"]


def fits(budget, **kw):
    return [fit_conversation(r, budget, counter="gpt-4o", cache_aware=CacheWindow(**kw)) for r in requests(SESSION)]


def test_within_budget_and_only_block_removals():
    for fit in fits(8000):
        assert count_message_tokens(fit.messages, "gpt-4o") == fit.total_tokens <= 8000
        assert {r.reason for r in fit.removed} <= {"cache_block"}


def test_prefix_only_appends_between_cuts():
    results = fits(8000)
    moves = 0
    for before, after in itertools.pairwise(results):
        prev, cur = before.messages, after.messages
        if cur[: len(prev)] != prev:
            moves += 1
            assert after.cut > before.cut  # only a block cut breaks the prefix
    assert 0 < moves < len(results) // 5


def test_summary_stands_for_the_cut_and_changes_only_with_it():
    calls = []

    def summarize(messages, target):
        calls.append(len(messages))
        return f"Summary of {len(messages)} messages: " + " ".join(m["id"] for m in messages)[: target * 2]

    window = CacheWindow(summarizer=summarize, summary_tokens=200)
    results = [fit_conversation(r, 8000, counter="gpt-4o", cache_aware=window) for r in requests(SESSION)]
    cut = [f for f in results if f.precut]
    assert cut
    for fit in cut:
        summary = fit.messages[1]
        assert summary["role"] == "system" and summary["content"].startswith("Summary of")
        assert fit.stable_messages == 2
        assert set(fit.summarized_ids) == {r.id for r in fit.removed}
        assert count_message_tokens([summary], "gpt-4o") - 3 <= 200  # less the request's reply priming
    assert len(calls) == len({f.cut for f in cut})  # one summary per cut, memoised


def test_marker_is_a_rehydration_pointer_listing_every_id():
    fit = fit_conversation(SESSION, 6000, counter="gpt-4o", cache_aware=True, omission_marker=True)
    marker = fit.messages[1]["content"]
    assert all(r.id in marker for r in fit.removed)


def test_tool_groups_and_start_on_hold():
    for fit in fits(5000, low_water=0.5):
        history = [m for m in fit.messages if m["role"] != "system"]
        assert history[0]["role"] == "user"
        calls = {c["id"] for m in history for c in m.get("tool_calls") or []}
        results = {m["tool_call_id"] for m in history if m["role"] == "tool"}
        assert calls == results


def test_same_input_same_output():
    a = fit_conversation(SESSION, 7000, counter="gpt-4o", cache_aware=True)
    b = fit_conversation([dict(m) for m in SESSION], 7000, counter="gpt-4o", cache_aware=True)
    assert a.messages == b.messages and a.layout.fingerprint == b.layout.fingerprint


def test_no_cut_needed_is_the_plain_fit():
    short = SESSION[:8]
    assert fit_conversation(short, 32000, cache_aware=True).messages == fit_conversation(short, 32000).messages


def test_budget_with_reserves():
    budget = ContextBudget(max_tokens=9000, output_reserve=1000, estimation_safety_margin_percent=5)
    fit = fit_conversation(SESSION, budget, counter="gpt-4o", cache_aware=True)
    assert fit.total_tokens <= fit.effective_max_tokens
    assert {r.reason for r in fit.removed} <= {"cache_block"}


def test_cache_aware_beats_the_sliding_window_in_the_simulator():
    def trimmer(cache):
        return lambda ms: fit_conversation(ms, 8000, counter="gpt-4o", cache_aware=cache)

    plain = simulate_cache(SESSION, trimmer(False), rules="openai")
    aware = simulate_cache(SESSION, trimmer(True), rules="openai")
    assert aware.cached_share > 0.8 > plain.cached_share


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cache_aware": CacheWindow(), "strategy": "first"}, "cache_aware needs strategy='last'"),
        ({"cache_aware": True, "allow_partial": True}, "cannot be combined with allow_partial"),
        ({"cache_aware": "yes"}, "cache_aware must be True, False or a CacheWindow"),
        ({"cache_aware": CacheWindow(cut_history=False)}, r"is the block cut itself: CacheWindow\(cut_history=False\)"),
    ],
)
def test_bad_options(kwargs, message):
    with pytest.raises(SectionError, match=message):
        fit_conversation(SESSION, 5000, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"low_water": 1.0}, "low_water must be between 0 and 1"),
        ({"low_water": float("nan")}, "low_water must be between 0 and 1"),
        ({"low_water": True}, "low_water must be a number"),
        ({"summary_tokens": -1}, "summary_tokens must be an integer >= 0"),
        ({"summarizer": 3}, "summarizer must be callable"),
        ({"role": "tool"}, "role must be"),
        ({"cut_history": "no"}, "cut_history must be True or False, got 'no'"),
    ],
)
def test_bad_window(kwargs, message):
    with pytest.raises(SectionError, match=message):
        CacheWindow(**kwargs)


def test_summarizer_must_return_text():
    with pytest.raises(SectionError, match="must return a string"):
        fit_conversation(SESSION, 5000, cache_aware=CacheWindow(summarizer=lambda m, t: None))


@settings(max_examples=40)
@given(
    turns=st.integers(1, 40),
    words=st.integers(5, 120),
    budget=st.integers(1500, 9000),
    low_water=st.floats(0.3, 0.9),
)
def test_property_budget_determinism_and_validity(turns, words, budget, low_water):
    session = agent_session(turns, words_per_turn=words, system="Be brief.", tool_every=2)
    window = CacheWindow(low_water=low_water)
    fit = fit_conversation(session, budget, counter="gpt-4o", cache_aware=window)
    again = fit_conversation(session, budget, counter="gpt-4o", cache_aware=window)
    assert fit.messages == again.messages
    assert count_message_tokens(fit.messages, "gpt-4o") <= budget
    assert fit.messages[-1] == session[-1] or session[-1]["role"] != "user"
    history = [m for m in fit.messages if m["role"] != "system"]
    calls = {c["id"] for m in history for c in m.get("tool_calls") or []}
    assert calls == {m["tool_call_id"] for m in history if m["role"] == "tool"}


def test_cache_report_says_where_the_prefix_ends():
    window = CacheWindow(summarizer=lambda m, t: "summary " * 50, summary_tokens=300)
    fit = fit_conversation(SESSION, 6000, counter="gpt-4o", cache_aware=window)
    report = fit.cache_report("anthropic")
    assert report["stable_messages"] == 2 and report["provider"] == "anthropic"
    assert report["stable_tokens"] == count_message_tokens(fit.messages[:2], "gpt-4o") - 3
    assert report["stable_clears_minimum"] is (report["stable_tokens"] >= 1024)
    assert report["prompt_tokens"] == fit.total_tokens and report["prompt_clears_minimum"]
    assert fit.report()["cache"]["block_removed"] == len(fit.removed)


def test_marker_templates_take_the_section_fields():
    fit = fit_conversation(
        SESSION, 6000, counter="gpt-4o", cache_aware=True, omission_marker="[{count}: {first}…{last}]"
    )
    assert fit.messages[1]["content"] == f"[{len(fit.removed)}: {fit.removed[0].id}…{fit.removed[-1].id}]"


def _task_loop(steps: int) -> list[dict]:
    """One user task followed by ``steps`` tool calls and results (a single-task agent loop)."""
    import json

    out = [{"role": "system", "content": "be an agent"}, {"role": "user", "content": "fix the failing test"}]
    for i in range(steps):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "run", "arguments": json.dumps({"n": i})}}
        out += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i} " + "blah " * 30},
        ]
    return out


def test_a_single_task_loop_keeps_its_newest_steps_when_cache_aware():
    """Issue 23: inside one long agent loop the block cut moves at tool-group boundaries, so the task and the
    newest steps stay (the unit used to be the whole loop: 2 of 122 messages were kept)."""
    loop = _task_loop(60)
    fit = fit_conversation(loop, 2000, counter="o200k_base", cache_aware=True)
    kept = [m for m in fit.messages if m.get("role") == "tool"]
    assert len(fit.messages) > 60 and fit.total_tokens <= 2000
    assert kept[-1]["tool_call_id"] == "c59" and fit.messages[1]["content"].endswith("fix the failing test")
    grown = [fit_conversation(_task_loop(n), 2000, counter="o200k_base", cache_aware=True) for n in range(60, 70)]
    moves = sum(1 for a, b in itertools.pairwise(grown) if b.messages[: len(a.messages)] != a.messages)
    assert moves <= 2  # the prefix only grows between block cuts
