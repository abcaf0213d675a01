"""Every fix an error message names exists: each keyword argument a raise site tells the user to pass is a
parameter (or field) of a public callable of the packages, and ``on_invalid='repair'``, named by the conversation
errors, is taken by every LangChain entry point those errors reach (issue 36 item 4)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from tokenbox_core.errors import ConversationError, ConversationRepairWarning
from tokenbox_langchain import TokenBoxMessages, TokenBoxMiddleware, trim_messages
from tokenbox_langchain.testing import FakeToolModel, lookup_tool

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tokenbox_core", "tokenbox_langchain", "tokenbox_llamaindex")
_HINT = re.compile(r"(?:pass|use|set|or|with|give it|e\.g\.)\s+(?:[A-Za-z_.]+\()?([a-z_][a-z0-9_]*)=(?!=)")


def _hints() -> list[tuple[str, int, str]]:
    """(file, line, argument) for every ``pass name=`` style hint in a string of a ``raise`` statement or of a
    call building a message (a validation problem's fix is written apart from its raise)."""
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Raise) and node.exc is not None:
                    body: ast.AST = node.exc
                elif isinstance(node, ast.Call) and not isinstance(node.func, ast.Attribute):
                    body = node
                else:
                    continue
                text = "".join(
                    n.value for n in ast.walk(body) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                )
                out += [(str(path.relative_to(ROOT)), node.lineno, name) for name in _HINT.findall(text)]
    return out


def _parameters(files: set[str]) -> set[str]:
    """Every parameter and field name of the packages' public callables (their ``__all__``, subpackages too) and
    of the callables the hinting ``files`` define (the class or function a message points to)."""
    objects: list[object] = []
    modules = [importlib.import_module(p) for p in PACKAGES]
    for sub in sorted((ROOT / "tokenbox_core").iterdir()):
        if sub.is_dir() and (sub / "__init__.py").exists() and not sub.name.startswith("_"):
            modules.append(importlib.import_module(f"tokenbox_core.{sub.name}"))
    for module in modules:
        objects += [getattr(module, attr, None) for attr in getattr(module, "__all__", ())]
    for f in sorted(files):
        module = importlib.import_module(f.removesuffix(".py").removesuffix("/__init__").replace("/", "."))
        objects += [
            o for o in vars(module).values() if callable(o) and getattr(o, "__module__", None) == module.__name__
        ]
    names: set[str] = set()
    for obj in objects:
        targets = [obj]
        if inspect.isclass(obj):
            targets += [getattr(obj, m) for m in dir(obj) if not m.startswith("_") and callable(getattr(obj, m))]
            names.update(getattr(obj, "model_fields", None) or {})
            if dataclasses.is_dataclass(obj):
                names.update(f.name for f in dataclasses.fields(obj))
        for target in targets:
            try:
                names.update(inspect.signature(target).parameters)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
    return names


def test_every_hinted_argument_exists() -> None:
    """Each argument an error tells the user to pass is a parameter of some public callable."""
    hints = _hints()
    assert any(name == "on_invalid" for _, _, name in hints)
    known = _parameters({f for f, _, _ in hints})
    missing = [f"{f}:{line} names {name}=" for f, line, name in hints if name not in known]
    assert missing == []


def _orphan() -> list:
    return [SystemMessage("sys"), HumanMessage("task", id="task"), ToolMessage("lost", tool_call_id="nowhere", id="t")]


def test_trim_messages_and_tokenbox_messages_take_on_invalid() -> None:
    """The conversation error names on_invalid='repair'; trim_messages and TokenBoxMessages take it."""
    with pytest.raises(ConversationError, match="on_invalid='repair'"):
        trim_messages(_orphan(), max_tokens=500, token_counter="o200k_base")
    with pytest.warns(ConversationRepairWarning, match="dropped the tool result at 2"):
        kept = trim_messages(_orphan(), max_tokens=500, token_counter="o200k_base", on_invalid="repair")
    assert [m.id for m in kept] == [None, "task"]
    with pytest.raises(ConversationError, match="on_invalid='repair'"):
        TokenBoxMessages(budget=500).invoke(_orphan())
    with pytest.warns(ConversationRepairWarning, match="dropped the tool result at 2"):
        repaired = TokenBoxMessages(budget=500, on_invalid="repair").invoke(_orphan())
    assert [m.id for m in repaired] == [None, "task"]


def test_an_unanswered_call_is_closed_by_repair() -> None:
    """repair removes an unanswered call from its message (a copy), keeping the rest of the caller's objects."""
    call = {"name": "lookup", "args": {}, "id": "c1", "type": "tool_call"}
    messages = [HumanMessage("task", id="task"), AIMessage("thinking", tool_calls=[call], id="a")]
    with pytest.warns(ConversationRepairWarning, match="removed unanswered tool call c1 from message 1"):
        kept = trim_messages(messages, max_tokens=500, token_counter="o200k_base", on_invalid="repair")
    assert kept[0] is messages[0] and kept[1].id == "a" and kept[1].tool_calls == []


def test_the_middleware_takes_on_invalid() -> None:
    """TokenBoxMiddleware(on_invalid='repair') leaves an orphan result out of the request."""
    model = FakeToolModel(steps=1)
    agent = create_agent(model, [lookup_tool()], middleware=[TokenBoxMiddleware(2_000, on_invalid="repair")])
    with pytest.warns(ConversationRepairWarning, match="dropped the tool result at 1"):
        agent.invoke({"messages": [HumanMessage("task", id="task"), ToolMessage("x", tool_call_id="nowhere", id="t")]})
    assert all(m.id != "t" for m in model.requests[0])
    with pytest.raises(ConversationError, match="on_invalid='repair'"):
        create_agent(FakeToolModel(steps=1), [lookup_tool()], middleware=[TokenBoxMiddleware(2_000)]).invoke(
            {"messages": [HumanMessage("task", id="task"), ToolMessage("x", tool_call_id="nowhere", id="t")]}
        )
