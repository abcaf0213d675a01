"""The ``tokenbox`` command.

::

    tokenbox demo                         lay out the built-in agent context into 8k gpt-4o tokens
    tokenbox layout SPEC                  lay out a JSON/TOML spec (a .jsonl file: many, in parallel)
    tokenbox count FILE... --model M      count tokens in files (or stdin)
    tokenbox budget --model M --messages FILE
                                          the memory budget left beside a conversation
    tokenbox diff A B                     what changed between the layouts of two specs
    tokenbox schema                       the JSON Schema of the spec format (for editors)

Every command has ``--help``.  Bad input (a missing file, bad JSON or TOML, an
invalid field, a negative budget, bytes that are not UTF-8, an empty spec)
prints one line, ``tokenbox: error: ...``, on stderr and exits with status 2;
in a JSON-lines batch every bad spec is reported with its line and the others
are still laid out.  An unknown model is not an error: it falls back to
cl100k_base (and, for ``budget``, to an 8,192-token window), and says so.
``-v`` shows the ``tokenbox`` logger's messages (``-vv``: debug summaries).

The modules: ``parser`` (the command line), ``commands`` (one function per
command), ``batch`` (JSON-lines batches, in parallel, with a progress bar).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from tokenbox_core.cli import commands
from tokenbox_core.cli.commands import EXIT_BAD_INPUT, EXIT_OK, one_line
from tokenbox_core.cli.parser import UsageError, build_parser
from tokenbox_core.errors import TokenBoxError

__all__ = ["main"]


def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.command == "demo":
        return commands.cmd_demo(args, out)
    if args.command == "layout":
        return commands.cmd_layout(args, out, err)
    if args.command == "count":
        return commands.cmd_count(args, out)
    if args.command == "budget":
        return commands.cmd_budget(args, out)
    if args.command == "diff":
        return commands.cmd_diff(args, out)
    if args.command == "schema":
        return commands.cmd_schema(args, out)
    if args.command == "compile":  # compiler hook (ported at the media merge)
        from tokenbox_core.compiler.command import run_compile_command

        return run_compile_command(args, out, err)
    if args.command == "cache-sim":  # tokenbox_core.cache.command (issue 15)
        from tokenbox_core.cache.command import run as run_cache_sim

        text, _ = run_cache_sim(args)
        out.write(text + "\n")
        return EXIT_OK
    if args.command == "session":  # tokenbox_core.session.command (issue 23)
        from tokenbox_core.session.command import run as run_session

        return run_session(args, out)
    raise UsageError("missing command; start with 'tokenbox demo' or see 'tokenbox --help'")


class _StderrHandler(logging.Handler):
    """The ``tokenbox`` logger's records as ``tokenbox: warning: ...`` lines on the command's stderr."""

    def __init__(self, err: TextIO) -> None:
        super().__init__()
        self.err = err

    def emit(self, record: logging.LogRecord) -> None:
        self.err.write(f"tokenbox: {record.levelname.lower()}: {one_line(record.getMessage())}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    out, err = sys.stdout, sys.stderr
    handler = _StderrHandler(err)
    logger = logging.getLogger("tokenbox")
    saved_level = logger.level
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help and --version
            return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_BAD_INPUT
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG if args.verbose else logging.WARNING)
        return _dispatch(args, out, err)
    except (UsageError, TokenBoxError) as exc:
        err.write(f"tokenbox: error: {one_line(str(exc))}\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `tokenbox demo | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        err.write("tokenbox: interrupted\n")
        return 130
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved_level)
