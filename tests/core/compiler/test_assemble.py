"""Assemble: canonical order, §6.5 instruction hierarchy, conversation through the core engine."""

from __future__ import annotations

from typing import Any

import pytest

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler._build import LABELS, PRECEDENCE_STATEMENT


def agent_loop() -> list[dict[str, Any]]:
    """An older exchange with a tool call, then the latest user turn and a tool call in flight."""
    call = {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"id": "1"}'}}
    call2 = {"id": "c2", "type": "function", "function": {"name": "refund", "arguments": '{"id": "1"}'}}
    return [
        {"role": "user", "content": "Where is order 1? " + "please " * 30},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped " * 30},
        {"role": "assistant", "content": "It shipped."},
        {"role": "user", "content": "Refund it."},
        {"role": "assistant", "content": "", "tool_calls": [call2]},
        {"role": "tool", "tool_call_id": "c2", "content": "refund issued"},
    ]


def test_hierarchy_is_encoded_structurally() -> None:
    """System policy first with the precedence statement; developer marked subordinate; evidence as data; the user's
    message as the user wrote it (issue 26: the hierarchy is stated in the system tier, not in the user's turn)."""
    from .conftest import evidence

    compiled = ContextCompiler(3000).compile(
        policy="Be safe.", developer="Be brief.", evidence=[evidence("e", "A fact.")], user="Hi"
    )
    system, developer, ev, user = compiled.messages
    assert system == {"role": "system", "content": f"Be safe.\n\n{PRECEDENCE_STATEMENT}"}
    assert developer["role"] == "system" and developer["content"].startswith(LABELS["developer"])
    assert ev["role"] == "user" and ev["content"].startswith(LABELS["evidence"])
    assert user == {"role": "user", "content": "Hi"}
    assert "user" in PRECEDENCE_STATEMENT and "system-level" in PRECEDENCE_STATEMENT


def test_developer_role_and_no_precedence_statement() -> None:
    """developer_role='developer' and precedence_statement=False are honoured."""
    config = CompilerConfig(developer_role="developer", precedence_statement=False)
    compiled = ContextCompiler(3000, config=config).compile(policy="Be safe.", developer="Be brief.")
    assert compiled.messages[0]["content"] == "Be safe."
    assert compiled.messages[1]["role"] == "developer"


def test_the_user_message_is_sent_as_written() -> None:
    """The current user message is not rewritten (the hierarchy is stated in the system message)."""
    compiled = ContextCompiler(3000).compile(policy="Be safe.", user="Hi")
    assert compiled.messages[-1] == {"role": "user", "content": "Hi"}


def test_tool_groups_stay_whole_and_the_agent_loop_is_kept() -> None:
    """Under pressure the old tool call and its result leave together; the loop after the user turn stays."""
    compiler = ContextCompiler(160, config=CompilerConfig(constraint_density_limit=None))
    full = ContextCompiler(3000).compile(policy="P", history=agent_loop())
    assert [m["role"] for m in full.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    tight = compiler.compile(policy="P", history=agent_loop())
    roles = [m["role"] for m in tight.messages]
    assert roles[-3:] == ["user", "assistant", "tool"]
    assert tight.messages[-1] == {"role": "tool", "tool_call_id": "c2", "content": "refund issued"}
    kept_ids = {m.get("tool_call_id") for m in tight.messages}
    calls = {c["id"] for m in tight.messages for c in m.get("tool_calls") or ()}
    assert kept_ids - {None} == calls  # never a call without its result, or a result without its call
    assert roles[1] == "user"  # the trimmed history restarts on a user turn
    assert tight.total_tokens <= 160 < full.total_tokens
    reasons = [(x.item_id, x.reason) for x in tight.excluded]
    assert reasons == [("m0", "compress:budget"), ("m1", "start_on"), ("m2", "start_on"), ("m3", "start_on")]


def test_text_output_renders_the_conversation_block() -> None:
    """Text output: one CONVERSATION block of role: content lines, tool calls written out."""
    compiled = ContextCompiler(3000, config=CompilerConfig(output="text")).compile(policy="P", history=agent_loop())
    block = compiled.text.split("## CONVERSATION\n", 1)[1]
    assert block.splitlines()[1] == 'assistant: [tool call lookup_order({"id": "1"})]'
    assert block.splitlines()[2].startswith("tool[c1]: shipped")


def test_headers_can_be_switched() -> None:
    """headers=True puts headers in text output; headers=False leaves only the labels."""
    on = ContextCompiler(3000, config=CompilerConfig(output="text", headers=True)).compile(policy="P", developer="D")
    off = ContextCompiler(3000, config=CompilerConfig(output="text", headers=False)).compile(policy="P", developer="D")
    assert on.text.startswith("## SYSTEM_POLICY\nP")
    assert off.text.startswith("P") and "##" not in off.text and LABELS["developer"] in off.text


def test_tools_as_schemas_travel_beside_the_messages_and_are_counted_once() -> None:
    """tools_as='schemas': no tool JSON in the messages, CompiledContext.tools holds the OpenAI tool dicts, and the
    total counts them once, as their canonical JSON (issue 26 item 3)."""
    from tokenbox_core import count_message_tokens, get_counter
    from tokenbox_core.compiler import Tool
    from tokenbox_core.tokens import canonical_json

    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    tools = [Tool("lookup_order", "Look up an order by id", schema)]
    as_text = ContextCompiler(3000).compile(policy="Be safe.", tools=tools, user="Where is order 7?")
    config = CompilerConfig(tools_as="schemas")
    as_schemas = ContextCompiler(3000, config=config).compile(policy="Be safe.", tools=tools, user="Where is order 7?")
    assert any(LABELS["tools"] in m["content"] for m in as_text.messages) and as_text.tools == ()
    assert not any("lookup_order" in str(m["content"]) for m in as_schemas.messages)
    function = {"name": "lookup_order", "description": "Look up an order by id", "parameters": schema}
    assert as_schemas.tools == ({"type": "function", "function": function},)
    counter = get_counter("o200k_base")
    sent = count_message_tokens(list(as_schemas.messages), counter)
    assert as_schemas.total_tokens == sent + counter.count(canonical_json(function))
    assert as_schemas.total_tokens < as_text.total_tokens  # no label, no message: the schemas are not paid twice
    without = ContextCompiler(3000, config=config).compile(policy="Be safe.", user="Where is order 7?")
    assert as_schemas.messages == without.messages and as_schemas.fingerprint != without.fingerprint


def test_tools_as_is_checked_at_construction() -> None:
    """An unknown tools_as is a CompilerInputError naming both choices."""
    from tokenbox_core.errors import CompilerInputError

    with pytest.raises(CompilerInputError, match=r"tools_as must be 'text' .* or 'schemas' .*, got 'json'"):
        CompilerConfig(tools_as="json")  # type: ignore[arg-type]
