"""The ``tokenbox`` command.

::

    tokenbox demo                         lay out the built-in agent context into 8k gpt-4o tokens
    tokenbox layout SPEC                  lay out a JSON/TOML spec (a .jsonl file: many, in parallel)
    tokenbox count FILE... --model M      count tokens in files (or stdin)
    tokenbox budget --model M --messages FILE
                                          the memory budget left beside a conversation
    tokenbox diff A B                     what changed between the layouts of two specs

Every command has ``--help``.  Bad input (a missing file, bad JSON or TOML, an
invalid field, a negative budget, bytes that are not UTF-8, an empty spec)
prints one line, ``tokenbox: error: ...``, on stderr and exits with status 2.
An unknown model is not an error: it falls back to cl100k_base (and, for
``budget``, to an 8,192-token window).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, NoReturn, TextIO

from tokenbox_core import __version__
from tokenbox_core.compiler.command import add_compile_command, run_compile_command
from tokenbox_core.errors import TokenBoxError
from tokenbox_core.spec import SpecError, decode_utf8, load_spec, loads_spec, read_text

__all__ = ["main"]

EXIT_OK = 0
EXIT_BAD_INPUT = 2


class UsageError(Exception):
    """A command line that argparse or a command rejected."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


# --------------------------------------------------------------------------- output helpers


