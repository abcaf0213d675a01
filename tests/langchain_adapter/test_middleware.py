"""TokenBoxMiddleware in create_agent: every request fits its window, counted exactly, and stays valid."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from tokenbox_core import get_counter
from tokenbox_core._arguments import UnknownArgumentError
from tokenbox_core.cache import CacheWindow, simulate_cache
from tokenbox_core.errors import BudgetError
from tokenbox_core.testing._transcripts import agent_session
from tokenbox_langchain._agent_window import tool_tokens
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain._fit import neutral
from tokenbox_langchain._history import from_neutral
from tokenbox_langchain._middleware import TokenBoxMiddleware
from tokenbox_langchain.testing import FakeToolModel, lookup_tool, sequence_problems

COUNT = MessageCounter("o200k_base")
TEXT = get_counter("o200k_base")
SYSTEM = "You are a careful researcher. Use the lookup tool, one step at a time, then answer."
STEPS = 300
LIMIT = {"recursion_limit": 2 * STEPS + 20}


def request_tokens(model: FakeToolModel, i: int) -> int:
    """What request ``i`` costs as sent: the messages (system first) and the tool schemas."""
    return COUNT.count(model.requests[i]) + tool_tokens(model.tool_schemas[i], TEXT)


def run_agent(middleware: TokenBoxMiddleware, *, steps: int = STEPS, words: int = 30, run_async: bool = False):
    model = FakeToolModel(steps=steps)
    agent = create_agent(model, [lookup_tool(words=words)], system_prompt=SYSTEM, middleware=[middleware])
    task = {"messages": [HumanMessage("Research the whole catalogue.", id="task")]}
    state = asyncio.run(agent.ainvoke(task, LIMIT)) if run_async else agent.invoke(task, LIMIT)
    return model, state["messages"]


def check_requests(model: FakeToolModel, state: list[BaseMessage], limit: int) -> None:
    """Every request within ``limit``, valid, system first, the task and the newest message in it."""
    assert len(model.requests) == STEPS + 1
    by_id = {m.id: m for m in state}
    for i, request in enumerate(model.requests):
        assert request_tokens(model, i) <= limit, i
        assert sequence_problems(request) == [], i
        assert isinstance(request[0], SystemMessage) and request[0].content == SYSTEM
        assert request[1] is by_id["task"] or request[1] == state[0]
        assert request[-1].id == state[2 * i].id  # the newest message of the state at call i
        for m in request[1:]:
            assert m.id in by_id  # every message the model sees is a message of the state, ids unchanged
            assert m == by_id[m.id]
    assert any(len(r) < 2 * i for i, r in enumerate(model.requests))  # the window really was exceeded


def test_create_agent_300_steps_sync() -> None:
    """300 tool steps: every request fits 4,000 tokens counted exactly (system and tools included), no orphan."""
    model, state = run_agent(TokenBoxMiddleware(4_000))
    assert len(state) == 2 * STEPS + 2  # the graph state keeps every message
    assert isinstance(state[-1], AIMessage) and not state[-1].tool_calls
    check_requests(model, state, 4_000)


def test_create_agent_300_steps_async() -> None:
    """The async path (ainvoke → awrap_model_call) fits every request the same way."""
    model, state = run_agent(TokenBoxMiddleware(4_000), run_async=True)
    assert len(state) == 2 * STEPS + 2
    check_requests(model, state, 4_000)


def test_sync_and_async_send_the_same_requests() -> None:
    """The same run, sync or async, sends byte-identical requests (the layout is deterministic)."""
    sync_model, _ = run_agent(TokenBoxMiddleware(3_000), steps=100)
    async_model, _ = run_agent(TokenBoxMiddleware(3_000), steps=100, run_async=True)

    def sent(model: FakeToolModel) -> list[list[dict[str, Any]]]:  # tool results get random ids from the ToolNode
        return [
            [{k: v for k, v in d.items() if k != "id" or d["role"] != "tool"} for d in neutral(r)]
            for r in model.requests
        ]

    assert sent(sync_model) == sent(async_model)


@pytest.mark.parametrize("cache_aware", [False, True])
def test_single_task_loop_keeps_the_task_and_newest_steps(cache_aware: bool) -> None:
    """One task, 300 tool steps: every request holds the task and the newest steps, cache-aware or not."""
    model, state = run_agent(TokenBoxMiddleware(5_000, cache_aware=cache_aware), words=60)
    for i, request in enumerate(model.requests):
        assert request_tokens(model, i) <= 5_000
        assert request[1].id == "task"
        assert request[-1].id == state[2 * i].id
        if i >= 3:
            assert [m.id for m in request[-4:]] == [m.id for m in state[2 * i - 3 : 2 * i + 1]]
        assert sequence_problems(request) == []


def test_window_from_the_model_profile_less_its_output() -> None:
    """Without a budget the window is the profile's max_input_tokens less max_output_tokens."""
    model = FakeToolModel(steps=120, profile={"max_input_tokens": 3_000, "max_output_tokens": 500})
    agent = create_agent(model, [lookup_tool()], system_prompt=SYSTEM, middleware=[TokenBoxMiddleware()])
    agent.invoke({"messages": [HumanMessage("go", id="task")]}, LIMIT)
    sizes = [request_tokens(model, i) for i in range(len(model.requests))]
    assert max(sizes) <= 2_500 < max(sizes) + 200


