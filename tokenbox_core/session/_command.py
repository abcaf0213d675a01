"""``tokenbox session ARCHIVE [SESSION]``: look inside a session archive (a SQLite file); it adds nothing to it.

- no session: the sessions it holds, with their message counts;
- a session: its messages as ``<id> <role>: <text>`` lines (``--last N`` for the newest only);
- ``--search QUERY``: the session's messages ranked as recall ranks them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from tokenbox_core.errors import SessionError, SessionStoreError
from tokenbox_core.session._rehydrate import search_archive
from tokenbox_core.session._sqlite import SQLiteSessionStore
from tokenbox_core.session._summarize import turn_line

__all__ = ["add_command", "run"]

HELP = "list the sessions of an archive, show a session's messages, or search them"


def add_command(commands: Any) -> argparse.ArgumentParser:
    """Register ``session`` on the command's sub-parsers."""
    p: argparse.ArgumentParser = commands.add_parser("session", help=HELP, description=HELP + ".")
    p.add_argument("archive", help="a session archive (the SQLite file a ContextSession or SQLiteSessionStore wrote)")
    p.add_argument("session", nargs="?", help="a session id (omit to list the sessions)")
    p.add_argument("--search", metavar="QUERY", help="rank the session's messages for QUERY (recall's ranking)")
    p.add_argument("--last", type=int, metavar="N", help="show only the newest N messages")
    p.add_argument("--limit", type=int, default=10, help="most search results (10)")
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    return p


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``tokenbox session``; the exit status."""
    path = Path(args.archive)
    if not path.is_file():
        raise SessionStoreError(f"{path} is not a file; give the path of a session archive")
    if args.last is not None and args.last < 1:
        raise SessionError(f"--last must be a whole number >= 1, got {args.last}; omit it to show every message")
    with SQLiteSessionStore(path, read_only=True) as store:
        if args.session is None:
            rows = [{"session": s, "messages": store.count(s)} for s in store.sessions()]
            text = json.dumps(rows) if args.json else "\n".join(f"{r['session']}\t{r['messages']}" for r in rows)
        else:
            if args.search is not None:
                turns = search_archive(store, args.session, args.search, limit=args.limit)
            else:
                turns = store.turns(args.session)
                turns = turns[-args.last :] if args.last else turns
            if args.json:
                text = json.dumps([{"id": t.turn_id, "message": dict(t.message)} for t in turns], ensure_ascii=False)
            else:
                text = "\n".join(turn_line(t.as_message()) for t in turns)
    if text:
        out.write(text + "\n")
    return 0
