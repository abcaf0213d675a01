"""An MCP server (stdio) exposing the session archive's ``rehydrate`` and ``search_archive`` tools (§6.10.5).

The chapter's rehydration protocol: the agent "invokes a rehydration tool (exposed as an MCP tool) with the
relevant turn IDs or topic query"; the store retrieves the original turns and the next compile includes them.
Because the archive is a SQLite file, the server and the agent's process share it: a ``rehydrate`` call here
pins the turns for the agent's next compile.

Run it with ``tokenbox-session-mcp PATH`` or ``python -m tokenbox_core.session._mcp_server PATH``; needs the
``mcp`` extra (``pip install "tokenbox-context[mcp]"``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokenbox_core.errors import TokenBoxError
from tokenbox_core.session._rehydrate import (
    REHYDRATE_DESCRIPTION,
    SEARCH_DESCRIPTION,
    format_turns,
    rehydrate,
    search_archive,
)
from tokenbox_core.session._sqlite import SQLiteSessionStore

__all__ = ["REHYDRATE_DESCRIPTION", "SEARCH_DESCRIPTION", "build_server", "main"]


def _mcp() -> tuple[Any, Any]:
    """The server class and ToolError of the installed ``mcp`` (2.x ``MCPServer`` or 1.x ``FastMCP``)."""
    for module, cls in (("mcp.server.mcpserver", "MCPServer"), ("mcp.server.fastmcp", "FastMCP")):
        try:
            server_module = importlib.import_module(module)
            errors = importlib.import_module(f"{module}.exceptions")
        except ImportError:
            continue
        return getattr(server_module, cls), errors.ToolError
    raise ImportError('the MCP server needs the "mcp" extra: pip install "tokenbox-context[mcp]"')


def build_server(path: str | Path, *, name: str = "tokenbox-session") -> Any:
    """An MCP server over the SQLite archive at ``path`` with the tools ``rehydrate`` and ``search_archive``.

    The file must exist and be a session archive (a missing path is an error, so a typo never creates an
    empty archive the agent would search in vain).
    """
    server_class, tool_error = _mcp()
    if not Path(path).is_file():
        raise FileNotFoundError(f"no session archive at {path}; pass the path of an existing SQLiteSessionStore file")
    store = SQLiteSessionStore(path)
    server = server_class(name, instructions="Archived turns of long conversations (TokenBox session archive).")

    def rehydrate_tool(session_id: str, ids: list[str] | None = None, query: str | None = None, limit: int = 5) -> str:
        if (ids is None) == (query is None):
            raise tool_error("pass exactly one of ids (a list of turn ids) or query (text)")
        try:
            target: Sequence[str] | str = ids if ids is not None else str(query)
            turns = rehydrate(store, session_id, target, limit=limit)
        except TokenBoxError as exc:
            raise tool_error(str(exc)) from exc
        return format_turns(turns) if turns else f"no archived turn matches {query!r}"

    def search_tool(session_id: str, query: str, limit: int = 5) -> str:
        try:
            turns = search_archive(store, session_id, query, limit=limit)
        except TokenBoxError as exc:
            raise tool_error(str(exc)) from exc
        return format_turns(turns) if turns else f"no archived turn matches {query!r}"

    def sessions_tool() -> str:
        return json.dumps({s: store.count(s) for s in store.sessions()}, sort_keys=True)

    server.add_tool(rehydrate_tool, name="rehydrate", description=REHYDRATE_DESCRIPTION)
    server.add_tool(search_tool, name="search_archive", description=SEARCH_DESCRIPTION)
    server.add_tool(sessions_tool, name="list_sessions", description="Session ids and their turn counts (JSON).")

    return server


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: serve the archive at PATH over stdio."""
    parser = argparse.ArgumentParser(prog="tokenbox-session-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the SQLite session archive")
    args = parser.parse_args(argv)
    try:
        server = build_server(args.path)
    except (FileNotFoundError, ImportError, TokenBoxError) as exc:
        print(f"tokenbox-session-mcp: {exc}", file=sys.stderr)
        return 2
    server.run("stdio")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