def test_request_max_tokens_is_the_output_reserve() -> None:
    """A model's own max_tokens setting is reserved for the answer."""
    from langchain.agents.middleware import ModelRequest

    mw = TokenBoxMiddleware(2_000)
    history = [HumanMessage("go", id="task")]
    for n in range(60):
        history += [
            AIMessage(
                "", tool_calls=[{"name": "lookup", "args": {"query": f"q{n}"}, "id": f"c{n}", "type": "tool_call"}]
            ),
            ToolMessage("result " * 30, tool_call_id=f"c{n}"),
        ]
    request = ModelRequest(
        model=FakeToolModel(),
        messages=history,
        system_message=SystemMessage(SYSTEM),
        model_settings={"max_tokens": 700},
    )
    fitted = mw.fit(request)
    assert COUNT.count([fitted.system_message, *fitted.messages]) <= 1_300
    assert mw.window(request).budget.output_reserve == 700


def test_no_budget_and_no_profile_says_how_to_fix_it() -> None:
    """A model without a profile and no budget: BudgetError naming budget=."""
    model = FakeToolModel(steps=1)
    agent = create_agent(model, [lookup_tool()], middleware=[TokenBoxMiddleware()])
    with pytest.raises(BudgetError, match=r"no token budget for FakeToolModel.*TokenBoxMiddleware\(budget=\.\.\.\)"):
        agent.invoke({"messages": [HumanMessage("go")]})


def test_window_without_room_for_messages() -> None:
    """Tool schemas and the output reserve taking the whole window: BudgetError with the numbers."""
    model = FakeToolModel(steps=1)
    agent = create_agent(model, [lookup_tool()], middleware=[TokenBoxMiddleware(100, output_reserve=90)])
    with pytest.raises(BudgetError, match=r"window of 100 tokens leaves no room.*reserve takes 90 and the tool"):
        agent.invoke({"messages": [HumanMessage("go")]})


def test_trigger_leaves_requests_untouched_until_reached() -> None:
    """trigger=("messages", 40): requests pass unchanged until the state reaches 40 messages."""
    model, state = run_agent(TokenBoxMiddleware(20_000, trigger=("messages", 40), keep=("tokens", 1_500)), steps=60)
    for i, request in enumerate(model.requests[:20]):
        assert len(request) == 2 * i + 2  # system + all 2i+1 messages
    later = [request_tokens(model, i) - tool_tokens(model.tool_schemas[i], TEXT) for i in range(25, 61)]
    assert max(later) <= 1_500  # fitted to keep
    assert len(state) == 122


