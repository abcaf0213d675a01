"""The peers' trimmers (LangChain's ``trim_messages``, LlamaIndex's ``Memory``) for ``09_prompt_caching``.

They are stateless functions over chat-shaped dicts, as the cache simulator calls them.
Each wrapper converts the request to the framework's messages, trims with the
framework's own code, and maps what it kept back to the original dicts by id.
"""

from __future__ import annotations

from typing import Any

from tokenbox_core.tokens import count_message_tokens, get_counter

COUNTER = get_counter("o200k_base")


def langchain_trim(budget: int):
    """LangChain's ``trim_messages(strategy="last", include_system=True, start_on="human")``."""
    from langchain_core.messages import convert_to_messages, convert_to_openai_messages, trim_messages

    def count(messages: list[Any]) -> int:
        return count_message_tokens(convert_to_openai_messages(messages), COUNTER)

    def trim(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        by_id = {m["id"]: m for m in messages}
        lc = convert_to_messages([{k: v for k, v in m.items() if k != "name"} for m in messages])
        kept = trim_messages(
            lc, max_tokens=budget, token_counter=count, strategy="last", include_system=True, start_on="human"
        )
        return [by_id[m.id] for m in kept]

    return trim


class LlamaIndexMemory:
    """LlamaIndex's ``Memory`` (token_limit, default chat-history ratio and flush size), fed turn by turn."""

    def __init__(self, budget: int) -> None:
        from llama_index.core.memory import Memory

        self.memory = Memory.from_defaults(session_id="bench", token_limit=budget)
        self.put = 0
        self.system: dict[str, Any] | None = None

    def __call__(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from llama_index.core.llms import ChatMessage

        by_id = {m["id"]: m for m in messages}
        for m in messages[self.put :]:
            if m["role"] == "system":
                self.system = m
                continue
            extra: dict[str, Any] = {"tb_id": m["id"]}
            if m.get("tool_calls"):
                extra["tool_calls"] = m["tool_calls"]
            if m.get("tool_call_id"):
                extra["tool_call_id"] = m["tool_call_id"]
            self.memory.put(ChatMessage(role=m["role"], content=m.get("content") or "", additional_kwargs=extra))
        self.put = len(messages)
        kept = [by_id[m.additional_kwargs["tb_id"]] for m in self.memory.get()]
        return ([self.system] if self.system else []) + kept
