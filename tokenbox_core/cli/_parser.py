"""The ``tokenbox`` command line: argparse, with usage errors raised instead of printed."""

from __future__ import annotations

import argparse
import os
from typing import NoReturn

from tokenbox_core import __version__

__all__ = ["UsageError", "build_parser"]


class UsageError(Exception):
    """A command line that argparse or a command rejected."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def _jobs(text: str) -> int:
    if text == "auto":
        return os.cpu_count() or 1
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tokenbox",
        description="Deterministic context layout for LLM applications: typed sections, exact token budgets, "
        "a trace of every decision.",
        epilog="Start with: tokenbox demo",
    )
    parser.add_argument("--version", action="version", version=f"tokenbox {__version__}")
    parser.add_argument(
        "--verbose",
        "-v",
        action="count",
        default=0,
        help="also show a one-line summary of every layout (the tokenbox logger at DEBUG); warnings about "
        "fallbacks are always shown",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = commands.add_parser(
        "demo",
        help="lay out a built-in agent context into an 8k gpt-4o budget and explain it",
        description="Lay out a realistic built-in agent context (system policy, tool schemas, memories, 20 "
        "retrieved documents, a 64-message history with tool calls, a scratchpad, the task) into a gpt-4o "
        "budget, offline, and print the explain table.",
    )
    demo.add_argument(
        "--budget",
        type=_positive_int,
        default=8192,
        metavar="N",
        help="window size in tokens (default 8192; 1,024 are reserved for the answer)",
    )
    demo.add_argument("--json", action="store_true", help="print the layout as JSON instead of the table")
    demo.add_argument("--messages", action="store_true", help="print the laid-out chat messages as JSON")
    demo.add_argument("--html", metavar="FILE", help="also write the visual HTML report to FILE")
    demo.add_argument("--all", action="store_true", help="list every removed item (default: the first few lines)")

    layout = commands.add_parser(
        "layout",
        help="lay out a JSON or TOML spec of sections and a budget",
        description="Lay out the sections of a spec file (JSON or TOML; the format is documented in "
        "tokenbox_core.spec and `tokenbox schema` prints its JSON Schema) and print the explain table. A .jsonl "
        "file holds one JSON spec per line: they are laid out in parallel (--jobs) and printed in input order, one "
        "line each, with a summary; a bad line is reported with its number and the others are still laid out.",
    )
    layout.add_argument("spec", metavar="SPEC", help="a .json or .toml spec, or a .jsonl file of specs")
    layout.add_argument("--json", action="store_true", help="print the layout as JSON (batch: one object per line)")
    layout.add_argument("--html", metavar="FILE", help="also write the visual HTML report to FILE (one spec only)")
    layout.add_argument("--all", action="store_true", help="list every removed item (default: the first few lines)")
    layout.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=1,
        metavar="N",
        help="worker processes for a batch (default 1; 'auto' = one per CPU)",
    )
    layout.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="batch engine: local processes (default) or Ray Data (extra 'ray'; --jobs = workers)",
    )
    layout.add_argument("--address", metavar="ADDR", help="with --engine ray: a Ray cluster (ray://host:10001)")
    layout.add_argument("--batch", action="store_true", help="read SPEC as JSON lines whatever its extension")

    count = commands.add_parser(
        "count",
        help="count tokens in files or stdin",
        description="Count tokens in each FILE (read as strict UTF-8) or in stdin when no FILE or '-' is given.",
    )
    count.add_argument("files", nargs="*", metavar="FILE", help="files to count; '-' or nothing reads stdin")
    count.add_argument(
        "--model",
        "-m",
        default="gpt-4o",
        help="model, tiktoken encoding, or bytes/approximate/whitespace (default gpt-4o; unknown "
        "models count with cl100k_base)",
    )
    count.add_argument("--json", action="store_true", help="print the counts as JSON")

    budget = commands.add_parser(
        "budget",
        help="how many tokens remain for memory beside a conversation",
        description="The token budget calculator: window minus response reserve (15%, 500-4,096), a 5% safety "
        "buffer, the directive and the messages with their chat overhead. Unknown models use an 8,192-token "
        "window.",
    )
    budget.add_argument("--model", "-m", required=True, help="model name, e.g. gpt-4o")
    budget.add_argument(
        "--messages", required=True, metavar="FILE", help="a JSON list of {role, content} messages ('-' for stdin)"
    )
    budget.add_argument("--directive", default="", help="directive text that must also fit")
    budget.add_argument("--json", action="store_true", help="print the budget as JSON")

    diff = commands.add_parser(
        "diff",
        help="compare the layouts of two specs",
        description="Lay out two specs and show sections and items added, removed and changed, token deltas "
        "and the utilisation of each (for example two turns of one conversation).",
    )
    diff.add_argument("a", metavar="A", help="the first spec (JSON or TOML)")
    diff.add_argument("b", metavar="B", help="the second spec")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    diff.add_argument("--html", metavar="FILE", help="also write the diff as HTML to FILE")

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of the spec format",
        description="Print the JSON Schema of the layout spec format (--compile: of the compile spec format). Save "
        "it (tokenbox schema > tokenbox-spec.schema.json) and point your editor at it, or name it in a spec's "
        '"$schema" key, for completion and checking while you write specs.',
    )
    schema.add_argument("--compile", action="store_true", help="the compile spec format (tokenbox compile)")
    from tokenbox_core.compiler._command import add_compile_command  # compiler hook (ported at the media merge)

    add_compile_command(commands)  # `tokenbox compile SPEC` lives in tokenbox_core.compiler._command
    from tokenbox_core.cache._command import add_command as add_cache_sim  # `tokenbox cache-sim` (issue 15)

    add_cache_sim(commands)
    from tokenbox_core.session._command import add_command as add_session  # `tokenbox session` (issue 23)

    add_session(commands)
    return parser
