"""One function per ``tokenbox`` command (the JSON-lines batch is in :mod:`tokenbox_core.cli._batch`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from tokenbox_core.cli._parser import UsageError
from tokenbox_core.spec import decode_utf8, load_spec

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_OK",
    "cmd_budget",
    "cmd_count",
    "cmd_demo",
    "cmd_diff",
    "cmd_layout",
    "cmd_schema",
    "one_line",
    "status_counts",
]

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def one_line(message: str) -> str:
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


def status_counts(sections: Sequence[Any]) -> str:
    counts: dict[str, int] = {}
    for s in sections:
        counts[s.status] = counts.get(s.status, 0) + 1
    order = ("kept", "expanded", "compressed", "truncated", "dropped")
    return ", ".join(f"{k} {counts[k]}" for k in order if k in counts)


# --------------------------------------------------------------------------- demo


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from tokenbox_core._demo import DEMO_MODEL, demo_box, demo_budget, demo_conversation, demo_sections

    budget = demo_budget(args.budget)
    conversation = demo_conversation()
    layout = demo_box(args.budget).layout(demo_sections(conversation))
    if args.html:
        _write_html(args.html, layout.to_html())
    if args.json:
        out.write(layout.to_json(indent=2) + "\n")
        return EXIT_OK
    if args.messages:  # the history as the conversation engine renders it: tool calls structured, ids answered
        out.write(json.dumps(conversation.render(layout), indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    out.write(
        f"Demo: an on-call agent's context after 15 exchanges (policy, 8 tool schemas, 3 memories, 20 retrieved "
        f"documents, 64 messages with tool calls, a scratchpad, the task)\nlaid out as chat messages into "
        f"{budget.max_tokens:,} {DEMO_MODEL} tokens with {budget.output_reserve:,} reserved for the answer.\n\n"
    )
    out.write(layout.explain(all=args.all) + "\n\n")
    out.write(
        "Try: tokenbox demo --budget 16384 (documents expand) · tokenbox demo --budget 2400 (tool schemas "
        "compressed)\n     tokenbox demo --html layout.html (visual report) · tokenbox demo --messages (the context)\n"
    )
    if args.html:
        out.write(f"wrote {args.html}\n")
    return EXIT_OK


def cmd_layout(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.batch or args.spec.lower().endswith((".jsonl", ".ndjson")):
        from tokenbox_core.cli._batch import cmd_layout_batch

        return cmd_layout_batch(args, out, err)
    layout = load_spec(args.spec).layout()
    if args.html:
        _write_html(args.html, layout.to_html())
    if args.json:
        out.write(layout.to_json(indent=2) + "\n")
    else:
        out.write(layout.explain(all=getattr(args, "all", False)) + "\n")
        if args.html:
            out.write(f"wrote {args.html}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- count


@contextlib.contextmanager
def _stated_by_the_command() -> Iterator[None]:
    """Silence the ``tokenbox`` logger's fallback warnings while a command that states them itself runs
    (the logger's copy would say the same thing twice, or not at all once said in this process)."""
    logger = logging.getLogger("tokenbox")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def cmd_count(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from tokenbox_core.tokens import get_counter

    paths = args.files or ["-"]
    rows: list[tuple[str, int]] = []
    with _stated_by_the_command():
        counter = get_counter(args.model)
        for path in paths:
            name = "<stdin>" if path == "-" else path
            text = decode_utf8(_read_bytes(path), name)
            rows.append((name, counter.count(text)))
    total = sum(n for _, n in rows)
    from tokenbox_core.models._counting import counting_note  # issue 14 hook: state fallbacks and estimates

    note = counting_note(counter)
    if note:  # stated once, on stderr: stdout stays data
        err.write(f"tokenbox: warning: {one_line(note)}\n")
    if args.json:
        files = [{"path": name, "tokens": n} for name, n in rows]
        payload = {"model": args.model, "counter": counter.name, "files": files, "total": total}
        if note:
            payload["note"] = note
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
    except RecursionError:
        raise UsageError(f"{name}: JSON nested too deeply") from None
    except ValueError as exc:  # an integer over Python's 4,300-digit conversion limit
        raise UsageError(f"{name}: invalid JSON: {exc}") from None
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
        calls = message.get("tool_calls")
        if calls is not None and not (isinstance(calls, list) and all(isinstance(c, dict) for c in calls)):
            raise UsageError(
                f"{name}: message {i}: tool_calls must be a list of tool-call objects "
                f"({{id, type, function: {{name, arguments}}}}), got {json.dumps(calls)[:60]}"
            )
    return data


def cmd_budget(args: argparse.Namespace, out: TextIO) -> int:
    from tokenbox_core._budget import DEFAULT_CONTEXT_WINDOW, MODEL_CONTEXT_WINDOWS, TokenBudgetCalculator
    from tokenbox_core.tokens._registry import encoding_for_model

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
    elif result.counting.startswith("approximate"):  # issue 14 hook
        out.write(f"note: {result.note}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- diff


def cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
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


# --------------------------------------------------------------------------- schema


def cmd_schema(args: argparse.Namespace, out: TextIO) -> int:
    if getattr(args, "compile", False):
        from tokenbox_core.compiler._command import compile_spec_json_schema as schema
    else:
        from tokenbox_core.spec import spec_json_schema as schema

    out.write(json.dumps(schema(), indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK
