"""Tool results in an agent under :class:`~tokenbox_langchain.middleware.TokenBoxMiddleware`.

With a :class:`~tokenbox_core.defense.DefensePolicy`, every tool result is
screened as it is produced (``wrap_tool_call``), by the core's defensive stage
(:func:`~tokenbox_core.defense.defend_sections`, source type ``"tool"``): it is
sanitised, scored, and wrapped in HMAC-derived boundaries; a result that
scores at or above its policy's threshold is labelled ``QUARANTINED`` (policy
``quarantine``) or withheld — replaced by an error result saying why (policy
``reject``; an agent run is not aborted by a tool's output).  The instruction-
hierarchy statement that tells the model what the boundaries mean joins the
system message of every request.  The tool-call id, name and message id are
kept; the decision is in ``response_metadata["tokenbox_defense"]``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langchain_core.messages import ToolMessage

from tokenbox_core import TokenCounter
from tokenbox_core._sections import Section
from tokenbox_core.defense import DefensePolicy, defend_sections, hierarchy_statement
from tokenbox_core.errors import SecurityError

__all__ = ["METADATA_KEY", "check_defense", "defense_statement", "screen_result"]

METADATA_KEY = "tokenbox_defense"
"""Where a screened tool result records the decision (``response_metadata``)."""


def check_defense(policy: Any) -> None:
    """A ``TypeError`` unless ``policy`` is a ``DefensePolicy``."""
    if not isinstance(policy, DefensePolicy):
        raise TypeError(
            f"defense must be a tokenbox_core.defense.DefensePolicy, got {type(policy).__name__}; e.g. "
            f"defense=DefensePolicy()"
        )


def defense_statement(policy: DefensePolicy) -> str | None:
    """The instruction-hierarchy statement for the system message (None when the policy turns it off)."""
    if not policy.hierarchy:
        return None
    return hierarchy_statement(policy.spotlight, marker=policy.datamark)


def screen_result(message: ToolMessage, policy: DefensePolicy, counter: TokenCounter) -> ToolMessage:
    """``message`` screened by ``policy`` (see the module docstring); non-text content passes unchanged."""
    content = message.content
    if not isinstance(content, str) or not content:
        return message
    uid = str(message.tool_call_id)
    section = Section(uid, content, role="tool", metadata={"source_type": "tool"})
    quiet = dataclasses.replace(policy, hierarchy=False, canary=False)  # the statement goes to the system message
    try:
        defended = defend_sections([section], quiet, counter=counter)
    except SecurityError as exc:
        note = {"action": "rejected", "score": exc.score}
        text = (
            f"The result of this tool call was withheld: it scored {exc.score:.2f} as a likely prompt injection, "
            f"and the policy for tool results is 'reject'."
        )
        metadata = {**message.response_metadata, METADATA_KEY: note}
        return message.model_copy(update={"content": text, "status": "error", "response_metadata": metadata})
    text = "\n".join(s.content for s in defended.sections if isinstance(s.content, str))
    event = defended.report.events[-1]
    note = {"action": event.action, "score": event.score}
    return message.model_copy(
        update={"content": text, "response_metadata": {**message.response_metadata, METADATA_KEY: note}}
    )
