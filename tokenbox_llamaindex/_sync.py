"""Running a memory's coroutine from its sync methods, and its archive work off the event loop (LlamaIndex
memories have both surfaces)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["in_worker", "run_sync"]

_T = TypeVar("_T")
_INLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("tokenbox_inline_archive", default=False)
"""True inside :func:`run_sync`: that event loop serves one sync call alone, so its archive work runs inline."""


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine from sync code, in a worker thread (with this context) when an event loop already runs
    here — ``asyncio.run`` cannot nest, and a Jupyter cell or an agent step is inside one."""
    context = contextvars.copy_context()
    context.run(_INLINE.set, True)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return context.run(asyncio.run, coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coro).result()


async def in_worker(work: Callable[[], _T]) -> _T:
    """``work()`` (archive reads and writes: a database round trip each) in a worker thread, so the event loop
    serves other tasks meanwhile; inline under :func:`run_sync`, whose loop waits on this call alone (a thread
    per sync call would cost a thread start and, for SQLite, a connection)."""
    if _INLINE.get():
        return work()
    return await asyncio.to_thread(work)
