"""The newest agent step (the last assistant tool call with all its results) outranks older history and
pointers in the conversation engine: kept whole when it fits the window, previewed head/tail with a marker
naming what was cut when it does not, never dropped (DESIGN.md, Sessions; issue 32 defects 3 and 4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tokenbox_core import ContextBudget, count_message_tokens
from tokenbox_core.chat import fit_conversation
from tokenbox_core.chat._transcripts import sequence_problems

W = "whitespace"


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def step(n: int, result_words: int, *, results: int = 1) -> list[dict[str, Any]]:
    calls = [
        {"id": f"c{n}_{k}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        for k in range(results)
    ]
    out: list[dict[str, Any]] = [{"role": "assistant", "content": "", "tool_calls": calls, "id": f"a{n}"}]
    out += [
        {"role": "tool", "tool_call_id": f"c{n}_{k}", "content": words(result_words, f"r{n}.{k}."), "id": f"t{n}_{k}"}
        for k in range(results)
    ]
    return out


def loop(steps: int, *, last_words: int = 20, result_words: int = 20, results: int = 1) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief", "id": "sys"},
        {"role": "user", "content": "find everything", "id": "task"},
    ]
    for n in range(steps - 1):
        out += step(n, result_words)
    out += step(steps - 1, last_words, results=results)
    return out


def test_a_newest_result_larger_than_the_window_is_previewed_not_dropped() -> None:
    """A tool result larger than the whole window is kept as a head/tail preview naming its id and the cut."""
    messages = loop(3, last_words=2_000)
    fit = fit_conversation(messages, 300, counter=W)
    out = fit.messages
    assert [m.get("id") for m in out][-2:] == ["a2", "t2_0"]
    preview = out[-1]["content"]
    assert preview.startswith("r2.0.0 ") and preview.endswith("r2.0.1999")
    assert "t2_0" in preview and "cut" in preview
    assert fit.total_tokens <= 300 and count_message_tokens(out, W) == fit.total_tokens
    assert fit.previewed == [len(messages) - 1]
    assert sequence_problems(out) == []


def test_every_result_of_a_parallel_step_is_previewed() -> None:
    """Each result of a parallel newest step gets a share of the room; none is dropped."""
    messages = loop(2, last_words=400, results=3)
    fit = fit_conversation(messages, 300, counter=W)
    kept = [m.get("id") for m in fit.messages]
    assert kept[-4:] == ["a1", "t1_0", "t1_1", "t1_2"]
    assert fit.total_tokens <= 300
    assert sequence_problems(fit.messages) == []


def test_the_newest_step_outranks_the_target() -> None:
    """A step that fits the window but not the target (``keep``) is kept whole: the target binds history."""
    messages = loop(4, last_words=150)
    fit = fit_conversation(messages, ContextBudget(max_tokens=400, target_tokens=120), counter=W)
    assert fit.messages[-1]["content"] == messages[-1]["content"]
    assert fit.total_tokens <= 400


def test_a_step_that_fits_is_left_as_it_is() -> None:
    """When everything fits, nothing is previewed and the output is the input."""
    messages = loop(3)
    fit = fit_conversation(messages, 10_000, counter=W)
    assert fit.messages == messages and fit.previewed == []


@pytest.mark.parametrize(
    "after",
    [
        {"role": "user", "content": "next question", "id": "q2"},
        {"role": "assistant", "content": "final answer", "id": "q2"},
    ],
)
def test_a_finished_step_is_history(after: dict[str, Any]) -> None:
    """A step followed by a user message or a final answer is older history: evicted as before."""
    messages = [*loop(2, last_words=2_000), after]
    fit = fit_conversation(messages, 100, counter=W)
    assert [m.get("id") for m in fit.messages][-1] == "q2" and "t1_0" not in [m.get("id") for m in fit.messages]


@pytest.mark.parametrize("marker", [False, True])
def test_cache_aware_with_a_marker_keeps_the_loop(marker: bool) -> None:
    """cache_aware with an omission marker: every fit of a long loop is within budget and ends on its newest
    step (the block-cut marker no longer grows with every id it names until it empties the loop)."""
    messages = [
        {"role": "system", "content": "be brief", "id": "sys"},
        {"role": "user", "content": "find everything", "id": "task"},
    ]
    for n in range(150):
        messages += step(n, 30)
        fit = fit_conversation(messages, 800, counter="o200k_base", omission_marker=marker, cache_aware=True)
        assert fit.total_tokens <= 800, n
        assert count_message_tokens(fit.messages, "o200k_base") == fit.total_tokens, n
        assert [m.get("id") for m in fit.messages][-2:] == [f"a{n}", f"t{n}_0"], n
        assert sequence_problems(fit.messages) == [], n


def test_tool_call_arguments_are_counted_as_frameworks_send_them() -> None:
    """A tool call's dict arguments cost what ``json.dumps(args, ensure_ascii=False)`` costs (LangChain's
    ``convert_to_openai_messages``), not the compact canonical JSON."""
    args = {"query": "item 1", "limit": 10, "filters": {"kind": "book", "lang": "fr"}, "é": [1, 2]}
    neutral = {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "lookup", "args": args}]}
    sent = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c",
                "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps(args, ensure_ascii=False)},
            }
        ],
    }
    assert count_message_tokens([neutral]) == count_message_tokens([sent])
