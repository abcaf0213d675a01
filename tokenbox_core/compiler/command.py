"""``tokenbox compile SPEC``: compile a JSON or TOML file of compiler inputs.

The spec holds the budget, the counter, the configuration and the typed
inputs of :meth:`ContextCompiler.compile`::

    {
      "budget": {"max_tokens": 128000, "output_reserve": 4096},   or an integer
      "counter": "gpt-4o",
      "config": {"allocator": "utility", "overflow": "cascade_compress", "quantum": 64,
                 "minimums": {"history": 2000}, "freshness_half_life": 86400,
                 "clock": "2025-06-01T00:00:00+00:00"},
      "policy": "You are ..."            or {"text": "...", "version": "3"},
      "developer": "Answer in JSON.",
      "task": {"state": {"objective": "..."}, "current_step": "refund", "pii_authorized": false},
      "tools": [{"name": "refund", "description": "...", "parameters": {...}, "relevance": 0.9}],
      "evidence": [{"id": "kb-1", "text": "...", "source": "kb://refunds",
                    "retrieved_at": "2025-05-30T10:00:00+00:00", "authority": 0.9, "relevance": 0.8,
                    "span": [0, 120], "lineage": "q1"}],
      "memory": [{"id": "m1", "text": "...", "relevance": 0.7, "created_at": "2025-05-01T00:00:00+00:00"}],
      "history": [{"role": "user", "content": "..."}, ...],
      "user": "Can I get a refund?"
    }

``config`` takes the JSON-able fields of :class:`CompilerConfig` (durations in
seconds, times as ISO 8601, ``ranking_weights`` as objects, ``pii_detector``
only as ``null`` to disable the gate).  ``task`` may also be the state itself
(an object without ``state``).  Output: the explain summary (default), the
messages, the text, or everything as JSON (``--format``).  A rejected
compilation prints every violation and exits with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from tokenbox_core.budget import ContextBudget
from tokenbox_core.compiler.compiler import CompiledContext, ContextCompiler
from tokenbox_core.compiler.config import CompilerConfig, RankingWeights
from tokenbox_core.compiler.inputs import Evidence, Memory, Policy, TaskState
from tokenbox_core.errors import CompilationError, CompilerInputError

__all__ = ["add_compile_command", "compile_spec", "load_compile_spec", "run_compile_command"]

_INPUTS = ("policy", "developer", "task", "tools", "evidence", "memory", "history", "user")
_TOP = ("budget", "counter", "config", "name", *_INPUTS)
_UNSUPPORTED = ("utilities", "checks", "embedder", "defense")


def _toml() -> Any:
    """``tomllib`` (Python 3.11+), else its backport ``tomli`` (a dependency on Python 3.10)."""
    try:
        return importlib.import_module("tomllib")
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        return importlib.import_module("tomli")


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CompilerInputError(f"cannot read compile spec {str(path)!r}: {exc.strerror}") from exc
    kind = "TOML" if path.suffix == ".toml" else "JSON"
    try:
        data = _toml().loads(text) if kind == "TOML" else json.loads(text)
    except ValueError as exc:
        raise CompilerInputError(f"compile spec {str(path)!r} is not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise CompilerInputError(f"compile spec {str(path)!r} must hold an object, got {type(data).__name__}")
    return data


def _time(where: str, value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError as exc:
        example = "2025-06-01T00:00:00+00:00"
        raise CompilerInputError(f"{where} must be an ISO 8601 time like {example}, got {value!r}") from exc


def _config(raw: Any) -> CompilerConfig:
    if raw is None:
        return CompilerConfig()
    if not isinstance(raw, Mapping):
        raise CompilerInputError(f"config must be an object, got {type(raw).__name__}")
    fields = dict(raw)
    for name in _UNSUPPORTED:
        if name in fields:
            raise CompilerInputError(f"config.{name} holds Python callables and cannot come from a spec file")
    known = set(CompilerConfig.__dataclass_fields__)
    for name in fields:
        if name not in known:
            raise CompilerInputError(f"config has unknown field {name!r}; known: {sorted(known - set(_UNSUPPORTED))}")
    if "freshness_half_life" in fields:
        fields["freshness_half_life"] = timedelta(seconds=float(fields["freshness_half_life"]))
    if "clock" in fields:
        fields["clock"] = _time("config.clock", fields["clock"])
    if "ranking_weights" in fields:
        fields["ranking_weights"] = {k: RankingWeights(**v) for k, v in dict(fields["ranking_weights"]).items()}
    if "pii_detector" in fields and fields["pii_detector"] is not None:
        raise CompilerInputError("config.pii_detector can only be null (disable the PII gate) in a spec file")
    for name in ("cascade_lenses", "required_sections"):
        if name in fields:
            fields[name] = tuple(fields[name])
    try:
        return CompilerConfig(**fields)
    except TypeError as exc:
        raise CompilerInputError(f"config: {exc}") from exc


def load_compile_spec(path: str | Path) -> tuple[ContextCompiler, dict[str, Any]]:
    """The compiler and the typed inputs a compile spec describes (see the module docstring)."""
    data = _read(Path(path))
    for key in data:
        if key not in _TOP:
            raise CompilerInputError(f"compile spec has unknown key {key!r}; known: {list(_TOP)}")
    if "budget" not in data:
        raise CompilerInputError("compile spec needs a 'budget' (an integer or an object with max_tokens)")
    budget = data["budget"]
    budget = ContextBudget(**budget) if isinstance(budget, Mapping) else ContextBudget.coerce(budget)
    compiler = ContextCompiler(budget, counter=data.get("counter", "o200k_base"), config=_config(data.get("config")))
    inputs: dict[str, Any] = {}
    policy = data.get("policy")
    if isinstance(policy, Mapping):
        policy = Policy(**policy)
    inputs["policy"] = policy
    inputs["developer"] = data.get("developer")
    task = data.get("task")
    if isinstance(task, Mapping) and "state" in task:
        task = TaskState(**task)
    inputs["task"] = task
    inputs["tools"] = data.get("tools", [])
    evidence = []
    for i, row in enumerate(data.get("evidence", [])):
        if not isinstance(row, Mapping):
            raise CompilerInputError(f"evidence[{i}] must be an object, got {type(row).__name__}")
        row = dict(row)
        for field in ("id", "text"):
            if field not in row:
                raise CompilerInputError(f"evidence[{i}] needs {field!r}")
        if "retrieved_at" in row:
            row["retrieved_at"] = _time(f"evidence[{i}].retrieved_at", row["retrieved_at"])
        if "span" in row and row["span"] is not None:
            row["span"] = tuple(row["span"])
        try:
            evidence.append(Evidence(row.pop("id"), row.pop("text"), **row))
        except TypeError as exc:
            raise CompilerInputError(f"evidence[{i}]: {exc}") from exc
    inputs["evidence"] = evidence
    memory = []
    for i, row in enumerate(data.get("memory", [])):
        row = dict(row)
        for field in ("created_at", "expires_at"):
            if row.get(field) is not None:
                row[field] = _time(f"memory[{i}].{field}", row[field])
        try:
            memory.append(Memory(**row))
        except TypeError as exc:
            raise CompilerInputError(f"memory[{i}]: {exc}") from exc
    inputs["memory"] = memory
    inputs["history"] = data.get("history", [])
    inputs["user"] = data.get("user")
    return compiler, inputs


def compile_spec(path: str | Path) -> CompiledContext:
    """Compile a spec file (see the module docstring)."""
    compiler, inputs = load_compile_spec(path)
    return compiler.compile(**inputs)


def add_compile_command(commands: Any) -> None:
    """Register ``compile`` on the ``tokenbox`` command's subparsers (the CLI's hook)."""
    parser = commands.add_parser(
        "compile",
        help="compile a JSON or TOML file of prefill-compiler inputs",
        description="Run the prefill compiler (Collect, Filter, Rank, Compress, Assemble, Validate) over the "
        "inputs of a spec file (format: tokenbox_core.compiler.command) and print the result. A rejected "
        "compilation lists every violated invariant and exits with status 1.",
    )
    parser.add_argument("spec", metavar="SPEC", help="a .json or .toml compile spec")
    parser.add_argument(
        "--format",
        choices=("explain", "messages", "text", "json"),
        default="explain",
        help="explain (default): a summary; messages: the chat messages as JSON; text: the prompt text; "
        "json: messages, text, trace and metrics",
    )


def run_compile_command(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Execute ``tokenbox compile``; returns the exit status (0 compiled, 1 rejected)."""
    try:
        compiled = compile_spec(args.spec)
    except CompilationError as exc:
        err.write(f"tokenbox: {exc}\n")
        return 1
    if args.format == "messages":
        out.write(json.dumps([dict(m) for m in compiled.messages], ensure_ascii=False, indent=2) + "\n")
    elif args.format == "text":
        out.write(compiled.text + "\n")
    elif args.format == "json":
        document = {
            "messages": [dict(m) for m in compiled.messages],
            "text": compiled.text,
            "metrics": compiled.metrics.to_dict(),
            "trace": compiled.trace.to_dict(),
        }
        out.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")
    else:
        out.write(compiled.explain() + "\n")
    return 0
