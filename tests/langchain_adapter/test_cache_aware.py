"""cache_aware on the LangChain drop-ins: the core's prefix-stable eviction, translated (issue 15)."""

from __future__ import annotations

import itertools

from langchain_core.messages import convert_to_messages

from tokenbox_core.cache import CacheWindow
from tokenbox_core.testing._transcripts import agent_session
from tokenbox_langchain import TokenBoxMessages, trim_messages

SESSION = convert_to_messages(agent_session(60, words_per_turn=150))


def requests():
    return [SESSION[: i + 1] for i, m in enumerate(SESSION) if m.type == "human"]


def test_trim_messages_cache_aware_only_appends_between_cuts():
    outs = [
        trim_messages(
            r, max_tokens=5000, token_counter="gpt-4o", include_system=True, start_on="human", cache_aware=True
        )
        for r in requests()
    ]
    breaks = sum(1 for a, b in itertools.pairwise(outs) if b[: len(a)] != a)
    plain = [
        trim_messages(r, max_tokens=5000, token_counter="gpt-4o", include_system=True, start_on="human")
        for r in requests()
    ]
    plain_breaks = sum(1 for a, b in itertools.pairwise(plain) if b[: len(a)] != a)
    assert 0 < breaks < plain_breaks / 3
    for out in outs:
        ids = {c["id"] for m in out if m.type == "ai" for c in m.tool_calls}
        assert ids == {m.tool_call_id for m in out if m.type == "tool"}


def test_token_box_messages_cache_aware_with_a_summary():
    runnable = TokenBoxMessages(
        budget=5000, counter="gpt-4o", cache_aware=CacheWindow(summarizer=lambda ms, t: f"{len(ms)} earlier messages")
    )
    result = runnable.fit(SESSION)
    assert result.messages[0] is SESSION[0]
    assert result.messages[1].type == "system" and result.messages[1].content.endswith("earlier messages")
    assert result.messages[2].type == "human"
    assert {r.reason for r in result.removed} == {"cache_block"}
    assert result.total_tokens <= 5000
