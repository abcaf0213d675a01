"""The agent-loop benchmark's own measurement code: the session generator, fact presence, validity, cache share."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tokenbox_core.chat._validate import sequence_problems

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


sessions = _load("_agent_sessions")
bench = _load("bench_agent_loop")
managers = _load("_agent_managers")


@pytest.fixture(scope="module")
def tiny() -> Any:
    return sessions.agent_session(30, seed=sessions.TUNING_SEEDS[0], fact_every=5)


class Keep:
    """A manager that sends every message except those whose ids it is told to leave out."""

    name = "keep"

    def __init__(self, leave_out: frozenset[str] | set[str] = frozenset()) -> None:
        self.history: list[dict[str, Any]] = []
        self.leave_out = leave_out

    def __call__(self, new: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.history += new
        return [m for m in self.history if m["id"] not in self.leave_out]


def test_generator_is_deterministic_per_seed(tiny: Any) -> None:
    """The same seed gives the same session; another seed, the held-out one included, gives another."""
    assert sessions.agent_session(30, seed=sessions.TUNING_SEEDS[0], fact_every=5) == tiny
    other = sessions.agent_session(30, seed=sessions.HELD_OUT_SEED, fact_every=5)
    assert other.messages != tiny.messages
    assert sessions.HELD_OUT_SEED not in sessions.TUNING_SEEDS


def test_generated_session_is_valid_and_plants_every_kind() -> None:
    """The session is a valid tool-using conversation; facts of all five kinds are planted before they are asked."""
    session = sessions.agent_session(60, seed=3, fact_every=4)
    assert sequence_problems(list(session.messages)) == []
    assert {f.kind for f in session.facts} == set(sessions.KINDS)
    assert any(m.get("tool_calls") for m in session.messages)
    for fact in session.facts:
        texts = [sessions.message_text(m) for m in session.messages]
        assert fact.value in texts[fact.planted]
        assert fact.value not in texts[fact.asked]  # the question never carries its answer
        assert [i for i, t in enumerate(texts[: fact.asked]) if fact.value in t] == [fact.planted]
        assert session.messages[fact.asked + 1]["role"] == "assistant"


def test_ask_at_end_puts_every_question_in_the_last_turns() -> None:
    """ask="end" asks every fact in the session's final turns, one a turn."""
    session = sessions.agent_session(40, seed=3, fact_every=5, ask="end")
    users = [i for i, m in enumerate(session.messages) if m["role"] == "user"]
    assert sorted(f.asked for f in session.facts) == users[-len(session.facts) :]


def test_fact_presence_counts_exactly_what_the_request_holds(tiny: Any) -> None:
    """Every fact is present when nothing is dropped; leaving out the planting messages of some facts loses those."""
    everything = bench.replay(tiny, Keep(), budget=10**9)
    assert bench.facts_present(tiny, everything) == [True] * len(tiny.facts)
    lost = {tiny.messages[f.planted]["id"] for f in tiny.facts[::2]}
    partial = bench.replay(tiny, Keep(lost), budget=10**9)
    assert bench.facts_present(tiny, partial) == [k % 2 == 1 for k in range(len(tiny.facts))]


def test_invalid_requests_are_the_ones_with_orphaned_tool_results(tiny: Any) -> None:
    """Dropping the assistant tool-call messages makes exactly the requests that carry a tool result invalid."""
    calls = {m["id"] for m in tiny.messages if m.get("tool_calls")}
    run = bench.replay(tiny, Keep(calls), budget=10**9)
    with_results = [k for k, r in enumerate(run.requests) if any(m["role"] == "tool" for m in r)]
    assert with_results
    assert [k for k, _ in bench.invalid_requests(run)] == with_results
    assert bench.invalid_requests(bench.replay(tiny, Keep(), budget=10**9)) == []


