"""Managed history: the summary section, then the recent window, fitted by the conversation engine
(chapter §6.10.3 Algorithm 6.7 "assemble managed history", §6.10.5 rehydration, §6.7.2 pointers).

>>> from tokenbox_core.session import MemorySessionStore
>>> store = MemorySessionStore()
>>> ids = store.extend("s", [{"role": "system", "content": "be brief"}] + [
...     {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} about the plan"} for i in range(60)])
>>> history = ManagedHistory(store, "s", budget=200, counter="whitespace", window=10, interval=10)
>>> ctx = history.compile()
>>> [m["role"] for m in ctx.messages[:2]], ctx.messages[1]["content"].splitlines()[0]
(['system', 'system'], 'CONVERSATION_SUMMARY (turns t_2–t_51; rehydrate(ids) restores any of them)')
>>> ctx.total_tokens <= 200
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core.chat import ConversationFit, fit_conversation
from tokenbox_core.chat._validate import checked_conversation
from tokenbox_core.errors import SessionError
from tokenbox_core.session._checkpoints import CheckpointConfig, Checkpointer, Checkpoints
from tokenbox_core.session._hygiene import Decay, HygieneItem, evict, staleness_signals
from tokenbox_core.session._model import Turn
from tokenbox_core.session._rehydrate import rehydration_pointer
from tokenbox_core.session._store import SessionStore
from tokenbox_core.session._summarize import Summarizer, turn_line
from tokenbox_core.tokens import TokenCounter, get_counter
from tokenbox_core.tokens._messages import message_token_count

__all__ = ["ManagedContext", "ManagedHistory", "SUMMARY_HEADER", "REHYDRATED_HEADER"]

SUMMARY_HEADER = "CONVERSATION_SUMMARY"
"""First word of the summary section (Algorithm 6.7's ``SectionHeader("CONVERSATION_SUMMARY")``)."""
REHYDRATED_HEADER = "REHYDRATED"
"""First word of the message carrying rehydrated turns for one compile."""
_RECENT = "RECENT_CONVERSATION follows."
_SUMMARY_PRIORITY = 10  # the history window (priority 0) is lost before the summaries
_MAX_ROUNDS = 8
_POINTER_SHARE = 20  # a 20th of the budget is left for the pointer naming what the fit evicts


@dataclass(frozen=True)
class ManagedContext:
    """One compile of a session's history.

    Attributes:
        messages: neutral messages to send: leading system messages, rehydrated turns, the summary section,
            the rehydration pointer for what the budget evicted, then the recent window.
        fit: the conversation engine's result (its layout and trace).
        checkpoints: the summaries and the window this compile started from.
        evicted: turn ids of the window the budget evicted (named in the pointer).
        rehydrated: turn ids included, pinned, for this compile only.
        pointer: the omission marker's text, or None when nothing was evicted.
        total_tokens: what :attr:`messages` cost, counted as sent (the pointer included).
    """

    messages: list[dict[str, Any]]
    fit: ConversationFit
    checkpoints: Checkpoints
    evicted: tuple[str, ...]
    rehydrated: tuple[str, ...]
    pointer: str | None
    total_tokens: int


def summary_section(checkpoints: Checkpoints) -> str | None:
    """The summary section's text: header, then each summary with its id and the turns it covers."""
    if not checkpoints.summaries:
        return None
    ids = checkpoints.archived_turn_ids
    lines = [f"{SUMMARY_HEADER} (turns {ids[0]}–{ids[-1]}; rehydrate(ids) restores any of them)"]
    for s in checkpoints.summaries:
        lines.append(f"[{s.summary_id}: turns {s.source_turn_ids[0]}–{s.source_turn_ids[-1]}]")
        lines.append(s.text)
    lines.append(_RECENT)
    return "\n".join(lines)


class ManagedHistory:
    """A session's history compiled as the chapter assembles it (Algorithm 6.7): the summary section, then the
    recent window, fitted to ``budget`` by :func:`tokenbox_core.chat.fit_conversation`.

    Each compile updates the checkpoints (summaries are generated once and reused), takes the pending
    rehydration requests (the turns are included pinned for this compile only, displacing the window), fits
    the window under the budget (oldest first, tool groups whole), replaces what was evicted by a rehydration
    pointer naming every id, and records newly evicted and newly summarised turns as eviction events.

    Args:
        store: the session archive; session_id: the session.
        budget: tokens for the history (an int or a ``ContextBudget``), counted with ``counter``.
        counter: token counter or model name (the chat engine's counters).
        summarizer: defaults to the extractive summarizer.
        summary_role: role of the summary, rehydration and pointer messages (``"system"`` stands after the
            leading system messages, where every provider accepts it).
        hygiene: a decay model (or one per role: ``{"tool": ExponentialDecay(0.5), "default": ...}``); when
            given, the window is evicted in Algorithm 6.5's order — highest ``(1 − relevance) × tokens`` first,
            relevance decayed by turns since the last reference (§6.8.2) and halved for superseded or
            invalidated turns (§6.8.4) — instead of oldest first.  Tool groups stay whole.
        window: ``"budget"`` (the default): the recent window is as many of the newest turns as fill what the
            summary section leaves of the budget (less a 20th for the pointer), so it grows with the budget and
            the whole budget is used; or a number of turns (:class:`CheckpointConfig`'s ``window``).
        checkpoint options (``interval``, ...): see :class:`CheckpointConfig`.
    """

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        *,
        budget: int | ContextBudget,
        counter: str | TokenCounter = "gpt-4o",
        summarizer: Summarizer | None = None,
        summary_role: str = "system",
        hygiene: Decay | Mapping[str, Decay] | None = None,
        config: CheckpointConfig | None = None,
        **checkpoint_options: Any,
    ) -> None:
        window = checkpoint_options.pop("window", "budget" if config is None else config.window)
        if window != "budget" and (isinstance(window, bool) or not isinstance(window, int) or window < 0):
            raise SessionError(f"window must be 'budget' or a number of turns >= 0, got {window!r}")
        self.window: int | str = window
        if isinstance(window, int):
            checkpoint_options["window"] = window
        if summary_role not in ("system", "user", "assistant"):
            raise SessionError(f"summary_role must be 'system', 'user' or 'assistant', got {summary_role!r}")
        self.budget = ContextBudget.coerce(budget)
        self.counter = counter
        self.summary_role = summary_role
        self.hygiene = hygiene
        self.checkpointer = Checkpointer(
            store, session_id, summarizer=summarizer, counter=counter, config=config, **checkpoint_options
        )
        self.store = store
        self.session_id = session_id
        self._recorded: set[str] | None = None
        self._archived_seen = 0

    def compile(self, *, system: Sequence[Mapping[str, Any]] = (), budget: int | None = None) -> ManagedContext:
        """Compile the session's history now (see the class docstring).

        Args:
            system: extra leading system messages that are not stored in the session (a system prompt).
            budget: overrides the budget's maximum for this compile.
        """
        limit = self.budget if budget is None else ContextBudget.coerce(budget)
        if self.window == "budget":
            first = self._budget_window(limit, limit.capacity * 3 // 4)
            cp = self.checkpointer.update(window=first)
            # the whole budget, as a session's history tier uses it: the window takes what the summaries leave
            section = summary_section(cp)
            used = self._size({"role": self.summary_role, "content": section}) if section is not None else 0
            room = limit.capacity - used - limit.capacity // _POINTER_SHARE
            grown = self._budget_window(limit, room)
            if grown > first:
                cp = self.checkpointer.update(window=grown)
        else:
            cp = self.checkpointer.update(window=None)
        pinned_ids = self.store.take_rehydration(self.session_id)
        window_ids = {t.turn_id for t in cp.window}
        pinned = [t for t in self.store.get_turns(self.session_id, pinned_ids) if t.turn_id not in window_ids]
        head: list[dict[str, Any]] = [dict(m) for m in system] + [t.as_message() for t in cp.system]
        if pinned:  # before the summary: critical messages form one leading run
            head.append(self._rehydrated(pinned))
        section = summary_section(cp)
        if section is not None:
            override = {"critical": False, "priority": _SUMMARY_PRIORITY}
            head.append({"role": self.summary_role, "content": section, "id": "summary", "tokenbox": override})
        window = self._window(cp.window)
        fit, evicted, pointer = self._fit(head, window, limit, cp)
        messages = [dict(m) for m in fit.messages]
        total = fit.total_tokens
        if pointer is not None:
            total += fit.conversation.counter.size({"role": self.summary_role, "content": pointer}, None)
            at = next((i for i, m in enumerate(messages) if m.get("id") in window_ids), len(messages))
            messages.insert(at, {"role": self.summary_role, "content": pointer})
        self._record(cp, evicted)
        return ManagedContext(messages, fit, cp, evicted, tuple(t.turn_id for t in pinned), pointer, total)

    def _size(self, message: Mapping[str, Any]) -> int:
        return message_token_count(message, get_counter(self.counter))

    def _budget_window(self, budget: ContextBudget, room: int) -> int:
        """``window="budget"``: the most recent turns that fill ``room`` tokens (first three quarters of the
        budget, to see what the summaries take; then what they leave, less a pointer's reserve), so the window
        grows with the budget and the whole budget is used, as a session's history tier does."""
        turns = self.checkpointer.turns()  # read once and counted by the checkpointer
        lead = next((n for n, t in enumerate(turns) if t.role not in ("system", "developer")), len(turns))
        room -= sum(self.checkpointer.tokens(t) for t in turns[:lead])
        count = 0
        for turn in reversed(turns[lead:]):
            room -= self.checkpointer.tokens(turn)
            if room < 0:
                break
            count += 1
        return count

    def _window(self, turns: Sequence[Turn]) -> list[dict[str, Any]]:
        """The window's messages; with hygiene, each with a priority from its Algorithm 6.5 eviction rank."""
        messages = [t.as_message() for t in turns]
        if self.hygiene is None or not turns:
            return messages
        signals = staleness_signals(turns)
        now = turns[-1].seq
        items = []
        for t in turns:
            s = signals[t.turn_id]
            stale = 0.5 if (s.superseded_by or s.invalidated_by) else 1.0
            items.append(
                HygieneItem(
                    t.turn_id,
                    self.checkpointer.tokens(t),
                    inserted_turn=t.seq,
                    inserted_at=t.created_at,
                    last_referenced_turn=s.last_referenced_turn,
                    kind=t.role if isinstance(self.hygiene, Mapping) and t.role in self.hygiene else "default",
                    base_relevance=stale,
                )
            )
        result = evict(items, 0, turn=now, decay=self.hygiene, now=turns[-1].created_at)
        rank = {it.id: r - len(items) for r, it in enumerate(result.evicted)}  # target 0: the whole order
        group: dict[str, str] = {}  # a tool group is evicted whole: all members take its most evictable rank
        for m in messages:
            for call in m.get("tool_calls") or ():
                group[str(call.get("id"))] = str(m["id"])
        for m in messages:
            head = group.get(str(m.get("tool_call_id")))
            if head is not None:
                rank[head] = rank[str(m["id"])] = min(rank[head], rank[str(m["id"])])
        for m in messages:
            head = group.get(str(m.get("tool_call_id")))
            options = dict(m.get("tokenbox") or {})
            options.setdefault("priority", rank[head] if head is not None else rank[str(m["id"])])
            m["tokenbox"] = options
        return messages

    def _rehydrated(self, turns: Sequence[Turn]) -> dict[str, Any]:
        body = "\n".join(turn_line(t.as_message()) for t in turns)
        text = f"{REHYDRATED_HEADER} (archived turns restored for this step):\n{body}"
        return {"role": self.summary_role, "content": text, "id": "rehydrated", "tokenbox": {"critical": True}}

    def _fit(
        self, head: list[dict[str, Any]], window: list[dict[str, Any]], budget: ContextBudget, cp: Checkpoints
    ) -> tuple[ConversationFit, tuple[str, ...], str | None]:
        """Fit head + window; when window turns are evicted, refit with room for the pointer naming them
        until the pointer fits (its size grows with what it names, so a few rounds settle it)."""
        messages = head + window
        window_ids = {str(m["id"]) for m in window}
        reserve = 0
        limit: int | None = None
        for _ in range(_MAX_ROUNDS):
            fit = self._fit_once(messages, budget, reserve)
            limit = fit.effective_max_tokens if limit is None else limit
            evicted = tuple(r.id for r in fit.removed if r.id in window_ids)
            dropped_summary = any(r.id == "summary" for r in fit.removed)
            if not evicted and not dropped_summary:
                return fit, (), None
            names = [*(s.summary_id for s in cp.summaries if dropped_summary), *evicted]
            pointer = rehydration_pointer(names, "older turns evicted for the token budget")
            cost = fit.conversation.counter.size({"role": self.summary_role, "content": pointer}, None)
            if fit.total_tokens + cost <= limit:
                return fit, evicted, pointer
            reserve = max(reserve + 1, cost)
        raise SessionError(  # pragma: no cover - the pointer's size is bounded by the window's ids
            f"could not fit the rehydration pointer after {_MAX_ROUNDS} rounds; raise the budget"
        )

    def _fit_once(self, messages: list[dict[str, Any]], budget: ContextBudget, reserve: int) -> ConversationFit:
        if reserve:
            target = budget.target_tokens if budget.target_tokens is not None else budget.max_tokens
            budget = ContextBudget(
                max_tokens=max(1, budget.max_tokens - reserve),
                target_tokens=max(0, min(budget.max_tokens - reserve, target - reserve)),
                output_reserve=min(budget.output_reserve, max(0, budget.max_tokens - reserve - 1)),
                reserved_slots=budget.reserved_slots,
                estimation_safety_margin_percent=budget.estimation_safety_margin_percent,
            )
        # the window may open inside a tool group whose call a summary covers: that result cannot be sent alone
        # (the session's own repair, not the user's: no ConversationRepairWarning)
        sendable = [dict(m) for m in checked_conversation(messages, on_invalid="repair", warn=False).messages]
        return fit_conversation(sendable, budget, counter=self.counter, include_system="leading")

    def _record(self, cp: Checkpoints, evicted: Sequence[str]) -> None:
        if self._recorded is None:
            self._recorded = {i for e in self.store.evictions(self.session_id) for i in e.turn_ids}
        archived = cp.archived_turn_ids  # grows as a prefix: only its new tail needs looking at
        start = self._archived_seen if self._archived_seen <= len(archived) else 0
        summarised = [i for i in archived[start:] if i not in self._recorded]
        self._archived_seen = len(archived)
        if summarised:
            self.store.record_eviction(self.session_id, summarised, "summarized")
            self._recorded.update(summarised)
        budget = [i for i in evicted if i not in self._recorded]
        if budget:
            self.store.record_eviction(self.session_id, budget, "budget")
            self._recorded.update(budget)
