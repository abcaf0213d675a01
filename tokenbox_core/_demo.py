"""The built-in demo: an on-call agent's context after 15 exchanges, laid out into an 8k gpt-4o window.

``tokenbox demo`` prints :func:`demo_layout`'s explain table, and ``tokenbox demo --messages`` the chat messages
to send (:func:`demo_messages`).  The text (policy, task, tool schemas, documents, memories) is package data
(``demo_data.json``); the history, logs and metrics come from small generators here.  No network, no
randomness: the demo is byte-for-byte the same on every machine.

The context (declaration order = output order, chat-message mode):

===============  ==========================================================================
``policy``       system policy; critical (``shrink=0``)
``tools``        8 tool schemas as pretty JSON; ``json_minify`` lens; lost last (priority 4)
``memory``       3 summaries of earlier sessions (list, oldest first, role user: data, not
                 instructions); priority 3
``documents``    20 retrieved documents with scores (list, lowest score first, role user);
                 claims a ``basis`` of about 5 documents and ``grow``\\s into free space; priority 2
``history``      64 OpenAI-shaped messages with structured tool calls, laid out by the
                 conversation engine (:func:`demo_conversation`): each tool call and its
                 results are one atomic group, evicted oldest first, and a cut history
                 restarts on a user message; priority 1
``scratchpad``   the agent's working notes from the previous turn; lost first (priority 0)
``task``         the current request; critical
===============  ==========================================================================

The budget is a :class:`~tokenbox_core._budget.ContextBudget` of 8,192 tokens
with 1,024 reserved for the answer.  At that size the oldest history is
evicted, the documents stay at their basis and the scratchpad is cut to the
room whole tool groups leave; give the demo more room
(``tokenbox demo --budget 16384``) and the documents expand, give it much less
(``--budget 2400``) and the tool schemas are compressed.

>>> layout = demo_layout()
>>> layout.total_tokens <= layout.max_tokens, layout["policy"].status, layout["history"].status
(True, 'kept', 'truncated')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core._sections import Item, Section
from tokenbox_core.box import TokenBox
from tokenbox_core.chat import ConversationSections, conversation_sections
from tokenbox_core.layout import Layout

__all__ = [
    "DEMO_MAX_TOKENS",
    "DEMO_MODEL",
    "DEMO_OUTPUT_RESERVE",
    "demo_box",
    "demo_budget",
    "demo_conversation",
    "demo_layout",
    "demo_messages",
    "demo_sections",
    "documents",
    "history",
    "memories",
    "policy",
    "scratchpad",
    "task",
    "tool_schemas",
]

DEMO_MODEL = "gpt-4o"
DEMO_MAX_TOKENS = 8_192
DEMO_OUTPUT_RESERVE = 1_024

# --------------------------------------------------------------------------- data


def _data() -> dict[str, Any]:
    """The demo's text (policy, task, tool schemas, documents, memories), shipped as package data."""
    text = resources.files("tokenbox_core").joinpath("demo_data.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def policy() -> str:
    """The agent's system policy (critical)."""
    return str(_data()["policy"])


def task() -> str:
    """The current request (critical)."""
    return str(_data()["task"])


def tool_schemas() -> list[dict[str, Any]]:
    """The eight tool schemas in OpenAI's function-calling format."""
    out = []
    for tool in _data()["tools"]:
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": {"type": "object", "properties": tool["parameters"], "required": tool["required"]},
                },
            }
        )
    return out


# --------------------------------------------------------------------------- retrieved documents


def _document_score(rank: int) -> float:
    """Retrieval scores falling with rank, with the small irregularities real rankers show."""
    wobble = (0.0, 0.012, -0.006, 0.004, -0.01)[rank % 5]
    return round(0.93 - 0.031 * rank + wobble, 3)


def documents() -> list[Item]:
    """Twenty retrieved documents in ranked order, each with a score."""
    out = []
    for rank, document in enumerate(_data()["documents"]):
        kind, title, facts = document["kind"], document["title"], document["facts"]
        doc_id = f"doc-{rank + 1:02d}"
        score = _document_score(rank)
        out.append(
            Item(
                id=doc_id,
                content=f"[{doc_id} · {kind} · score {score:.3f}] {title}\n{facts}",
                kind="Document",
                score=score,
                source=f"kb://{kind}/{doc_id}",
            )
        )
    return out


# --------------------------------------------------------------------------- history

# One exchange: the user's message, the tool calls (name, arguments, result) and the assistant's answer.
_Exchange = tuple[str, list[tuple[str, dict[str, Any], str]], str]

_SERVICES = ("checkout-api", "payments-gateway", "fraud-scorer", "ledger-writer", "notifications")


