"""``TokenBoxMaskingEdit``: TokenBox's observation masking as a ``ContextEdit`` for LangChain's
``ContextEditingMiddleware(edits=[...])``.

>>> from langchain.agents.middleware import ContextEditingMiddleware
>>> editing = ContextEditingMiddleware(edits=[TokenBoxMaskingEdit(trigger=50_000)])

Once the messages count more than ``trigger`` tokens, every tool result but those of the newest
``masking.keep_last`` tool groups (and of ``masking.exclude_tools``) is replaced in the request by the core's
placeholder (:func:`tokenbox_core.session.mask_tool_result`: tool name, size, first line).  The message id,
tool-call id and name are kept.  A masked result is marked as LangChain's ``ClearToolUsesEdit`` marks the results it
clears (``response_metadata["context_editing"]["cleared"]``), so the two edits never clear each other's results
twice; results already cleared by either are left alone.  A result whose content is text (a string or text parts)
is masked; one carrying media (an image part) is left as it is, as the core's session view shows it.  Without a
session nothing is archived, so the default placeholder says the result was cleared rather than pointing at
``rehydrate``.

Differences from ``ClearToolUsesEdit``, each deliberate: ``masking.keep_last`` counts tool groups (a call with all
its results), not single results; the calls' arguments stay (no ``clear_tool_inputs``: the model still sees what it
asked, so it does not ask again); every result past ``keep_last`` is masked once triggered (no ``clear_at_least``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from tokenbox_core.errors import ConfigError, ConfigTypeError
from tokenbox_core.session import MaskingConfig, mask_tool_result

__all__ = ["CLEARED_PLACEHOLDER", "TokenBoxMaskingEdit"]

CLEARED_PLACEHOLDER = "[tool result {id} ({tool}, {tokens} tokens) cleared to save room. First line: {preview}]"
_MARK = "context_editing"
"""LangChain's ``ContextEditingMiddleware`` metadata key: ``{"cleared": True, "strategy": ...}`` on a cleared result."""


@dataclass
class TokenBoxMaskingEdit:
    """A ``ContextEdit`` (``apply(messages, *, count_tokens)``) masking old tool results in place."""

    trigger: int = 100_000
    """Token count of the messages above which the edit runs."""

    masking: MaskingConfig = field(default_factory=lambda: MaskingConfig(placeholder=CLEARED_PLACEHOLDER))
    """Which results stay (``keep_last`` newest tool groups, ``exclude_tools``) and the placeholder."""

    def __post_init__(self) -> None:
        if isinstance(self.trigger, bool) or not isinstance(self.trigger, int) or self.trigger < 0:
            raise ConfigError(f"trigger must be an integer >= 0 (tokens), got {self.trigger!r}")
        if not isinstance(self.masking, MaskingConfig):
            raise ConfigTypeError(
                f"masking must be a tokenbox_core.session.MaskingConfig, got {type(self.masking).__name__}"
            )

    def apply(self, messages: list[Any], *, count_tokens: Callable[[Sequence[BaseMessage]], int]) -> None:
        """Mask the old tool results of ``messages`` in place once they count more than ``trigger``."""
        if count_tokens(messages) <= self.trigger:
            return
        calls = [i for i, m in enumerate(messages) if isinstance(m, AIMessage) and m.tool_calls]
        kept_from = calls[-self.masking.keep_last] if 0 < self.masking.keep_last <= len(calls) else len(messages)
        if self.masking.keep_last > len(calls):
            return
        names = {c["id"]: c["name"] for i in calls for c in messages[i].tool_calls}
        for i, m in enumerate(messages[:kept_from]):
            if not isinstance(m, ToolMessage) or _cleared(m):
                continue
            tool = m.name or names.get(m.tool_call_id, "tool")
            row = {"role": "tool", "content": m.content, "id": m.id or m.tool_call_id}
            shown = mask_tool_result(row, tool, count_tokens([m]), self.masking)
            if shown is None:
                continue
            marked = {**m.response_metadata, _MARK: {"cleared": True, "strategy": "tokenbox_masking"}}
            messages[i] = m.model_copy(
                update={"content": shown["content"], "artifact": None, "response_metadata": marked}
            )


def _cleared(message: ToolMessage) -> bool:
    """True when a context edit (this one or LangChain's ``ClearToolUsesEdit``) has cleared ``message``."""
    entry = message.response_metadata.get(_MARK)
    return isinstance(entry, dict) and bool(entry.get("cleared"))
