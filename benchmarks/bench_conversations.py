"""Conversation benchmark: TokenBox's LangChain trimmers against LangChain's own ``trim_messages``.

2,000 messages (a system message, then alternating human and AI turns of prose, about 180k tokens as counted),
trimmed into 8k and 64k with ``strategy="last"``, ``include_system=True``, ``start_on="human"``.  All three
count with the same exact counter, a function over a list of messages (4 tokens per message plus tiktoken's
o200k count of its text), a new function object each trial:

- ``langchain``: ``langchain_core.messages.trim_messages`` (the peer);
- ``tokenbox trim``: ``tokenbox_langchain.trim_messages``, same arguments;
- ``TokenBoxMessages``: the Runnable (``TokenBoxMessages(budget=..., counter=...).invoke(messages)``).

``cold``: a history no one has seen; ``warm``: the same history plus one new message, right after a run over
the history (what a chat pays per turn).  A last row runs ``TokenBoxMessages`` with its own chat counter
(``counter="o200k_base"``: exact chat overhead, names, tool-call payloads) for reference; it is not the same
counter as the peer's.

Run: ``python benchmarks/bench_conversations.py [--baseline PATH] [--rounds N] [--trials N]``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

from _prose import paragraphs
from _timing import Measured, Prepare, Row, main, tiktoken_encoding, trials
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages import trim_messages as langchain_trim

from tokenbox_langchain import TokenBoxMessages, trim_messages

MESSAGES = 2_000
BUDGETS = (8_000, 64_000)
_runs = itertools.count()


def history(source: list[str]) -> list[BaseMessage]:
    """A new conversation: every text carries this run's nonce."""
    nonce, rng = f"[run {next(_runs)}] ", random.Random(11)
    out: list[BaseMessage] = [SystemMessage(nonce + "You are a careful assistant. Answer briefly and cite sources.")]
    for i in range(MESSAGES - 1):
        start = rng.randrange(len(source) - 3)
        text = nonce + " ".join(source[start : start + 3])[: rng.randint(220, 480)]
        out.append(HumanMessage(text, id=f"h{i}") if i % 2 == 0 else AIMessage(text, id=f"a{i}"))
    return out


def list_counter() -> Callable[[list[BaseMessage]], int]:
    """The exact counter all three share (a new object each time, so nothing keyed on it survives a trial)."""
    encoding = tiktoken_encoding()

    def count(messages: list[BaseMessage]) -> int:
        return sum(4 + len(encoding.encode_ordinary(str(m.content))) for m in messages)

    return count


TRIM = {"strategy": "last", "include_system": True, "start_on": "human"}


def _trimmer(who: str, budget: int) -> Callable[[list[BaseMessage]], Any]:
    """One trimmer with a fresh counter: a callable over a message list."""
    count = list_counter()
    if who == "langchain":
        return lambda ms: langchain_trim(ms, max_tokens=budget, token_counter=count, **TRIM)
    if who == "tokenbox trim":
        return lambda ms: trim_messages(ms, max_tokens=budget, token_counter=count, **TRIM)
    if who == "TokenBoxMessages":
        return TokenBoxMessages(budget=budget, counter=count).invoke
    return TokenBoxMessages(budget=budget, counter="o200k_base").invoke  # its own chat counter


WHO = ("langchain", "tokenbox trim", "TokenBoxMessages", "TokenBoxMessages (o200k_base)")


def measure(n: int) -> Measured:
    source = paragraphs(1_000_000)
    _trimmer("tokenbox trim", 8_000)(history(source)[:50])  # load encodings and imports, untimed

    def case(who: str, budget: int, warm: bool) -> Prepare:
        def prepare() -> Callable[[], Any]:
            messages, trim = history(source), _trimmer(who, budget)
            if not warm:
                return lambda: trim(messages)
            trim(messages)
            grown = [*messages, HumanMessage("And one more question about the sources?", id="new")]
            return lambda: trim(grown)

        return prepare

    cases = {
        f"{who} {budget // 1000}k {phase}": case(who, budget, phase == "warm")
        for budget in BUDGETS
        for phase in ("cold", "warm")
        for who in WHO
    }
    values: dict[str, Any] = {}
    messages = history(source)
    values["history tokens (the list counter)"] = list_counter()(messages)
    for budget in BUDGETS:
        kept = {who: len(_trimmer(who, budget)(messages)) for who in WHO}
        values[f"messages kept at {budget // 1000}k"] = ", ".join(f"{who} {k}" for who, k in kept.items())
    return Measured(trials(cases, n), values)


ROWS = tuple(
    Row(f"{who} {budget // 1000}k {phase}", None if who == "langchain" else f"langchain {budget // 1000}k {phase}")
    for budget in BUDGETS
    for phase in ("cold", "warm")
    for who in WHO
)

if __name__ == "__main__":
    main("bench_conversations: 2,000 messages into 8k and 64k, vs LangChain's trim_messages", measure, ROWS)
