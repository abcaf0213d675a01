"""pydantic-ai's ``run_sync`` leaves the event loop it made current open (``pydantic_ai._utils.get_event_loop``):
closed after each test here, or the garbage collector reports it — and its sockets — as unraisable
``ResourceWarning``s in whichever later test it happens to run in (``filterwarnings = error``)."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _close_the_loop_run_sync_leaves() -> Iterator[None]:
    """Close the current event loop a test's ``run_sync`` left behind."""
    yield
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running() and not loop.is_closed():
        loop.close()
    policy.set_event_loop(None)
