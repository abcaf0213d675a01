"""``ContextSession``: the agent loop's context — every message archived, each turn compiled with the history
that fits, what was evicted recalled when the question needs it.

>>> from tokenbox_core import ContextSession
>>> session = ContextSession(None, "demo", budget=400, counter="whitespace")
>>> ids = session.add([{"role": "user", "content": "The deploy key lives in vault/prod/deploy."},
...                    {"role": "assistant", "content": "Noted."}])
>>> for i in range(40):
...     ids = session.add([{"role": "user", "content": f"chat {i} about the weather and lunch"},
...                        {"role": "assistant", "content": f"reply {i} about sunshine"}])
>>> ids = session.add([{"role": "user", "content": "Where does the deploy key live?"}])
>>> compiled = session.compile(policy="Answer briefly.")
>>> compiled.recalled, compiled.total_tokens <= 400
(('t_1', 't_2'), True)
>>> block, question = compiled.messages[-1]["content"]  # the block, then the user's own words
>>> "vault/prod/deploy" in block["text"], question["text"]
(True, 'Where does the deploy key live?')

The compile (:meth:`ContextSession.compile`) is the prefill compiler
(:class:`~tokenbox_core.ContextCompiler`) with the history tier taken from the
archive (:mod:`tokenbox_core.session._window`): the history fills what the other
tiers leave, newest first, tool groups whole; old tool results are masked and
oversized ones shown as previews before anything is left out; what is left out
is named by one counted omission pointer; recall
(:mod:`tokenbox_core.session._recalled`) brings back the omitted messages the
current question needs, under ``RecallConfig.share`` of the budget.  Pointer and
recall form one delimited text, the first content part of the current user
message (its own words follow unchanged as their own part): after the stable
prefix, and never two user messages in a row.  Under a
:class:`~tokenbox_core.defense.DefensePolicy` that part is screened as
``"memory"`` — untrusted, spotlighted and wrapped like other recalled material —
not as the user's words.  The archive is never rewritten.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tokenbox_core._arguments import check_arguments, check_keywords
from tokenbox_core._budget import ContextBudget
from tokenbox_core._sections import Section
from tokenbox_core.cache._window import CacheWindow
from tokenbox_core.chat._validate import MESSAGE_ROLES, check_conversation, check_on_invalid
from tokenbox_core.compiler import CompiledContext, CompilerConfig, ContextCompiler
from tokenbox_core.errors import SessionError
from tokenbox_core.request import ModelRequest, PreparedRequest
from tokenbox_core.session._allocate import recall_room as recall_room_for
from tokenbox_core.session._archive import Archive, sync_new
from tokenbox_core.session._checkpoints import Checkpointer
from tokenbox_core.session._model import Summary, Turn, message_text, plain_message
from tokenbox_core.session._open import open_store
from tokenbox_core.session._options import MaskingConfig, OffloadConfig, RecallConfig, coerce_option
from tokenbox_core.session._recall import Hit
from tokenbox_core.session._recalled import (
    Recalled,
    RecallLines,
    block_message,
    pointer_line,
    recall,
)
from tokenbox_core.session._step import fit_step, given_back, summaries_for
from tokenbox_core.session._store import SessionStore
from tokenbox_core.session._view import Rows, View, offload_preview
from tokenbox_core.session._window import STEP_GRAIN, WindowPlan, Windows

__all__ = ["ContextSession"]


_PASSES = 4
_LOW_WATER = 0.85
"""A session's window without ``cache_aware``: after its cut moves it holds about 85 % of its room, so it moves in
steps of 15 % of the budget and the request's prefix (system, tools, history) stays byte-identical between moves —
what prompt caching needs (a window sliding by one message every turn changes its first message every turn; no
provider can then serve anything past the system prompt from cache).  Retention is unchanged on the agent-loop
benchmark (recall covers what the step leaves out)."""
_ARGUMENTS = (
    "budget",
    "counter",
    "config",
    "recall",
    "masking",
    "offload",
    "cache_aware",
    "on_invalid",
    "defense",
)


class ContextSession:
    """One conversation's context across an agent loop (see the module docstring and ``/docs``).

    Args:
        store: a :class:`SessionStore`, a path (a SQLite archive file, created when missing), a PostgreSQL URI
            (``postgresql://user@host/db``: :class:`~tokenbox_core.session.PostgresSessionStore`), or ``None`` (in
            memory).
        session_id: the conversation's id in the store.
        budget: the window of :meth:`compile` (an int or a :class:`~tokenbox_core.ContextBudget`).
        counter: any :func:`~tokenbox_core.get_counter` spec.
        config: a :class:`~tokenbox_core.CompilerConfig` (``output`` must be ``"messages"``); the default
            requires no section (a session may be compiled without a policy).
        recall / masking / offload: ``True`` (defaults), ``False``, a :class:`RecallConfig` /
            :class:`MaskingConfig` / :class:`OffloadConfig`, or a dict of its fields.
        cache_aware: ``True`` or a :class:`~tokenbox_core.cache.CacheWindow`: the window moves in blocks at
            tool-group boundaries and the compile is assembled by volatility (prompt caching).  The session plans
            the window (its ``low_water``); the compiler only orders it and never cuts it again (the block names
            what the window leaves out: the window's ``summarizer``, ``summary_tokens`` and ``role`` are unused).
        defense: a :class:`~tokenbox_core.defense.DefensePolicy` for hosts that screen tool results as they are
            produced (the LangChain middleware): what the session writes — the pointer and the recalled turns —
            is screened as untrusted memory (the compile's other tiers are not screened again; a ``config`` with
            ``defense`` screens every tier).
        on_invalid: ``"raise"`` a :class:`~tokenbox_core.errors.ConversationError` for messages a provider
            would reject, or ``"repair"``: :meth:`add` drops what cannot be sent (an unknown role, no content, a
            result answering no call) and :meth:`compile` leaves out calls without results (in the view only).
    """

    def __init__(
        self,
        store: SessionStore | str | os.PathLike[str] | None = None,
        session_id: str = "default",
        **options: Any,
    ) -> None:
        check_arguments("ContextSession", options, _ARGUMENTS, budget="budget")
        if "budget" not in options:
            raise SessionError("ContextSession needs budget=: the window compile() fits, e.g. budget=8000")
        if not isinstance(session_id, str) or not session_id:
            raise SessionError(f"session_id must be a non-empty string, got {session_id!r}")
        config = options.get("config") or CompilerConfig(required_sections=())
        if not isinstance(config, CompilerConfig):
            raise SessionError(f"config must be a CompilerConfig, got {type(config).__name__}")
        if config.output != "messages":
            raise SessionError("a ContextSession compiles chat messages: use CompilerConfig(output='messages')")
        cache = options.get("cache_aware", False)
        self.cache_window: CacheWindow | None = CacheWindow.coerce(cache) if cache else config.cache_window
        if self.cache_window is not None:  # the window is planned here (_plan), in blocks: the compile only orders it
            config = replace(config, cache_aware=replace(self.cache_window, cut_history=False))
        self.compiler = ContextCompiler(options["budget"], counter=options.get("counter", "o200k_base"), config=config)
        self.recall_config = coerce_option("recall", options.get("recall", True), RecallConfig)
        self.masking = coerce_option("masking", options.get("masking", True), MaskingConfig)
        self.offload_config = coerce_option("offload", options.get("offload", True), OffloadConfig)
        self.on_invalid = check_on_invalid(options.get("on_invalid", "raise"))
        self.defense = options.get("defense")
        if self.defense is not None:
            from tokenbox_core.defense import DefensePolicy  # loaded by the sessions that use it only

            if not isinstance(self.defense, DefensePolicy):
                raise SessionError(f"defense must be a tokenbox_core.defense.DefensePolicy, got {self.defense!r}")
        self._owns_store = not isinstance(store, SessionStore)
        self.store: SessionStore = open_store(store)
        self.session_id = session_id
        embedder = self.recall_config.embedder if self.recall_config else None
        rrf_k = self.recall_config.rrf_k if self.recall_config else 60
        self._checkpointer: Checkpointer | None = None
        self._rows = Rows(self.masking, self.offload_config)  # each archived message as shown, kept between compiles
        self._lines = RecallLines(self.compiler.counter)  # each ranked message's recall line, kept between compiles
        self.archive = Archive(self.store, session_id, self.compiler.counter, embedder=embedder, rrf_k=rrf_k)

    def __repr__(self) -> str:
        return f"ContextSession({self.store!r}, {self.session_id!r}, budget={self.compiler.budget.max_tokens})"

    def close(self) -> None:
        """Release the recall index, and the store when the session opened it from a path."""
        self.archive.close()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ContextSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the archive

    def add(self, messages: Iterable[Mapping[str, Any]] | Mapping[str, Any]) -> list[str]:
        """Validate neutral messages and archive them durably, in one transaction; return their archived ids.

        A tool result must answer a call archived before it or earlier in ``messages``; its call's other
        results may come in a later ``add``.  Atomic: a value that cannot be archived as given (a lone surrogate,
        ``bytes``, a date, a set, NaN, a non-string key) raises :class:`SessionError` naming the message's index
        in ``messages``, the field and the fix, and nothing of the batch is stored; a tuple is stored as a list.
        """
        given = [messages] if isinstance(messages, Mapping) else list(messages)
        batch = [plain_message(m, i) for i, m in enumerate(given)]  # every value checked before anything is stored
        # position -> the archived result it is the offload preview of (archived once, however often it comes back)
        archived = {i: aid for i, m in enumerate(batch) if (aid := self.archive.previewed(m)) is not None}
        fresh = [m for i, m in enumerate(batch) if i not in archived]
        checked = check_conversation(
            fresh, on_invalid=self.on_invalid, complete=False, known_calls=self.archive.call_ids(), roles=MESSAGE_ROLES
        )
        stored = self.archive.append(checked)
        if self.recall_config is not None and self.recall_config.summaries and stored:
            self._checkpoints().update()  # the summaries of blocks past 20 turns, as they complete (not in a compile)
        if not archived or len(checked) != len(fresh):  # a repair left messages out: the ids of what was stored
            return stored
        rest = iter(stored)
        return [archived[i] if i in archived else next(rest) for i in range(len(batch))]

    def offload(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Archive a tool result as it is produced and return what the agent's state should keep instead: its
        head/tail preview naming its archived id when it is over the offload threshold, else the message itself.

        The preview, when it comes back in a later request, is recognised as the archived result (it is not
        archived again, and the compile shows the archived result as its preview: once)."""
        if self.offload_config is None or message.get("role") != "tool" or not isinstance(message.get("content"), str):
            return dict(message)
        counter = self.compiler.counter
        tokens = counter.count(str(message["content"]))
        if tokens <= self.offload_config.threshold_tokens:
            return dict(message)
        (archived_id,) = self.add([message])
        preview = offload_preview({**message, "id": archived_id}, tokens, counter, self.offload_config)
        return {**message, "content": preview["content"]}

    def sync(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        """Archive what ``messages`` — a framework's whole current conversation — holds beyond the archive.

        Messages are matched by their ``"id"`` when every message has one, else by position and content
        (the archive's newest messages found at the end of what ``messages`` shares with it).  Returns the new
        archived ids.
        """
        given = [plain_message(m, i) for i, m in enumerate(messages)]  # errors name the index in ``messages``
        return self.add(sync_new(self.archive.turns(), given, self.archive.keys()))

    def messages(self) -> list[dict[str, Any]]:
        """Every archived message, in order, as it was added."""
        return [dict(t.message) for t in self.archive.turns()]

    def search(self, query: str, limit: int = 8) -> list[Turn]:
        """Archived messages ranked for ``query`` (the ranking recall uses), best first."""
        hits: list[Hit] = self.archive.index().search(query, limit=limit)
        return self.store.get_turns(self.session_id, [h.id for h in hits]) if hits else []

    def rehydrate(self, archived_id: str, offset: int = 0, limit: int | None = None) -> str:
        """The text of an archived message (any part of it: ``offset`` and ``limit`` in characters)."""
        turn = self.store.get_turns(self.session_id, [archived_id])[0]
        text = message_text(turn.message)
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= len(text):
            raise SessionError(
                f"offset must be an integer between 0 and {len(text)} (the length of {archived_id}), got {offset!r}"
            )
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise SessionError(f"limit must be an integer >= 0 or None, got {limit!r}")
        return text[offset:] if limit is None else text[offset : offset + limit]

    # ------------------------------------------------------------------ compile

    def _screened(self, text: str) -> str:
        """The session block screened by ``defense`` as untrusted memory (sanitised, scored, in a boundary)."""
        from tokenbox_core.defense import defend_sections  # only a session with a defence needs it

        assert self.defense is not None
        quiet = replace(self.defense, hierarchy=False, canary=False)  # the statement is the host's system message's
        section = Section("session-block", text, role="user", metadata={"source_type": "memory"})
        defended = defend_sections([section], quiet, counter=self.compiler.counter)
        return "\n".join(s.content for s in defended.sections if isinstance(s.content, str))

    def prepare(self, request: ModelRequest) -> PreparedRequest:
        """The messages of one model call: what ``request.messages`` hold beyond the archive is archived (by their
        ids), then the session compiles them into the request's window, its system text, tool schemas and
        response format reserved (:meth:`~tokenbox_core.request.ModelRequest.budget`).  Adapters call this once
        per model call and map the result back (``PreparedRequest.sources``); ``docs/request-path.md``."""
        if not isinstance(request, ModelRequest):
            raise SessionError(
                f"prepare() takes a tokenbox_core.request.ModelRequest, got {type(request).__name__}; build one "
                "with ModelRequest(messages, system=..., tools=..., window=...)"
            )
        self.sync(request.messages)
        counter = self.compiler.counter
        compiled = self.compile(budget=request.budget(counter), query=request.query)
        messages = tuple(dict(m) for m in compiled.messages)
        return PreparedRequest(messages, compiled.message_sources, compiled, request.tokens(counter, messages))

    @check_keywords
    def compile(
        self,
        *,
        user: str | None = None,
        query: str | None = None,
        policy: Any = None,
        developer: Any = None,
        task: Any = None,
        tools: Any = (),
        evidence: Any = (),
        memory: Any = (),
        budget: int | ContextBudget | None = None,
    ) -> CompiledContext:
        """Compile the session's context for the next model call (see the module docstring).

        Args:
            user: a current user message not in the archive (``add`` it first to keep it in the conversation).
            query: what recall searches for (default: ``user``, else the newest archived user message).
            policy, developer, task, tools, evidence, memory: the compiler's other tiers.
            budget: this compile's window (default: the session's).
        """
        compiler = self.compiler
        if budget is not None:
            compiler = ContextCompiler(budget, counter=compiler.counter, config=compiler.config)
        sources = {"policy": policy, "developer": developer, "task": task, "tools": tools}
        sources |= {"evidence": evidence, "memory": memory, "user": user}
        view = View(
            self.archive, self.masking, self.offload_config, self.on_invalid, has_user=user is not None, rows=self._rows
        )
        # the fixed tiers' size from the compiler's own layout and count, without a compile: one compile a turn
        fixed_tokens = compiler.measure(history=view.fixed_messages(), **sources)
        limit = compiler.budget.effective().max_tokens
        room = limit - fixed_tokens
        question = query if query is not None else (user if user is not None else view.anchor_text())
        compiled, plan, recalled, block = None, None, None, None
        block_source = "memory" if compiler.config.defense is not None else None  # recalled text is untrusted
        for _ in range(_PASSES):
            plan, block, recalled = self._plan(view, room, question, compiler.budget.max_tokens)
            if block is not None and self.defense is not None:
                block = {**block, "content": self._screened(str(block["content"]))}
            merged = block is not None and view.anchor is None and user is not None  # the block joins user=
            history = view.history_messages(plan, block, user=user if merged else None, block_source=block_source)
            compiled = compiler.compile(history=history, **(sources | {"user": None} if merged else sources))
            shown = {m.get("id") for m in compiled.messages}
            missing = sum(view.sizes[p] for p in plan.kept if view.ids[p] not in shown)
            over = compiled.total_tokens - limit
            if over <= 0 and not missing:
                break
            # counted otherwise than planned, so the compiler evicted some of the plan: plan with less (what it
            # still leaves out after the last pass, annotate() reports as omitted)
            room -= max(over, missing, 1)
        assert compiled is not None and plan is not None
        return view.annotate(compiled, plan, recalled, block=block)

    def _plan(
        self, view: View, room: int, question: str, max_tokens: int
    ) -> tuple[WindowPlan, dict[str, Any] | None, Recalled | None]:
        """The window, the session block (pointer + recall) and what was recalled, within ``room`` tokens."""
        counter = self.compiler.counter
        keep_last = self.masking.keep_last if self.masking is not None else 0
        # the window's cut moves in blocks (prompt caching: the prefix stays put between moves); the step comes
        # from the budget, not the room, so the cut's candidates stay put too
        low_water = self.cache_window.low_water if self.cache_window is not None else _LOW_WATER
        step = max(STEP_GRAIN, int(max_tokens * (1 - low_water)) // STEP_GRAIN * STEP_GRAIN)

        newest = view.newest_step()  # outranks recall, the pointer and older history

        windows = Windows(
            view.units, sizes=view.sizes, masked_sizes=view.masked_sizes, groups=view.groups, keep_last=keep_last,
            step=step,
        )  # fmt: skip

        def window(space: int) -> WindowPlan:
            sizes, shown = fit_step(view, newest, space) if newest else (view.sizes, {})
            plan = windows.plan(space, pinned=bool(newest), sizes=sizes)
            return replace(plan, shown={p: m for p, m in shown.items() if p in plan.kept}) if shown else plan

        plan = window(room)
        if not plan.omitted and not (plan.masked and self.recall_config is not None):
            return plan, None, None
        cfg = self.recall_config
        recall_room = 0
        if cfg is not None and self.cache_window is not None:  # a fixed room: the cut does not follow the question
            fixed = int(cfg.cached_share * max_tokens)
            recall_room = fixed if fixed >= cfg.min_share * max_tokens else 0
        elif cfg is not None:  # what the question's hits need, at most cfg.share of the room (see _allocate)
            candidates = sorted({*plan.omitted, *plan.masked})
            recall_room = recall_room_for(
                self.archive.index(),  # recall's own below (a window that is not cache-aware): one search a compile
                question,
                config=cfg,
                room=room,
                ids=view.ids,
                messages=view.messages,
                omitted=candidates,
                counter=counter,
                call_of=view.call_of,
                then=lambda taken: (lambda p: sorted({*p.omitted, *p.masked}))(window(room - taken)),
                lines=self._lines,
            )
        first_pointer = pointer_line(*view.omitted_ids(plan.omitted)) if plan.omitted else None
        reserve = view.size_of(block_message(first_pointer, None))
        step_tokens = sum(fit_step(view, newest, room - reserve)[0][p] for p in newest)
        recall_room = max(0, min(recall_room, room - reserve - step_tokens))
        for _ in range(_PASSES):
            plan = window(room - recall_room - reserve)
            pointer = pointer_line(*view.omitted_ids(plan.omitted)) if plan.omitted else None
            recalled = None
            # a masked result is shown as its placeholder: recall may bring its text back too (the window keeps
            # the placeholder, so the prefix does not change); its call is in the window
            candidates = sorted({*plan.omitted, *plan.masked})
            if cfg is not None and recall_room and candidates:
                # a cache-aware window's recall ranks by statistics that change only with its cut (the block
                # stays the same between moves); any other window moves with every message anyway
                index = (
                    self.archive.index()
                    if self.cache_window is None
                    else self.archive.prefix_index(max(candidates) + 1)
                )
                recalled = recall(
                    index,
                    question,
                    messages=view.messages,
                    ids=view.ids,
                    omitted=candidates,
                    call_of=view.call_of,
                    config=cfg,
                    room=recall_room + view.size_of(block_message(pointer, None)),  # recall_room for the lines
                    pointer=pointer,
                    counter=counter,
                    lines=self._lines,
                )
            block = block_message(pointer, recalled)
            cost = view.size_of(block)
            if plan.tokens + cost <= room:
                chosen: list[Summary] = []
                if cfg is not None and cfg.summaries and recalled is not None:
                    # what recall left of its share (a function of the cut), not the window's slack (it shrinks)
                    share_left = recall_room + view.size_of(block_message(pointer, None))
                    kept = len(view.ids) - min(plan.kept, default=len(view.ids))  # summaries of what it leaves out
                    space = min(share_left, room - plan.tokens)
                    cover = lambda k=kept: self._checkpoints().update(window=k).summaries  # noqa: E731
                    chosen = summaries_for(view, plan, recalled, cover, space, pointer, min_coverage=cfg.min_coverage)
                    recalled = replace(recalled, summaries=tuple(s.summary_id for s in chosen))
                return given_back(view, window, plan, recalled, chosen, room)
            reserve += plan.tokens + cost - room  # the pointer grew with what it names: plan with less
        return window(room), None, None  # not even the pointer fits the room: the window alone

    def _checkpoints(self) -> Checkpointer:
        """The session's checkpoint summaries, kept up to date at :meth:`add`: a block's summary is made once, when
        it is 20 turns old, so no compile makes the hundreds a long session's first summarised compile would."""
        if self._checkpointer is None:
            self._checkpointer = Checkpointer(self.store, self.session_id, counter=self.compiler.counter)
        return self._checkpointer
