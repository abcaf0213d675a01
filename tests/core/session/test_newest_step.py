"""The newest agent step outranks recall, the pointer and older history (issue 32, defect 1)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import ContextSession


def _step(i: int, words: int) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": i})}}
    body = f"result {i}: " + " ".join(f"w{i}x{j}" for j in range(words))
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": body},
    ]


def _loop(steps: int, words: int, **options: Any) -> ContextSession:
    session = ContextSession(None, "loop", budget=500, counter="o200k_base", **options)
    session.add([{"role": "user", "content": "Research the deployment failure and report the root cause."}])
    for i in range(steps):
        session.add(_step(i, words))
    return session


def test_the_newest_step_is_kept_when_recall_would_have_taken_its_room() -> None:
    """At budget 500 the request ends on the newest call and its result (it ended on the task before, 63 tokens
    used), with recall on as with recall off."""
    for recall in (True, False):
        compiled = _loop(6, 100, recall=recall).compile()
        assert [m["role"] for m in compiled.messages[-2:]] == ["assistant", "tool"]
        assert compiled.messages[-1]["tool_call_id"] == "c5"
        assert compiled.total_tokens > 400  # the room recall found no use for went to the step


def test_a_newest_step_larger_than_the_window_is_previewed_head_and_tail() -> None:
    """A result that cannot fit whole is shown by its head and tail with its archived id and how to read on,
    within the budget, and reported as offloaded; the archive keeps it whole."""
    session = _loop(6, 400)
    compiled = session.compile()
    last = compiled.messages[-1]
    assert last["tool_call_id"] == "c5" and compiled.total_tokens <= 500
    assert last["content"].startswith("result 5: w5x0") and last["content"].rstrip().endswith("w5x399")
    assert 'rehydrate("t_13"' in last["content"] and compiled.offloaded == ("t_13",)
    assert session.rehydrate("t_13").endswith("w5x399")


@settings(deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=500), min_size=1, max_size=12),
    st.sampled_from([300, 500, 900]),
    st.booleans(),
)
def test_random_agent_loops_keep_the_newest_step_within_budget(words: list[int], budget: int, cache: bool) -> None:
    """Any agent loop: within the budget, the newest step present (verbatim or previewed), no tool result twice,
    every result after its call."""
    session = ContextSession(None, "p", budget=budget, counter="o200k_base", cache_aware=cache)
    session.add([{"role": "user", "content": "Find the cause."}])
    for i, n in enumerate(words):
        session.add(_step(i, n))
    compiled = session.compile()
    assert compiled.total_tokens <= budget
    results = [m["tool_call_id"] for m in compiled.messages if m["role"] == "tool"]
    assert len(results) == len(set(results)) and results[-1] == f"c{len(words) - 1}"
    calls: set[str] = set()
    for m in compiled.messages:
        calls |= {c["id"] for c in m.get("tool_calls") or ()}
        if m["role"] == "tool":
            assert m["tool_call_id"] in calls
