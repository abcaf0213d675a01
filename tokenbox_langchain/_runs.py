"""Runnables that fit their input once, with the layout's headline numbers in the run's metadata (issue 10 item 19).

The fit runs first, then the traced run starts with ``tokenbox_budget``,
``tokenbox_total_tokens``, ``tokenbox_kept``, ``tokenbox_removed`` and
``tokenbox_fingerprint`` added to its metadata, so they show in LangSmith
traces and ``astream_events`` beside the run, not only in the custom event
:data:`LAYOUT_EVENT` (the full report), which is still sent inside the run.
A fit that raises still runs, and fails, as a traced run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config

__all__ = ["LAYOUT_EVENT", "TracedFit", "headline"]

LAYOUT_EVENT = "tokenbox_layout"
"""Name of the custom callback event carrying the layout report (``on_custom_event``)."""


def headline(report: Mapping[str, Any]) -> dict[str, Any]:
    """The run metadata of a layout report: budget, total, kept and removed counts, fingerprint."""
    return {
        "tokenbox_budget": report.get("max_tokens"),
        "tokenbox_total_tokens": report.get("total_tokens"),
        "tokenbox_kept": report.get("kept"),
        "tokenbox_removed": report.get("removed"),
        "tokenbox_fingerprint": report.get("fingerprint"),
    }


def _with_metadata(config: RunnableConfig | None, metadata: Mapping[str, Any]) -> RunnableConfig:
    resolved = ensure_config(config)
    return {**resolved, "metadata": {**resolved.get("metadata", {}), **metadata}}


class TracedFit:
    """A mixin for Runnables: ``_compute(input) -> (output, report)`` runs once per call (see the module doc)."""

    event_name: ClassVar[str] = LAYOUT_EVENT

    def _compute(self, input: Any) -> tuple[Any, dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Fit ``input`` in a traced run."""
        runnable: Any = self
        try:
            output, report = self._compute(input)
        except Exception as exc:
            error = exc

            def failed(_: Any) -> Any:
                raise error

            return runnable._call_with_config(failed, input, config, **kwargs)
        name = self.event_name

        def emit(_: Any, run_manager: CallbackManagerForChainRun) -> Any:
            child = run_manager.get_child()
            if child.handlers:
                child.on_custom_event(name, report, run_id=run_manager.run_id)
            return output

        return runnable._call_with_config(emit, input, _with_metadata(config, headline(report)), **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Fit ``input`` in a traced run (async)."""
        runnable: Any = self
        try:
            output, report = self._compute(input)
        except Exception as exc:
            error = exc

            async def failed(_: Any) -> Any:
                raise error

            return await runnable._acall_with_config(failed, input, config, **kwargs)
        name = self.event_name

        async def emit(_: Any, run_manager: AsyncCallbackManagerForChainRun) -> Any:
            child = run_manager.get_child()
            if child.handlers:
                await child.on_custom_event(name, report, run_id=run_manager.run_id)
            return output

        return await runnable._acall_with_config(emit, input, _with_metadata(config, headline(report)), **kwargs)