def test_cache_share_follows_the_prefix(tiny: Any) -> None:
    """A request that only grows is mostly served from cache; one whose first message changes every call never is."""
    grows = bench.replay(tiny, Keep(), budget=10**9)
    assert bench.cache_simulation(grows.requests, bench.PROVIDERS["OpenAI"]).cached_share > 0.5
    churn = [[{"role": "system", "content": f"call {k}"}, *r[1:]] for k, r in enumerate(grows.requests)]
    assert bench.cache_simulation(churn, bench.PROVIDERS["OpenAI"]).cached_share == 0.0


def test_trim_messages_replay_is_measured_within_its_budget(tiny: Any) -> None:
    """trim_messages replayed at 10 %: one request per call, none over budget or invalid, shares in [0, 1]."""
    pytest.importorskip("langchain_core")
    budget = int(managers.count(tiny.messages) * 0.10)
    run = bench.replay(tiny, managers.TrimMessages(budget), budget)
    result = bench.measure(tiny, run, 0.10)
    assert result.calls == len(tiny.calls()) == len(run.requests)
    assert result.over == 0 and result.invalid == 0
    assert all(managers.count(r) <= budget for r in run.requests)
    assert 0.0 <= result.facts <= 1.0 and all(0.0 <= v <= 1.0 for v in result.cached.values())
    assert result.facts == sum(bench.facts_present(tiny, run)) / len(tiny.facts)


def test_sizes_and_question_calls_agree_with_a_full_replay(tiny: Any) -> None:
    """Sizes counted once per message equal a fresh count; replaying only the question calls finds the same facts."""
    full = bench.replay(tiny, Keep(), budget=10**9)
    assert bench.sizes(full.requests) == [managers.count(r) for r in full.requests]
    asked = bench.replay(tiny, Keep(), budget=10**9, at=bench.questions(tiny))
    assert asked.calls == bench.questions(tiny) and len(asked.calls) < len(full.calls)
    assert bench.facts_present(tiny, asked) == bench.facts_present(tiny, full)


def test_context_session_replay_is_valid_and_within_budget(tiny: Any) -> None:
    """ContextSession replayed call by call at 10 %: every request valid and within budget, its archive removed."""
    budget = int(managers.count(tiny.messages) * 0.10)
    manager = managers.TokenBoxSession(budget)
    directory = Path(manager.directory.name)
    run = bench.replay(tiny, manager, budget)
    assert len(run.requests) == len(tiny.calls())
    assert bench.invalid_requests(run) == []
    assert max(bench.sizes(run.requests)) <= budget
    assert not directory.exists()  # replay closed the manager


def test_embedder_spec_builds_a_context_session_with_fused_recall(tiny: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """--embedder module:name yields a ContextSession row whose recall calls that embedder; a bad spec exits."""
    seen: list[str] = []

    def embed(text: str) -> list[float]:
        seen.append(text)
        return [float(len(text)), float(text.count("e")), 1.0]

    module = ModuleType("fake_embedder")
    module.embed = embed  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_embedder", module)
    maker = managers.with_embedder("fake_embedder:embed")
    assert maker.name == "TokenBox ContextSession + embed"
    budget = int(managers.count(tiny.messages) * 0.10)
    run = bench.replay(tiny, maker(budget), budget, at=bench.questions(tiny))
    assert seen and bench.invalid_requests(run) == []
    with pytest.raises(SystemExit, match="module:name"):
        managers.with_embedder("fake_embedder")


def test_a_corpus_edit_changes_words_not_the_sessions_shape() -> None:
    """Editing the prose (README, docs) keeps the same turns, tool steps, facts and questions for a seed."""
    prose = list(sessions.load_prose())
    edited = [prose[0].replace(" the ", " a ") + " more words" * 300, *prose[1:]]
    a = sessions.agent_session(40, seed=5, fact_every=5, prose=prose)
    b = sessions.agent_session(40, seed=5, fact_every=5, prose=edited)

    def shape(s: Any) -> list[tuple[str, int]]:
        return [(m["role"], len(m.get("tool_calls") or ())) for m in s.messages]

    assert shape(a) == shape(b)
    assert [(f.kind, f.planted, f.asked) for f in a.facts] == [(f.kind, f.planted, f.asked) for f in b.facts]
