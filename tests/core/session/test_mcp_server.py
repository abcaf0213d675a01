"""The session MCP server, driven by the real ``mcp`` client over stdio (issue 13 §3)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tokenbox_core.session import SQLiteSessionStore
from tokenbox_core.session._mcp_server import main

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402


def _archive(path: Path) -> None:
    with SQLiteSessionStore(path) as store:
        store.extend("agent-1", [
            {"role": "user", "content": "Validate customers.csv please"},
            {"role": "assistant", "content": "3 rows lack a postcode"},
            {"role": "user", "content": "Draft the quarterly report"},
        ])  # fmt: skip


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content)


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def _session_calls(path: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "tokenbox_core.session._mcp_server", str(path)],
                                   env=env)  # fmt: skip
    out: dict[str, Any] = {}
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            out["by_ids"] = await session.call_tool("rehydrate", {"session_id": "agent-1", "ids": ["t_2", "t_1"]})
            out["search"] = await session.call_tool("search_archive", {"session_id": "agent-1", "query": "postcode"})
            out["by_query"] = await session.call_tool("rehydrate", {"session_id": "agent-1", "query": "quarterly"})
            out["unknown"] = await session.call_tool("rehydrate", {"session_id": "agent-1", "ids": ["t_9"]})
            out["neither"] = await session.call_tool("rehydrate", {"session_id": "agent-1"})
            out["sessions"] = await session.call_tool("list_sessions", {})
    return out


def test_mcp_client_over_stdio_rehydrates_and_searches(tmp_path: Path) -> None:
    """The client lists the tools, rehydrates by ids and by query, searches, and gets clear tool errors;
    the rehydration is visible to the agent's own process through the shared SQLite file."""
    path = tmp_path / "archive.db"
    _archive(path)
    out = anyio.run(_session_calls, path)
    assert out["tools"] == ["list_sessions", "rehydrate", "search_archive"]
    assert _text(out["by_ids"]) == "t_1 user: Validate customers.csv please\nt_2 assistant: 3 rows lack a postcode"
    assert _text(out["search"]) == "t_2 assistant: 3 rows lack a postcode"
    assert _text(out["by_query"]) == "t_3 user: Draft the quarterly report"
    assert _is_error(out["unknown"]) and "t_9" in _text(out["unknown"])
    assert _is_error(out["neither"]) and "exactly one of ids" in _text(out["neither"])
    assert _text(out["sessions"]) == '{"agent-1": 3}'
    with SQLiteSessionStore(path) as store:
        assert store.take_rehydration("agent-1") == ["t_1", "t_2", "t_3"]


def test_command_line_refuses_a_missing_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A path that does not exist is refused (exit 2) instead of serving an empty new archive."""
    assert main([str(tmp_path / "typo.db")]) == 2
    assert "no session archive at" in capsys.readouterr().err
    assert not (tmp_path / "typo.db").exists()


def test_missing_mcp_extra_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the mcp package the server says which extra to install."""
    import importlib

    from tokenbox_core.session import _mcp_server as mcp_server

    real = importlib.import_module

    def no_mcp(name: str, package: str | None = None) -> object:
        if name.startswith("mcp"):
            raise ImportError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(mcp_server.importlib, "import_module", no_mcp)
    _archive(tmp_path / "a.db")
    with pytest.raises(ImportError, match=r'pip install "tokenbox-context\[mcp\]"'):
        mcp_server.build_server(tmp_path / "a.db")
