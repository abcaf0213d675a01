"""Tool results in an agent under :class:`~tokenbox_langchain._middleware.TokenBoxMiddleware`.

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

The model's side (:class:`SystemDefense`): the statement joins the system
message with the policy's canary (``DefensePolicy(canary=True)``, derived from
the deployment secret and the system prompt), and every response is read by
:func:`~tokenbox_core.defense.check_output` against the system prompt and the
canary: the verdict is in the response message's
``response_metadata["tokenbox_defense"]["output"]``, a leak (the canary, the
system prompt, a secret) is logged to ``tokenbox.security``, and with
``on_leak="raise"`` the model call raises
:class:`~tokenbox_core.errors.SecurityError` instead of passing the answer on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from tokenbox_core import Section, TokenCounter
from tokenbox_core.defense import DefensePolicy, DefenseReport, check_output, defend_sections, hierarchy_statement
from tokenbox_core.errors import ConfigTypeError, SecurityError
from tokenbox_core.tokens import content_text

__all__ = ["LEAK_ACTIONS", "METADATA_KEY", "SystemDefense", "check_defense", "defense_statement", "screen_result"]

_SECURITY_LOG = logging.getLogger("tokenbox.security")
"""The core's security-event logger (``tokenbox_core.defense``: "Security events are logged to the
``tokenbox.security`` logger")."""

LEAK_ACTIONS = ("flag", "raise")
"""What ``TokenBoxMiddleware(on_leak=...)`` does with a response that leaks: record it, or raise."""

METADATA_KEY = "tokenbox_defense"
"""Where a screened tool result records the decision (``response_metadata``)."""


def check_defense(policy: Any) -> None:
    """A ``TypeError`` unless ``policy`` is a ``DefensePolicy``."""
    if not isinstance(policy, DefensePolicy):
        raise ConfigTypeError(
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


class SystemDefense:
    """The defended system prompt of an agent and the report its responses are checked against.

    :meth:`statement` is the instruction-hierarchy statement with the canary for a system prompt
    (:func:`~tokenbox_core.defense.defend_sections` on it, its source type ``"system"``, trusted).  It holds
    the one system prompt it last defended (one entry, the prompt's text and its report): the canary is an
    HMAC over the prompt, so an agent whose system prompt does not change derives it once rather than on every
    model call, and every request carries the same system message (the provider's prompt cache keeps
    serving it).  Owner: the middleware.
    """

    def __init__(self, policy: DefensePolicy, counter: TokenCounter, on_leak: str) -> None:
        self.policy = policy
        self.counter = counter
        self.on_leak = on_leak
        self._last: tuple[str, DefenseReport] | None = None

    def report(self, system_text: str) -> DefenseReport:
        """The defence report of ``system_text`` (its canary, statement and trusted text)."""
        last = self._last
        if last is not None and last[0] == system_text:
            return last[1]
        sections = [Section("system", system_text, role="system", metadata={"source_type": "system"})]
        report = defend_sections(sections if system_text else [], self.policy, counter=self.counter).report
        self._last = (system_text, report)
        return report

    def checked(self, messages: list[BaseMessage], report: DefenseReport) -> list[BaseMessage]:
        """``messages`` (a model's response) with each answer's output check in its metadata; raises
        :class:`~tokenbox_core.errors.SecurityError` for a leak when ``on_leak="raise"``."""
        out: list[BaseMessage] = []
        for m in messages:
            if not isinstance(m, AIMessage):
                out.append(m)
                continue
            calls = [json.dumps(c.get("args"), sort_keys=True, default=str) for c in m.tool_calls]
            check = check_output("\n".join([content_text(m.content), *calls]), report)
            if not check.ok:
                _SECURITY_LOG.warning("defense: model output %s leaks: %s", m.id, check.to_dict())
                if self.on_leak == "raise":
                    check.raise_if_leaked()
            note = {**m.response_metadata.get(METADATA_KEY, {}), "output": check.to_dict()}
            out.append(m.model_copy(update={"response_metadata": {**m.response_metadata, METADATA_KEY: note}}))
        return out
