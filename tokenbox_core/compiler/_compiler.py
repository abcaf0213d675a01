"""``ContextCompiler``: Collect → Filter → Rank → Compress → Assemble → Validate (chapter §6.4, Algorithm 6.1).

The class is a thin conductor; each stage is a pure function in its own
module over typed values (:class:`Candidates`, :class:`SectionPlan`,
:class:`Compressed`, :class:`Assembled`), so stages can be inserted between
them.  The defensive-compilation policy (``CompilerConfig.defense``) plugs
in through optional methods, each called at one stage boundary:

- ``screen(candidates) -> (candidates, exclusions)`` after Filter (sanitise, detect, drop);
- ``isolate(plans) -> plans`` after the sections are built (boundaries around untrusted text);
- ``isolation_strength(section_id, source_type) -> float`` for the injection-surface metric.

Compile-then-fit: the bodies are laid out into the window minus the
generation reserve and the assembly's scaffolding; the assembled output is
then counted exactly as it is sent and, should BPE merges at the joins leave
it over, laid out again with the excess taken off (at most a few passes).

>>> from tokenbox_core import ContextCompiler
>>> compiled = ContextCompiler(1000, counter="whitespace").compile(
...     policy="Answer in one sentence.", user="What is TokenBox?")
>>> [m["role"] for m in compiled.messages]
['system', 'user']
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from tokenbox_core._arguments import check_keywords, suggest_keywords
from tokenbox_core._budget import ContextBudget
from tokenbox_core.chat._validate import MESSAGE_ROLES, check_conversation
from tokenbox_core.compiler._assemble import Assembled, assemble, scaffold_reserve
from tokenbox_core.compiler._build import SectionPlan, build_plan
from tokenbox_core.compiler._collect import Candidates, collect, collect_async, has_async_sources
from tokenbox_core.compiler._compress import Compressed, compress, measure
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._context import CompiledContext
from tokenbox_core.compiler._filter import Exclusion, filter_candidates, reference_time
from tokenbox_core.compiler._finish import Laid, finish, policy_tokens
from tokenbox_core.compiler._overflow import OverflowEvent
from tokenbox_core.compiler._rank import rank_candidates
from tokenbox_core.compiler._refs import Reference, compress_references, dangling_references, restore_references
from tokenbox_core.compiler._stable import cache_aware_plans
from tokenbox_core.compiler._trace import input_hash
from tokenbox_core.compiler._turn_cache import TurnCache
from tokenbox_core.compiler._validate import density_violations, window_violations
from tokenbox_core.errors import CompilationError, CompilerInputError, Violation
from tokenbox_core.tokens import TokenCounter, get_counter

__all__ = ["CompiledContext", "ContextCompiler"]

_FIT_PASSES = 4


@suggest_keywords
class ContextCompiler:
    """The prefill compiler (chapter §6.4): typed sources in, a validated, traced context out.

    Args:
        budget: the window as an int or a :class:`ContextBudget`; its
            ``output_reserve`` is Tier 5, the generation reserve.
        counter: any :func:`get_counter` spec (default o200k_base, gpt-4o's encoding).
        config: a :class:`CompilerConfig` (default settings when omitted).
    """

    def __init__(
        self, budget: int | ContextBudget, *, counter: Any = "o200k_base", config: CompilerConfig | None = None
    ) -> None:
        self.budget = ContextBudget.coerce(budget)
        self.counter: TokenCounter = get_counter(counter)
        if config is None:
            config = CompilerConfig()
        if not isinstance(config, CompilerConfig):
            raise CompilerInputError(f"config must be a CompilerConfig, got {type(config).__name__}")
        self.config = config
        self._cache = TurnCache()  # per-text work (PII findings, sketches) kept for the next turn: docs/caches.md

    def __repr__(self) -> str:
        budget, counter = self.budget.max_tokens, self.counter.name
        return f"ContextCompiler(budget={budget}, counter={counter!r}, config={self.config.version})"

    @check_keywords
    def compile(
        self,
        *,
        policy: Any = None,
        developer: Any = None,
        task: Any = None,
        tools: Any = (),
        evidence: Any = (),
        memory: Any = (),
        history: Any = (),
        user: Any = None,
    ) -> CompiledContext:
        """Compile the given sources (values, or sync/async callables returning them)."""
        sources = _sources(policy, developer, task, tools, evidence, memory, history, user)
        started = time.perf_counter()
        if has_async_sources(sources):
            import asyncio  # only for async sources: importing tokenbox_core stays light

            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(self.acompile(**sources))
            raise CompilerInputError("async sources inside a running event loop: use `await compiler.acompile(...)`")
        candidates = collect(sources)
        return self.compile_candidates(candidates, started=started)

    async def acompile(self, **sources: Any) -> CompiledContext:
        """Like :meth:`compile`, awaiting async sources concurrently."""
        started = time.perf_counter()
        candidates = await collect_async({k: v for k, v in sources.items() if v is not None})
        return self.compile_candidates(candidates, started=started)

    # ------------------------------------------------------------------ the pipeline

    def compile_candidates(self, candidates: Candidates, *, started: float | None = None) -> CompiledContext:
        """Run Filter → Validate on collected candidates (the entry point for inserted stages and pages).

        §6.5.5's precedence statement is the compiler's own text, not the user's: when a compile fails only
        under a tight budget (the policy tier's constraint density, the window, an overflow) and fits without
        the statement, the statement is left out and a ``drop_precedence_statement`` event in the trace says so.
        """
        started = time.perf_counter() if started is None else started
        if candidates.history:  # the one conversation validator (issue 36 item 3), before any stage reads it
            checked = check_conversation(candidates.history, on_invalid=self.config.on_invalid, roles=MESSAGE_ROLES)
            candidates = replace(candidates, history=tuple(checked))
        try:
            return self._compile_candidates(candidates, started)
        except CompilationError as exc:
            failed = exc.rules
            plain = self._without_statement(exc)
            result = plain._compile_candidates(candidates, started)  # raises the user's material's own problem
        event = OverflowEvent(
            self.config.overflow_policy,
            "drop_precedence_statement",
            "policy",
            f"the precedence statement (CompilerConfig.precedence_statement) was left out: with it the compile "
            f"failed ({'; '.join(failed)}) under the {self.budget.max_tokens:,}-token budget",
        ).to_dict()
        trace = replace(result.trace, overflow_events=(*result.trace.overflow_events, event))
        return replace(result, trace=trace)

    @check_keywords
    def measure(
        self,
        *,
        policy: Any = None,
        developer: Any = None,
        task: Any = None,
        tools: Any = (),
        evidence: Any = (),
        memory: Any = (),
        history: Any = (),
        user: Any = None,
    ) -> int:
        """The ``total_tokens`` :meth:`compile` returns for these sources, counted as sent, without building what
        only a compile that is sent needs: the trace, the metrics, the checks, further pages.

        For a caller that plans one more tier in the room these sources leave (``ContextSession`` plans its
        history this way, then compiles once).  Raises what the layout raises (a critical overflow, an empty
        compile) and what the budget's rules raise (``window``, ``constraint_density``); as :meth:`compile` does,
        it leaves the precedence statement out when only that fits.  The other checks (required sections,
        metric gates, user checks) are left to the compile that is sent.

        >>> compiler = ContextCompiler(1000, counter="whitespace")
        >>> sources = {"policy": "Answer in one sentence.", "user": "What is TokenBox?"}
        >>> compiler.measure(**sources), compiler.compile(**sources).total_tokens
        (49, 49)
        """
        sources = _sources(policy, developer, task, tools, evidence, memory, history, user)
        if has_async_sources(sources):
            raise CompilerInputError("measure() takes values or sync callables: await acompile() for async sources")
        candidates = collect(sources)
        try:
            return self._measured(candidates)
        except CompilationError as exc:  # as compile() does: a tight budget's failure measured without the statement
            return self._without_statement(exc)._measured(candidates)

    def _measured(self, candidates: Candidates) -> int:
        """The laid-out total, checked against the rules a tight budget breaks (window, constraint density)."""
        laid = self._laid_out(candidates, traced=False)
        capacity = self.budget.effective().max_tokens
        window = self.budget.max_tokens
        violations = window_violations(
            laid.total, window=window, output_reserve=self.budget.output_reserve, capacity=capacity
        )
        violations += density_violations(policy_tokens(laid.compressed), capacity, self.config)
        if violations:
            raise CompilationError(violations)
        return laid.total

    def _without_statement(self, exc: CompilationError) -> ContextCompiler:
        """This compiler without the precedence statement, when ``exc`` is a tight budget's failure; else raise it."""
        if not self.config.precedence_statement or not set(exc.rules) <= {"constraint_density", "window", "overflow"}:
            raise exc
        plain = ContextCompiler(
            self.budget, counter=self.counter, config=replace(self.config, precedence_statement=False)
        )
        plain._cache = self._cache
        return plain

    def _compile_candidates(self, candidates: Candidates, started: float) -> CompiledContext:
        laid = self._laid_out(candidates, traced=True)
        result = finish(candidates, laid, started, budget=self.budget, counter=self.counter, config=self.config)
        defense = laid.defense
        if defense is not None and hasattr(defense, "finish"):  # phase 4 of Algorithm 6.6, then `.defense`
            result = defense.finish(result)
        if self.config.overflow_policy == "paginate" and _paged_out(laid.compressed):
            pages = self._paginate(laid.filtered, result)
            result = replace(pages[0], pages=pages)  # the returned context is page 1 of len(pages), and says so
        return result

    def _laid_out(self, candidates: Candidates, *, traced: bool) -> Laid:
        """Filter → Assemble and the count as sent (``traced``: with the input hash and the stage latencies)."""
        config = self.config
        stages: dict[str, float] = {}
        clock = _Stopwatch(stages)
        now = reference_time(candidates, config)
        defense = config.defense
        begins = defense is not None and hasattr(defense, "begin")  # a per-compile session (tokenbox_core.defense)
        digest = input_hash(candidates, config, self.budget, self.counter.name, now) if traced or begins else ""
        filtered, excluded = filter_candidates(candidates, config, now, self._cache)
        if begins:
            defense = defense.begin(digest, self.counter)
        if defense is not None and hasattr(defense, "screen"):
            filtered, screened = defense.screen(filtered)
            excluded += tuple(screened)
        clock.lap("filter")
        ranked = rank_candidates(filtered, config, self.counter, now)
        clock.lap("rank")
        plans = _isolated(build_plan(ranked, config, self.counter), defense)
        if not plans:
            raise CompilationError([Violation("required_sections", "nothing to compile: every source is empty")])
        window = config.cache_window
        if window is not None:  # issue 15: volatility order, history cut in prefix-stable blocks
            plans, cut = cache_aware_plans(
                ranked,
                plans,
                window,
                allocation=self._history_allocation,
                rebuild=lambda r: build_plan(r, config, self.counter),
                isolate=lambda ps: _isolated(ps, defense),
                counter=self.counter,
                measure=lambda s: measure(s, self.counter),
            )
            if cut is not None:
                excluded += tuple(Exclusion(i, "history", "cache_block", None) for i in cut.removed_ids)
        base_plans = plans
        clock.lap("build")
        dedup = compress_references(plans, config, self.counter, self._cache)
        clock.lap("references")
        compressed, assembled, total, refs = self._fit(dedup.plans, dedup.references, base_plans)
        clock.lap("compress+assemble")
        return Laid(
            filtered, ranked, compressed, assembled, total, refs, dedup.clusters, excluded, now, digest, stages, defense
        )

    def _history_allocation(self, plans: tuple[SectionPlan, ...]) -> int:
        """The history tier's tokens when ``plans`` are laid out (the block cut's capacity), in the units the cut
        compares it with: the messages' own sizes.  The other tiers are laid out as the compile will lay them out
        (their duplicates sent as pointers), the history as given: a duplicate tool output it would send as a
        pointer is not subtracted, else a history that fits whole looks too large for its allocation and is cut
        (and the pointers depend on what the cut keeps)."""
        dedup = compress_references(plans, self.config, self.counter, self._cache)
        history = {p.id for p in plans if p.elastic_tier == "history"}
        laid = tuple(raw if raw.id in history else p for raw, p in zip(plans, dedup.plans, strict=True))
        refs = tuple(r for r in dedup.references if r.section not in history)
        compressed, _assembled, _total, _refs = self._fit(laid, refs, plans)
        return int(compressed.allocations.get("history", 0))

    def _fit(
        self, plans: tuple[SectionPlan, ...], refs: tuple[Reference, ...], base_plans: tuple[SectionPlan, ...]
    ) -> tuple[Compressed, Assembled, int, tuple[Reference, ...]]:
        limit = self.budget.capacity
        correction = passes = 0
        while True:  # ends: each restore removes pointers for good, and over-budget passes are bounded
            compressed = compress(
                plans,
                budget=self.budget,
                scaffold=lambda ps: scaffold_reserve(ps, self.config, self.counter),
                correction=correction,
                config=self.config,
                counter=self.counter,
            )
            assembled = assemble(compressed.layout, compressed.plans, self.config)
            total = self._count(assembled)
            dangling = dangling_references(assembled, refs)
            if dangling:  # a canonical instance was evicted: its pointers get their original text back
                refs = tuple(r for r in refs if (r.section, r.item_id) not in dangling)
                plans = restore_references(plans, base_plans, dangling)
                continue
            if total <= limit or passes >= _FIT_PASSES:
                break
            correction += total - limit
            passes += 1
        return compressed, assembled, total, refs

    def _count(self, assembled: Assembled) -> int:
        return assembled.count(self.counter, self.config.output)

    def _paginate(self, filtered: Candidates, first: CompiledContext) -> tuple[CompiledContext, ...]:
        """Under ``paginate``: further pages carry every fixed tier and the evidence earlier pages could not hold."""
        pages = [first]
        remaining = [e for e in filtered.evidence if e.id not in _emitted_evidence(first)]
        while remaining:
            page = self._page(replace(filtered, evidence=tuple(remaining)))
            kept = _emitted_evidence(page)
            if not kept:
                break  # nothing more fits a page: the rest stays excluded (in each page's trace)
            pages.append(page)
            remaining = [e for e in remaining if e.id not in kept]
        total = len(pages)
        return tuple(replace(p, trace=replace(p.trace, page=i + 1, pages=total)) for i, p in enumerate(pages))

    def _page(self, candidates: Candidates) -> CompiledContext:
        """One further page of a paginated compile: the same pipeline, without further pagination."""
        single = ContextCompiler(
            self.budget, counter=self.counter, config=replace(self.config, overflow="truncate_lowest")
        )
        single._cache = self._cache
        page = single.compile_candidates(candidates)
        return replace(page, trace=replace(page.trace, overflow_policy="paginate"))


class _Stopwatch:
    def __init__(self, laps: dict[str, float]) -> None:
        self.laps = laps
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = (now - self.last) * 1000.0
        self.last = now


def _sources(
    policy: Any, developer: Any, task: Any, tools: Any, evidence: Any, memory: Any, history: Any, user: Any
) -> dict[str, Any]:
    raw = {
        "policy": policy,
        "developer": developer,
        "task": task,
        "tools": tools,
        "evidence": evidence,
        "memory": memory,
        "history": history,
        "user": user,
    }
    return {k: v for k, v in raw.items() if v is not None}


def _isolated(plans: tuple[SectionPlan, ...], defense: Any) -> tuple[SectionPlan, ...]:
    if defense is not None and hasattr(defense, "isolate"):
        return tuple(defense.isolate(plans))
    return plans


def _emitted_evidence(compiled: CompiledContext) -> set[str]:
    sections = {s.id: s for s in compiled.layout.sections}
    laid = sections.get("evidence")
    if laid is None or laid.status == "dropped" or not isinstance(laid.content, tuple):
        return set()
    return {i.id for i in laid.content}


def _paged_out(compressed: Compressed) -> bool:
    if not any(p.id == "evidence" for p in compressed.plans):
        return False
    return bool(compressed.layout["evidence"].removed) or compressed.layout["evidence"].status == "dropped"