def _log_lines(service: str, start_minute: int, n: int, kind: str) -> str:
    """Deterministic, realistic-looking structured log lines."""
    routes = ("/v2/checkout", "/v2/checkout/confirm", "/v2/cart", "/v2/checkout/address")
    lines = []
    for i in range(n):
        minute = start_minute + i
        route = routes[(i * 3 + start_minute) % len(routes)]
        latency = 180 + ((i * 7919 + start_minute * 104729) % 2300)
        status = 504 if kind == "error" and i % 3 == 0 else 200
        lines.append(
            f'{{"ts":"13:{minute % 60:02d}:{(i * 17) % 60:02d}Z","svc":"{service}","route":"{route}",'
            f'"status":{status},"latency_ms":{latency},"trace":"{(i * 2654435761 + minute) % 16**8:08x}"}}'
        )
    return "\n".join(lines)


def _metric_series(metric: str, base: int, step: int, n: int) -> str:
    points = [base + step * i + ((i * 37) % 11) * (step // 3 + 1) for i in range(n)]
    return json.dumps({"metric": metric, "unit": "ms", "per_minute": points}, separators=(",", ":"))


def _exchanges() -> list[_Exchange]:
    """Fifteen exchanges of an investigation: 4 messages each, plus a result per extra parallel call (64 in all)."""
    out: list[_Exchange] = [
        (
            "Morning. Anything odd on checkout-api overnight?",
            [
                (
                    "get_metrics",
                    {"service": "checkout-api", "metric": "http_latency_ms", "window": "12h", "percentile": 99},
                    _metric_series("checkout-api p99", 310, 4, 24),
                )
            ],
            "Quiet night: p99 stayed between 310 and 420 ms, well under the 800 ms threshold [call-01].",
        ),
        (
            "Good. What changed in checkout-api this week?",
            [
                (
                    "list_deployments",
                    {"service": "checkout-api", "since": "7d"},
                    "4.21  mon 10:02  a.kowalski  outbound latency panels\n"
                    "4.22  wed 09:40  r.osei      structured JSON logging, route labels\n"
                    "4.23  today 11:15  m.lindqvist  address validation via geo-service (flag checkout.address_v2)",
                )
            ],
            "Three releases: 4.21 (dashboards), 4.22 (logging), 4.23 today (address validation behind "
            "checkout.address_v2) [call-02].",
        ),
    ]
    services = _SERVICES
    for k in range(13):
        service = services[k % len(services)]
        minute = 5 + k * 4
        if k % 3 == 0:
            user = f"Can you pull the error logs for {service} around 13:{minute:02d}?"
            calls = [
                (
                    "query_logs",
                    {"service": service, "query": "level:error", "since": f"13:{minute:02d}Z", "limit": 12},
                    _log_lines(service, minute, 12, "error"),
                )
            ]
            answer = (
                f"{service}: a handful of 504s around 13:{minute:02d}, all on checkout routes, latency "
                f"spread wide; no single trace dominates. Nothing conclusive yet."
            )
        elif k % 3 == 1:
            user = f"Compare db_pool_wait_ms and outbound geo-service latency for {service}, last 30 minutes."
            calls = [
                (
                    "get_metrics",
                    {"service": service, "metric": "db_pool_wait_ms", "window": "30m"},
                    _metric_series(f"{service} db_pool_wait_ms", 8 + k, 1, 30),
                ),
                (
                    "get_metrics",
                    {
                        "service": service,
                        "metric": "outbound_latency_ms.geo-service",
                        "window": "30m",
                        "percentile": 99,
                    },
                    _metric_series(f"{service} geo-service p99", 400 + 60 * k, 45, 30),
                ),
            ]
            answer = (
                f"Pool wait for {service} is flat at {8 + k}-{24 + k} ms, so the database is not the "
                f"bottleneck this time. Outbound geo-service p99 climbs steadily from {400 + 60 * k} ms."
            )
        else:
            user = f"Search the runbooks for anything about {service} and slow downstream dependencies."
            calls = [
                (
                    "search_runbooks",
                    {"query": f"{service} slow downstream dependency timeout", "limit": 3},
                    "1. Runbook: checkout-api high latency (0.81)\n2. INC-2140 geo-service timeouts (0.77)\n"
                    "3. HTTP client timeouts in the checkout codebase (0.74)\n"
                    "Snippet: callers of geo-service must set a 300 ms timeout and a fallback; the default "
                    "client timeout is 10,000 ms.",
                )
            ]
            answer = (
                "The runbook and INC-2140 both point at missing timeouts on synchronous calls to "
                "geo-service; the default client timeout is 10 s."
            )
        out.append((user, calls, answer))
    return out


def history() -> list[dict[str, Any]]:
    """Sixty-four chat messages in OpenAI's shape: each exchange is the user's question, an assistant message
    with structured ``tool_calls``, one ``tool`` result per call (answering it by ``tool_call_id``) and the
    answer.  Each message is named by the reserved ``"tokenbox"`` option (``t03-call``, ``t03-result-1`` …),
    which the conversation engine reads and never sends."""
    messages: list[dict[str, Any]] = []
    for n, (user, calls, answer) in enumerate(_exchanges(), start=1):
        turn = f"t{n:02d}"
        messages.append({"role": "user", "content": user, "tokenbox": {"id": f"{turn}-user"}})
        tool_calls = [
            {
                "id": f"call-{n:02d}.{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, separators=(",", ":"))},
            }
            for i, (name, args, _) in enumerate(calls, 1)
        ]
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": tool_calls, "tokenbox": {"id": f"{turn}-call"}}
        )
        for i, (_, _, result) in enumerate(calls, 1):
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": f"call-{n:02d}.{i}",
                    "content": result,
                    "tokenbox": {"id": f"{turn}-result-{i}"},
                }
            )
        messages.append({"role": "assistant", "content": answer, "tokenbox": {"id": f"{turn}-answer"}})
    return messages


