"""Stage 1, Collect: resolve every source into typed candidates (chapter §6.4.1, Algorithm 6.1).

A source is a value or a callable returning one; callables may be
``async``.  Sync callables are called in declaration order; async ones are
awaited concurrently with :func:`asyncio.gather` (their results are placed in
declaration order, so concurrency never changes the output).

Coercions, so that callers can pass plain data:

- ``policy``: :class:`Policy` or ``str``; ``developer``: :class:`Developer` or ``str``;
- ``task``: :class:`TaskState` or a mapping (the state);
- ``tools``: :class:`Tool` or OpenAI-style tool dicts (``{"name", "description",
  "parameters"}`` or ``{"type": "function", "function": {...}}``);
- ``evidence``: :class:`Evidence` (never a bare string: provenance is required);
- ``memory``: :class:`Memory` or a mapping of its fields;
- ``history``: chat messages as dicts in the OpenAI shape;
- ``user``: the current user message, a ``str``.

``evidence``, ``memory`` and ``tools`` may also be a list whose entries are
values or sources (several retrievers).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core.compiler.inputs import Developer, Evidence, Memory, Policy, TaskState, Tool
from tokenbox_core.errors import CompilerInputError

__all__ = ["SOURCE_NAMES", "Candidates", "collect", "collect_async", "has_async_sources"]

SOURCE_NAMES = ("policy", "developer", "task", "tools", "evidence", "memory", "history", "user")
_LISTS = ("tools", "evidence", "memory", "history")


@dataclass(frozen=True)
class Candidates:
    """Everything Collect gathered, typed; the value every later stage reads."""

    policy: Policy | None = None
    developer: Developer | None = None
    task: TaskState | None = None
    tools: tuple[Tool, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    memory: tuple[Memory, ...] = ()
    history: tuple[Mapping[str, Any], ...] = ()
    user: str | None = None


def _is_source(value: Any) -> bool:
    return callable(value) and not isinstance(value, type)


def _is_async(value: Any) -> bool:
    return inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(getattr(value, "__call__", None))  # noqa: B004


def _leaves(name: str, value: Any) -> list[Any]:
    """The entries of a list source that may themselves be sources (never for history: a message list)."""
    if name in _LISTS and name != "history" and isinstance(value, list | tuple):
        return list(value)
    return [value]


_PLAIN = frozenset({str, dict, Evidence, Memory, Tool, Policy, Developer, TaskState})
"""Types (exactly) that are values, never async callables or awaitables: skipped without inspecting them."""


def has_async_sources(sources: Mapping[str, Any]) -> bool:
    """Whether any source (or list entry) is an async callable or an awaitable."""
    for name, value in sources.items():
        for leaf in _leaves(name, value):
            if type(leaf) in _PLAIN:
                continue
            if _is_async(leaf) or inspect.isawaitable(leaf):
                return True
    return False


def _check_names(sources: Mapping[str, Any]) -> None:
    for name in sources:
        if name not in SOURCE_NAMES:
            raise CompilerInputError(f"unknown source {name!r}; sources are {list(SOURCE_NAMES)}")


def collect(sources: Mapping[str, Any]) -> Candidates:
    """Resolve sync sources and coerce them (async sources need :func:`collect_async`)."""
    _check_names(sources)
    if has_async_sources(sources):
        raise CompilerInputError(
            "some sources are async: use `await compiler.acompile(...)` (or call compile() outside an event loop)"
        )
    resolved: dict[str, Any] = {}
    for name in SOURCE_NAMES:
        if name in sources:
            resolved[name] = _gather_sync(name, sources[name])
    return _coerce(resolved)


async def collect_async(sources: Mapping[str, Any]) -> Candidates:
    """Resolve every source, awaiting async ones concurrently, and coerce them."""
    _check_names(sources)
    pending: list[Awaitable[Any]] = []
    slots: list[tuple[str, int]] = []
    leaves: dict[str, list[Any]] = {}
    for name in SOURCE_NAMES:
        if name not in sources:
            continue
        entries = _leaves(name, sources[name])
        resolved: list[Any] = []
        for index, leaf in enumerate(entries):
            if inspect.isawaitable(leaf):
                pending.append(leaf)
                slots.append((name, index))
                resolved.append(None)
            elif _is_async(leaf):
                pending.append(leaf())
                slots.append((name, index))
                resolved.append(None)
            elif _is_source(leaf):
                resolved.append(_call(name, leaf))
            else:
                resolved.append(leaf)
        leaves[name] = resolved
    import asyncio  # only for async sources: importing tokenbox_core stays light

    results = await asyncio.gather(*pending)
    for (name, index), result in zip(slots, results, strict=True):
        leaves[name][index] = result
    out: dict[str, Any] = {}
    for name, resolved in leaves.items():
        original = sources[name]
        out[name] = _flatten(name, resolved) if _is_multi(name, original) else resolved[0]
    return _coerce(out)


def _is_multi(name: str, value: Any) -> bool:
    return name in _LISTS and name != "history" and isinstance(value, list | tuple)


def _call(name: str, source: Callable[[], Any]) -> Any:
    try:
        return source()
    except CompilerInputError:
        raise
    except Exception as exc:
        raise CompilerInputError(f"source {name!r} raised {type(exc).__name__}: {exc}") from exc


def _gather_sync(name: str, value: Any) -> Any:
    if _is_multi(name, value):
        return _flatten(name, [_call(name, v) if _is_source(v) else v for v in value])
    return _call(name, value) if _is_source(value) else value


def _flatten(name: str, values: Sequence[Any]) -> list[Any]:
    """Concatenate the results of several sources of one list input (``None`` results contribute nothing)."""
    out: list[Any] = []
    for value in values:
        if isinstance(value, list | tuple):
            out.extend(value)
        elif value is not None:
            out.append(value)
    return out


def _as_list(name: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | bytes) or (isinstance(value, Mapping) and name != "tools"):
        raise CompilerInputError(f"source {name!r} must be a list, got {type(value).__name__}")
    if isinstance(value, Mapping):
        return [value]
    if not isinstance(value, Sequence):
        try:
            return list(value)
        except TypeError as exc:
            raise CompilerInputError(f"source {name!r} must be a list, got {type(value).__name__}") from exc
    return list(value)


def _tool(value: Any) -> Tool:
    if isinstance(value, Tool):
        return value
    if isinstance(value, Mapping):
        spec = value.get("function", value) if value.get("type") == "function" else value
        if not isinstance(spec, Mapping) or "name" not in spec:
            raise CompilerInputError(f"a tool dict needs a 'name', got keys {sorted(value)}")
        return Tool(
            name=spec["name"],
            description=spec.get("description", "") or "",
            schema=spec.get("parameters", spec.get("input_schema", {})) or {},
            relevance=value.get("relevance"),
        )
    raise CompilerInputError(f"tools must be Tool objects or tool dicts, got {type(value).__name__}")


def _memory(value: Any) -> Memory:
    if isinstance(value, Memory):
        return value
    if isinstance(value, Mapping):
        try:
            return Memory(**value)
        except TypeError as exc:
            raise CompilerInputError(f"memory dict has unexpected fields: {exc}") from exc
    raise CompilerInputError(f"memory entries must be Memory objects or dicts, got {type(value).__name__}")


def _coerce(raw: Mapping[str, Any]) -> Candidates:
    policy = raw.get("policy")
    if isinstance(policy, str):
        policy = Policy(policy)
    if policy is not None and not isinstance(policy, Policy):
        raise CompilerInputError(f"policy must be a Policy or a string, got {type(policy).__name__}")
    developer = raw.get("developer")
    if isinstance(developer, str):
        developer = Developer(developer)
    if developer is not None and not isinstance(developer, Developer):
        raise CompilerInputError(f"developer must be a Developer or a string, got {type(developer).__name__}")
    task = raw.get("task")
    if isinstance(task, Mapping):
        task = TaskState(task)
    if task is not None and not isinstance(task, TaskState):
        raise CompilerInputError(f"task must be a TaskState or a mapping, got {type(task).__name__}")
    evidence = []
    for value in _as_list("evidence", raw.get("evidence")):
        if not isinstance(value, Evidence):
            raise CompilerInputError(
                f"evidence entries must be Evidence objects with provenance, got {type(value).__name__}; "
                f"anonymous context blobs are rejected (chapter §6.3.3)"
            )
        evidence.append(value)
    history = []
    for i, message in enumerate(_as_list("history", raw.get("history"))):
        if not isinstance(message, Mapping) or "role" not in message:
            raise CompilerInputError(f"history[{i}] must be a message dict with a 'role', got {message!r}")
        history.append(message)
    user = raw.get("user")
    if user is not None and not isinstance(user, str):
        raise CompilerInputError(f"user must be a string, got {type(user).__name__}")
    return Candidates(
        policy=policy,
        developer=developer,
        task=task,
        tools=tuple(_tool(t) for t in _as_list("tools", raw.get("tools"))),
        evidence=tuple(evidence),
        memory=tuple(_memory(m) for m in _as_list("memory", raw.get("memory"))),
        history=tuple(history),
        user=user,
    )