def test_keep_fraction_is_the_layout_target() -> None:
    """keep=("fraction", 0.5): once fitted, a request uses at most half the window."""
    model, _ = run_agent(TokenBoxMiddleware(4_000, keep=("fraction", 0.5)), steps=80)
    late = [COUNT.count(r) for r in model.requests[40:]]
    assert max(late) <= 2_000


def test_omission_marker_joins_the_system_message() -> None:
    """The omission marker is counted and becomes part of the one system message, never a second one."""
    model, _ = run_agent(TokenBoxMiddleware(3_000, omission_marker=True), steps=80)
    last = model.requests[-1]
    assert sum(isinstance(m, SystemMessage) for m in last) == 1
    assert last[0].content.startswith(SYSTEM) and "omitted" in last[0].content
    assert request_tokens(model, len(model.requests) - 1) <= 3_000


def test_summarizer_writes_once_per_cut() -> None:
    """A callable summarizer stands for the cut history; it is called once per cut, not per request."""
    calls: list[int] = []

    def summarize(messages: list[BaseMessage]) -> str:
        calls.append(len(messages))
        return f"{len(messages)} earlier messages looked up items."

    model, _ = run_agent(TokenBoxMiddleware(3_000, summarizer=summarize), steps=120)
    assert calls and len(calls) < 20  # far fewer summaries than the 121 requests
    assert "earlier messages looked up items" in model.requests[-1][0].content
    assert all(request_tokens(model, i) <= 3_000 for i in range(len(model.requests)))


def test_persistent_mode_compacts_the_state() -> None:
    """persistent=True: the graph state itself is compacted with RemoveMessage(REMOVE_ALL_MESSAGES) + kept."""
    mw = TokenBoxMiddleware(3_000, persistent=True, trigger=("tokens", 2_500), keep=("tokens", 1_200))
    assert isinstance(mw, TokenBoxMiddleware) and mw.name == "TokenBoxMiddleware"
    model = FakeToolModel(steps=80)
    agent = create_agent(model, [lookup_tool()], system_prompt=SYSTEM, middleware=[mw])
    state = agent.invoke({"messages": [HumanMessage("go", id="task")]}, LIMIT)["messages"]
    assert len(state) < 60 and state[0].id == "task"
    assert sequence_problems(state) == []
    assert all(COUNT.count(r) <= 3_000 for r in model.requests)


def test_persistent_mode_with_a_summary() -> None:
    """With a summarizer, the compacted state starts with a summary message of what was removed."""
    mw = TokenBoxMiddleware(3_000, persistent=True, keep=("tokens", 1_000), summarizer=lambda ms: f"{len(ms)} done")
    model = FakeToolModel(steps=60)
    agent = create_agent(model, [lookup_tool()], system_prompt=SYSTEM, middleware=[mw])
    state = agent.invoke({"messages": [HumanMessage("go", id="task")]}, LIMIT)["messages"]
    assert state[0].id.startswith("tokenbox-summary-") and state[0].content.endswith(" done")
    assert any(m.id == "task" for m in state)


def test_persistent_mode_needs_a_budget() -> None:
    """persistent=True without a budget fails at construction, naming budget=."""
    with pytest.raises(BudgetError, match=r"persistent=True .* pass TokenBoxMiddleware\(budget=\.\.\.\)"):
        TokenBoxMiddleware(persistent=True)


def test_misspelt_argument_fails_with_a_suggestion() -> None:
    """An unknown keyword argument names the closest known one."""
    with pytest.raises(UnknownArgumentError, match=r"'tokens_counter' \(did you mean 'token_counter'\?\)"):
        TokenBoxMiddleware(1_000, tokens_counter="gpt-4o")
    with pytest.raises(
        UnknownArgumentError, match=r"'max_tokens' \(the token budget of TokenBoxMiddleware is 'budget'"
    ):
        TokenBoxMiddleware(max_tokens=1_000)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"trigger": ("token", 5)}, r"trigger=\('token', 5\) is not a context size"),
        ({"trigger": ("fraction", 1.5)}, r"a fraction must be a number in \(0, 1\]"),
        ({"trigger": {"tokens": 10, "turns": 3}}, r"trigger clause .*keys must be 'tokens', 'fraction' or 'messages'"),
        ({"trigger": [{}]}, r"trigger clause \{\}: its keys must be"),
        ({"trigger": 5}, r"trigger=5 is not a trigger: use a size"),
        ({"trigger": [("messages", 0)]}, r"a message count must be an integer >= 1"),
        ({"keep": ("tokens", 0)}, r"a token count must be an integer >= 1"),
        ({"output_reserve": -1}, r"output_reserve must be an integer >= 0"),
        ({"budget": True}, r"budget must be a number of tokens"),
    ],
)
def test_invalid_options_fail_at_construction(kwargs: dict[str, Any], message: str) -> None:
    """Every invalid option raises BudgetError at construction, saying what to pass."""
    with pytest.raises(BudgetError, match=message):
        TokenBoxMiddleware(**{"budget": 1_000, **kwargs})


