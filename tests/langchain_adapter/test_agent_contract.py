"""The agent-adapter contract on TokenBoxMiddleware(session=...) under LangChain's ``create_agent``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr

from tests.contract.agent_contract import AgentAdapterContract, Script, Sent, call_id, chat_tokens, page_text
from tokenbox_core.tokens import canonical_json
from tokenbox_langchain import TokenBoxMiddleware
from tokenbox_langchain.testing import FakeToolModel


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] if p.get("type") == "text" else json.dumps(p) for p in content)


def sent(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> Sent:
    """What the model receives, as LangChain serialises it for an OpenAI-style provider."""
    openai = convert_to_openai_messages(messages)
    texts: list[str] = []
    user: list[str] = []
    calls: list[str] = []
    results: list[str] = []
    for m in openai:
        texts.append(_text(m.get("content") or ""))
        if m["role"] == "user":
            user.append(texts[-1])
        for c in m.get("tool_calls") or ():
            texts.append(c["function"]["name"] + c["function"]["arguments"])
            calls.append(c["id"])
        if m["role"] == "tool":
            results.append(m["tool_call_id"])
    texts += [canonical_json(t) for t in tools]
    return Sent(chat_tokens(texts, len(openai)), tuple(user), tuple(calls), tuple(results), tuple(texts))


class ScriptedToolModel(FakeToolModel):
    """FakeToolModel (it binds and records tools) answering from the contract's script."""

    _script: Any = PrivateAttr(default=None)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = list(kwargs.pop("tools", None) or ())
        last = messages[-1]
        user = _text(convert_to_openai_messages([last])[0]["content"]) if isinstance(last, HumanMessage) else None
        reply = self._script.reply(sent(messages, tools), user)
        n = len(self._script.sent)
        if isinstance(reply, str):
            return ChatResult(generations=[ChatGeneration(message=AIMessage(reply, id=f"ai-{n}"))])
        call = {"name": "read_log", "args": {"page": reply}, "id": call_id(reply), "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call], id=f"ai-{n}"))])


def read_log(page: int) -> str:
    """Read one page of the service log."""
    return page_text(page)


class TestLangChainContract(AgentAdapterContract):
    def drive(self, script: Script, store: Path, *, window: int, defense: Any = None) -> None:
        model = ScriptedToolModel()
        model._script = script
        middleware = TokenBoxMiddleware(window, session=store, session_id=self.SESSION_ID, defense=defense)
        agent = create_agent(
            model,
            [StructuredTool.from_function(read_log)],
            system_prompt="You audit service logs.",
            middleware=[middleware],
            checkpointer=InMemorySaver(),
        )
        config = {"configurable": {"thread_id": self.SESSION_ID}, "recursion_limit": 1_000}
        for k, text in enumerate(script.turns):
            agent.invoke({"messages": [HumanMessage(text, id=f"user-{k}")]}, config)