def demo_conversation() -> ConversationSections:
    """The history as the conversation engine lays it out: one ``history`` section evicted oldest first, each
    tool call with its results as one atomic group, restarted on a user message after a cut, with a user-role
    omission marker (a system message may not stand inside a conversation)."""
    return conversation_sections(
        history(),
        counter=DEMO_MODEL,
        keep_last=None,  # the current request is the task section, after the scratchpad
        start_on="user",
        omission_marker="[{count} earlier messages omitted: {ids}]",
        marker_role="user",
        history_priority=1,
    )


# --------------------------------------------------------------------------- memory and scratchpad


def memories() -> list[Item]:
    """Three summaries of earlier sessions, oldest first (data, not instructions: the section's role is user)."""
    return [Item(id=m["id"], content=m["text"], kind="Memory") for m in _data()["memories"]]


def scratchpad() -> str:
    """The agent's working notes from the previous turn (long, low value once the answer was given)."""
    notes = ["Working notes (previous turn):"]
    for k, service in enumerate(_SERVICES * 3):
        notes.append(
            f"- hypothesis {k + 1}: {service} contributes to checkout p99? checked "
            f"{('latency', 'error rate', 'pool wait', 'deploys')[k % 4]}; result "
            f"{('inconclusive', 'ruled out', 'weak signal', 'needs follow-up')[(k * 3) % 4]}; "
            f"next look at {('traces', 'logs', 'dashboards')[k % 3]} between 13:{(k * 7) % 60:02d} and "
            f"13:{(k * 7 + 9) % 60:02d} UTC."
        )
    return "\n".join(notes)


# --------------------------------------------------------------------------- the layout


def demo_sections(conversation: ConversationSections | None = None) -> list[Section]:
    """The demo's sections, in output order; the history is ``conversation``'s (a new
    :func:`demo_conversation` when none is given)."""
    conversation = demo_conversation() if conversation is None else conversation
    return [
        Section("policy", policy(), role="system"),
        Section(
            "tools",
            json.dumps(tool_schemas(), indent=2),
            role="system",
            priority=4,
            shrink=0.5,
            strategy=("json_minify",),
        ),
        Section("memory", memories(), role="user", priority=3, shrink=1, eviction="oldest"),
        Section(
            "documents",
            documents(),
            role="user",
            priority=2,
            shrink=1,
            basis=600,
            grow=1,
            eviction="lowest_score",
            omission_marker="[{count} lower-scoring documents omitted: {ids}]",
        ),
        *conversation.sections,
        Section("scratchpad", scratchpad(), role="assistant", priority=0, shrink=2, min_tokens=120),
        Section("task", task(), role="user"),
    ]


def demo_budget(max_tokens: int = DEMO_MAX_TOKENS) -> ContextBudget:
    """An 8k window by default, with room reserved for the answer."""
    return ContextBudget(max_tokens=max_tokens, output_reserve=min(DEMO_OUTPUT_RESERVE, max_tokens))


def demo_box(max_tokens: int = DEMO_MAX_TOKENS) -> TokenBox:
    """A chat-message Token Box counting gpt-4o tokens (offline: o200k_base from a local copy)."""
    return TokenBox(demo_budget(max_tokens), counter=DEMO_MODEL, mode="messages")


def demo_layout(max_tokens: int = DEMO_MAX_TOKENS) -> Layout:
    """Lay out the demo context into ``max_tokens`` (8,192 by default)."""
    return demo_box(max_tokens).layout(demo_sections())


def demo_messages(max_tokens: int = DEMO_MAX_TOKENS) -> list[Mapping[str, Any]]:
    """The laid-out demo as the chat messages to send (``tokenbox demo --messages``): the history rendered by
    the conversation engine (:meth:`~tokenbox_core.chat.ConversationSections.render`), so tool calls stay
    structured with their results and a cut history starts on a user message."""
    conversation = demo_conversation()
    return conversation.render(demo_box(max_tokens).layout(demo_sections(conversation)))