def test_name_is_stable_and_configurable() -> None:
    """The name is "TokenBoxMiddleware" unless given (create_agent and deepagents match by name)."""
    assert TokenBoxMiddleware(1_000).name == "TokenBoxMiddleware"
    assert TokenBoxMiddleware(1_000, name="SummarizationMiddleware").name == "SummarizationMiddleware"
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        TokenBoxMiddleware(1_000, name="")


@pytest.mark.slow
def test_chat_session_cache_share() -> None:
    """A chat-shaped 300-turn session: cache-aware fitting keeps most prompt tokens cacheable."""
    from langchain.agents.middleware import ModelRequest

    session = agent_session(300, words_per_turn=60)
    sizes: list[int] = []

    def trimmer(mw: TokenBoxMiddleware):
        def trim(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
            lc = from_neutral(messages)
            request = ModelRequest(model=FakeToolModel(), messages=lc[1:], system_message=lc[0])
            fitted = mw.fit(request)
            sent = [fitted.system_message, *fitted.messages]
            sizes.append(COUNT.count(sent))
            return neutral(sent)

        return trim

    plain = simulate_cache(session, trimmer(TokenBoxMiddleware(8_000)), rules="openai")
    aware = simulate_cache(session, trimmer(TokenBoxMiddleware(8_000, cache_aware=CacheWindow())), rules="openai")
    assert max(sizes) <= 8_000
    assert aware.cached_share >= 0.8 > plain.cached_share, (aware.cached_share, plain.cached_share)


def test_state_is_untouched_by_the_view() -> None:
    """With a checkpointer, the stored state after the run holds every message (the view is not persisted)."""
    model = FakeToolModel(steps=50)
    saver = InMemorySaver()
    agent = create_agent(
        model, [lookup_tool()], system_prompt=SYSTEM, middleware=[TokenBoxMiddleware(1_500)], checkpointer=saver
    )
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
    agent.invoke({"messages": [HumanMessage("go", id="task")]}, config)
    stored = agent.get_state(config).values["messages"]
    assert len(stored) == 102 and stored[0].id == "task"
    assert max(len(r) for r in model.requests) < 40


def _messages(n: int, words: int = 20) -> list[BaseMessage]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(" ".join(f"w{i}x{j}" for j in range(words)), id=f"m{i}")
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("trigger", "messages", "fires"),
    [
        (("messages", 6), 6, True),  # reached at the threshold, as LangChain's
        (("messages", 6), 5, False),
        ({"messages": 6, "tokens": 10_000}, 8, False),  # a dict: every condition must hold
        ({"messages": 6, "tokens": 100}, 8, True),
        ([("messages", 50), ("tokens", 100)], 8, True),  # a list: any one clause suffices
        ([("messages", 50), {"tokens": 100, "messages": 20}], 8, False),
        ([], 8, False),  # an empty list never triggers (only the window itself does)
    ],
)
def test_compound_triggers(trigger: Any, messages: int, fires: bool) -> None:
    """Triggers take SummarizationMiddleware's forms: a size, a dict of sizes that must all hold, a list of which
    any one suffices; an untriggered request passes unchanged, a triggered one is fitted to keep."""
    mw = TokenBoxMiddleware(50_000, trigger=trigger, keep=("tokens", 60))
    history = _messages(messages)
    window = mw.window(_Request(history))  # type: ignore[arg-type]
    assert mw._triggered(window, None, history) is fires