def _write_html(path: str, page: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _read_bytes(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _status_counts(sections: Sequence[Any]) -> str:
    counts: dict[str, int] = {}
    for s in sections:
        counts[s.status] = counts.get(s.status, 0) + 1
    order = ("kept", "expanded", "compressed", "truncated", "dropped")
    return ", ".join(f"{k} {counts[k]}" for k in order if k in counts)


# --------------------------------------------------------------------------- demo


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from tokenbox_core.demo import DEMO_MODEL, demo_budget, demo_layout

    budget = demo_budget(args.budget)
    layout = demo_layout(args.budget)
    if args.html:
        _write_html(args.html, layout.to_html())
    if args.json:
        out.write(layout.to_json(indent=2) + "\n")
        return EXIT_OK
    if args.messages:
        out.write(json.dumps(layout.messages, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    out.write(
        f"Demo: an on-call agent's context at turn 60 (policy, 8 tool schemas, 3 memories, 20 retrieved "
        f"documents, 60 messages with tool calls, a scratchpad, the task)\nlaid out as chat messages into "
        f"{budget.max_tokens:,} {DEMO_MODEL} tokens with {budget.output_reserve:,} reserved for the answer.\n\n"
    )
    out.write(layout.explain() + "\n\n")
    out.write(
        "Try: tokenbox demo --budget 16384 (documents expand) · tokenbox demo --budget 2400 (tool schemas "
        "compressed)\n     tokenbox demo --html layout.html (visual report) · tokenbox demo --messages (the context)\n"
    )
    if args.html:
        out.write(f"wrote {args.html}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- layout


def _layout_one(task: tuple[int, str, str]) -> dict[str, Any]:
    """Lay out one spec of a batch (runs in a worker process; returns plain data)."""
    line_no, text, source = task
    where = f"{source} line {line_no}"
    try:
        spec = loads_spec(text, fmt="json", source=where)
        layout = spec.layout()
    except TokenBoxError as exc:
        return {"line": line_no, "ok": False, "error": _one_line(str(exc))}
    summary = (
        f"{layout.total_tokens:,} / {layout.max_tokens:,} tokens ({layout.utilisation:.1%}) · "
        f"{_status_counts(layout.sections)} · {len(layout.removed)} items removed · fingerprint "
        f"{layout.fingerprint[:12]}"
    )
    return {
        "line": line_no,
        "ok": True,
        "name": spec.name,
        "summary": summary,
        "total_tokens": layout.total_tokens,
        "json": layout.to_json(),
    }


class _Progress:
    """A plain text progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total = total
        self.stream = stream
        self.enabled = stream.isatty() and total > 0
        self.done = 0

    def step(self) -> None:
        self.done += 1
        if self.enabled and (self.done == self.total or self.done % max(1, self.total // 100) == 0):
            width = 30
            filled = width * self.done // self.total
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} specs")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _batch_tasks(path: str) -> list[tuple[int, str, str]]:
    text = read_text(path)
    tasks = [(n, line, path) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not tasks:
        raise SpecError(f"{path}: no specs in the file (expected one JSON spec per line)")
    return tasks


def _run_batch(tasks: list[tuple[int, str, str]], jobs: int) -> Iterator[dict[str, Any]]:
    if jobs == 1 or len(tasks) == 1:
        yield from map(_layout_one, tasks)
        return
    import multiprocessing

    # spawn, not fork: forking a process that may hold threads (tokenizer pools) is unsafe.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
        chunk = max(1, len(tasks) // (jobs * 8))
        yield from pool.map(_layout_one, tasks, chunksize=chunk)  # results in input order


def _cmd_layout_batch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.html:
        raise UsageError("--html works with one spec, not a batch; run tokenbox layout on one spec for a report")
    tasks = _batch_tasks(args.spec)
    progress = _Progress(len(tasks), err)
    started = time.perf_counter()
    ok = failed = tokens = 0
    try:
        for result in _run_batch(tasks, args.jobs):
            progress.step()
            if result["ok"]:
                ok += 1
                tokens += result["total_tokens"]
                if args.json:
                    out.write(
                        f'{{"line":{result["line"]},"name":{json.dumps(result["name"])},"ok":true,'
                        f'"layout":{result["json"]}}}\n'
                    )
                else:
                    label = f" {result['name']}" if result["name"] else ""
                    out.write(f"line {result['line']}{label}: {result['summary']}\n")
            else:
                failed += 1
                if args.json:
                    out.write(json.dumps({"line": result["line"], "ok": False, "error": result["error"]}) + "\n")
                progress_break = "\n" if progress.enabled else ""
                err.write(f"{progress_break}tokenbox: error: {result['error']}\n")
    finally:
        progress.close()
    elapsed = time.perf_counter() - started
    err.write(
        f"summary: {len(tasks)} specs, {ok} laid out, {failed} failed, {tokens:,} tokens in total "
        f"({args.jobs} job{'s' if args.jobs != 1 else ''}, {elapsed:.2f} s)\n"
    )
    return EXIT_BAD_INPUT if failed else EXIT_OK


def _cmd_layout(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.batch or args.spec.lower().endswith((".jsonl", ".ndjson")):
        return _cmd_layout_batch(args, out, err)
    layout = load_spec(args.spec).layout()
    if args.html:
        _write_html(args.html, layout.to_html())
    if args.json:
        out.write(layout.to_json(indent=2) + "\n")
    else:
        out.write(layout.explain() + "\n")
        if args.html:
            out.write(f"wrote {args.html}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- count


def _cmd_count(args: argparse.Namespace, out: TextIO) -> int:
    from tokenbox_core.tokens import get_counter

    counter = get_counter(args.model)
    paths = args.files or ["-"]
    rows: list[tuple[str, int]] = []
    for path in paths:
        name = "<stdin>" if path == "-" else path
        text = decode_utf8(_read_bytes(path), name)
        rows.append((name, counter.count(text)))
    total = sum(n for _, n in rows)
    if args.json:
        files = [{"path": name, "tokens": n} for name, n in rows]
        payload = {"model": args.model, "counter": counter.name, "files": files, "total": total}
        out.write(json.dumps(payload, indent=2) + "\n")
        return EXIT_OK
    width = max(len(f"{n:,}") for n in [total, *(n for _, n in rows)])
    for name, n in rows:
        out.write(f"{n:>{width},}  {name}\n")
    if len(rows) > 1:
        out.write(f"{total:>{width},}  total ({counter.name})\n")
    return EXIT_OK


# --------------------------------------------------------------------------- budget


def _load_messages(path: str) -> list[dict[str, Any]]:
    name = "<stdin>" if path == "-" else path
    text = decode_utf8(_read_bytes(path), name)
    if not text.strip():
        raise UsageError(f"{name}: the messages file is empty; expected a JSON list of {{role, content}} objects")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise UsageError(f"{name}: expected a JSON list of messages (or an object with 'messages')")
    for i, message in enumerate(data):
        if not isinstance(message, dict):
            raise UsageError(f"{name}: message {i} must be an object with 'role' and 'content'")
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise UsageError(f"{name}: message {i} needs a 'role' string (system, user, assistant or tool)")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise UsageError(f"{name}: message {i}: content must be a string, a list of parts or null")
    return data


def _cmd_budget(args: argparse.Namespace, out: TextIO) -> int:
    from tokenbox_core.budget import DEFAULT_CONTEXT_WINDOW, MODEL_CONTEXT_WINDOWS, TokenBudgetCalculator
    from tokenbox_core.tokens import encoding_for_model

    messages = _load_messages(args.messages)
    result = TokenBudgetCalculator().calculate(args.model, messages, directive=args.directive)
    if args.json:
        payload = dict(vars(result))
        payload["messages"] = len(messages)
        out.write(json.dumps(payload, indent=2) + "\n")
        return EXIT_OK
    rows = [
        ("model", args.model),
        ("context window", f"{result.context_window:,}"),
        ("messages", f"{result.messages_tokens:,}  ({len(messages)} messages, chat overhead included)"),
        ("directive", f"{result.directive_tokens:,}"),
        ("response reserve", f"{result.response_reserve:,}"),
        ("safety buffer", f"{result.safety_buffer:,}"),
        ("memory budget", f"{result.memory_tokens:,}"),
        ("constrained", "yes (under 1,000 tokens left)" if result.is_constrained else "no"),
    ]
    for label, value in rows:
        out.write(f"{label:<17} {value}\n")
    if args.model not in MODEL_CONTEXT_WINDOWS:
        out.write(
            f"note: unknown model {args.model!r}: using the {DEFAULT_CONTEXT_WINDOW:,}-token fallback window and "
            f"{encoding_for_model(args.model)}\n"
        )
    return EXIT_OK


# --------------------------------------------------------------------------- diff


def _cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
    a = load_spec(args.a).layout()
    b = load_spec(args.b).layout()
    diff = a.diff(b)
    if args.html:
        _write_html(args.html, diff.to_html())
    if args.json:
        out.write(json.dumps(diff.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(str(diff) + "\n")
        if args.html:
            out.write(f"wrote {args.html}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- parser


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
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = commands.add_parser(
        "demo",
        help="lay out a built-in agent context into an 8k gpt-4o budget and explain it",
        description="Lay out a realistic built-in agent context (system policy, tool schemas, memories, 20 "
        "retrieved documents, a 60-message history with tool calls, a scratchpad, the task) into a gpt-4o "
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

    layout = commands.add_parser(
        "layout",
        help="lay out a JSON or TOML spec of sections and a budget",
        description="Lay out the sections of a spec file (JSON or TOML; the format is documented in "
        "tokenbox_core.spec) and print the explain table. A .jsonl file holds one JSON spec per line: "
        "they are laid out in parallel (--jobs) and printed in input order, one line each, with a summary.",
    )
    layout.add_argument("spec", metavar="SPEC", help="a .json or .toml spec, or a .jsonl file of specs")
    layout.add_argument("--json", action="store_true", help="print the layout as JSON (batch: one object per line)")
    layout.add_argument("--html", metavar="FILE", help="also write the visual HTML report to FILE (one spec only)")
    layout.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=1,
        metavar="N",
        help="worker processes for a batch (default 1; 'auto' = one per CPU)",
    )
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
        description="The token budget calculator: window minus response reserve (15%%, 500-4,096), a 5%% safety "
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
    add_compile_command(commands)  # hook: `tokenbox compile SPEC` lives in tokenbox_core.compiler.command
    return parser


def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.command == "demo":
        return _cmd_demo(args, out)
    if args.command == "layout":
        return _cmd_layout(args, out, err)
    if args.command == "count":
        return _cmd_count(args, out)
    if args.command == "budget":
        return _cmd_budget(args, out)
    if args.command == "diff":
        return _cmd_diff(args, out)
    if args.command == "compile":
        return run_compile_command(args, out, err)
    raise UsageError("missing command; start with 'tokenbox demo' or see 'tokenbox --help'")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    out, err = sys.stdout, sys.stderr
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help and --version
            return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_BAD_INPUT
        return _dispatch(args, out, err)
    except (UsageError, TokenBoxError) as exc:
        err.write(f"tokenbox: error: {_one_line(str(exc))}\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `tokenbox demo | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        err.write("tokenbox: interrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