class _Request:
    """The parts of a ModelRequest the window reads."""

    def __init__(self, messages: list[BaseMessage]) -> None:
        self.messages, self.tools, self.model, self.model_settings, self.response_format = messages, [], None, {}, None
        self.system_message = None


def test_string_summarizer_is_resolved_with_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """summarizer="provider:model" is resolved with LangChain's init_chat_model, as SummarizationMiddleware does."""
    import langchain.chat_models

    seen: list[str] = []

    def fake_init(name: str, **_: Any) -> FakeToolModel:
        seen.append(name)
        return FakeToolModel(steps=0)

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", fake_init)
    mw = TokenBoxMiddleware(3_000, persistent=True, summarizer="openai:gpt-4o-mini")
    assert seen == ["openai:gpt-4o-mini"] and mw.summarizer is not None


def test_persistent_keep_below_the_summary_room() -> None:
    """A small keep with a summarizer keeps that many tokens of messages and puts the summary on top (the
    summary's room no longer eats keep down to nothing)."""
    mw = TokenBoxMiddleware(
        3_000, persistent=True, trigger=("tokens", 1_000), keep=("tokens", 300), summarizer=lambda ms: "earlier work"
    )
    history = _messages(40)
    update = mw.before_model({"messages": history}, None)  # type: ignore[arg-type]
    assert update is not None
    kept = update["messages"][2:]
    assert update["messages"][1].content.endswith("earlier work")
    assert kept and COUNT.count(kept) <= 300 and kept[-1].id == "m39"


def test_keep_messages_keeps_the_newest_n() -> None:
    """keep=("messages", n), SummarizationMiddleware's default form: a fitted request keeps the newest n messages
    (fewer when the oldest of them would split a tool group), in view and persistent mode."""
    model, _ = run_agent(TokenBoxMiddleware(20_000, trigger=("messages", 30), keep=("messages", 6)), steps=40)
    for i, request in enumerate(model.requests):
        history = request[1:]  # after the system message
        if 2 * i + 1 >= 30:
            assert 1 <= len(history) <= 6 and sequence_problems(history, start_on_human=False) == []
        else:
            assert len(history) == 2 * i + 1
    mw = TokenBoxMiddleware(3_000, persistent=True, trigger=("messages", 10), keep=("messages", 4))
    update = mw.before_model({"messages": _messages(40)}, None)  # type: ignore[arg-type]
    assert update is not None
    assert [m.id for m in update["messages"][1:]] == ["m36", "m37", "m38", "m39"]
    padded = TokenBoxMiddleware(
        3_000, persistent=True, trigger=("messages", 3), keep=("messages", 1), summarizer=lambda ms: "  in short  "
    )
    update = padded.before_model({"messages": _messages(3)}, None)  # type: ignore[arg-type]
    assert update is not None and update["messages"][1].content.endswith(":\nin short")  # stripped, as upstream


def test_summary_calls_stay_off_the_messages_stream() -> None:
    """The summarizer's model call is tagged no-stream: an agent streamed with stream_mode="messages" shows the
    agent model's answer only, never the summary being written (as SummarizationMiddleware)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    summarizer = GenericFakeChatModel(messages=iter([AIMessage("SUMMARY-TEXT")]))
    mw = TokenBoxMiddleware(
        2_000, persistent=True, trigger=("messages", 3), keep=("messages", 1), summarizer=summarizer
    )
    agent = create_agent(model=GenericFakeChatModel(messages=iter([AIMessage("Final answer.")])), middleware=[mw])
    task = {"messages": [HumanMessage("hi"), AIMessage("hello"), HumanMessage("again")]}
    parts = [part for part, _ in agent.stream(task, stream_mode="messages")]
    assert "".join(p.text for p in parts if isinstance(p, AIMessage)) == "Final answer."
    assert any("SUMMARY-TEXT" in p.text for p in parts if isinstance(p, HumanMessage))
