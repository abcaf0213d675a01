"""The agent-loop benchmark: what stays answerable, per token (issue 23).

Run on purpose (never by the tests for timing):

    PYTHONPATH=. .venv/bin/python benchmarks/bench_agent_loop.py          # 300 turns, tuning and held-out seed
    PYTHONPATH=. .venv/bin/python benchmarks/bench_agent_loop.py --quick  # 60 turns, CPU at 100: a smoke run

    PYTHONPATH=. .venv/bin/python benchmarks/bench_agent_loop.py --embedder tokenbox_core.session:MiniLMEmbedder

(``PYTHONPATH=.`` from the checkout's root, so that its ``tokenbox_core`` is the one measured; ``--embedder``
adds a ContextSession row whose recall fuses BM25 with that embedding model — slow on a CPU: every archived
message is embedded once per replay.)

A generated session (``_agent_sessions.agent_session``: a few hundred turns,
tool-heavy, filler drawn from real prose, facts of five kinds planted and asked
about many turns later) is replayed turn by turn through each manager at the
same budgets — a share of the whole session's size in tokens — and the same
exact counter (o200k, as ``gpt-4o``).  At every model call (before each
assistant message) the manager gets the messages that arrived since its last
call and returns the request; the scripted assistant reply then joins the
session.  Reported per manager and budget:

- facts: the share of planted facts whose text is in the request when the
  question about it is asked (anywhere: verbatim, in a summary, a preview, a
  recalled turn);
- invalid: requests a provider would reject (the core's ``conversation_problems``:
  an orphaned tool result, a call without its result, a message without content,
  an unknown role); over: requests larger than the budget;
- tokens sent: mean prompt tokens per call;
- cached: the share of prompt tokens a provider would serve from its prefix
  cache (``simulate_cache``; OpenAI's automatic prefix rules, and Anthropic's
  with breakpoints after the system prompt and on the last message), and the
  session's input cost in dollars with cached reads at a 10th of the price
  (OpenAI at $2.50/M with a 90 % discount; Anthropic at $3/M, reads 0.1×,
  writes 1.25×);
- CPU: process CPU milliseconds per call inside the manager (add + compile,
  recall included), mean and 95th percentile over the session; and, apart, per
  call at 500 turns: each manager is given the first 480 turns in one batch
  (not timed), then called at every model call of the last 20 turns (timed).

Goals (issue 23): ≥ 90 % of facts at 10 % of the session's size, 0 invalid
requests, ≥ 80 % of prompt tokens cacheable, ≤ 50 ms per call at 500 turns.
The held-out seed (``HELD_OUT_SEED``) is reported apart and never tuned on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agent_managers import COUNTER, Manager, count, managers, with_embedder
from _agent_sessions import HELD_OUT_SEED, KINDS, TUNING_SEEDS, AgentSession, agent_session, message_text

from tokenbox_core.cache import cache_rules, simulate_cache
from tokenbox_core.chat import conversation_problems

BUDGET_SHARES = (0.05, 0.10, 0.25)
PROVIDERS = {"OpenAI": cache_rules("openai").with_discount(0.9), "Anthropic": cache_rules("anthropic")}


@dataclass
class Replay:
    """What one manager sent at every model call of a session."""

    manager: str
    budget: int
    calls: list[int] = field(default_factory=list)  # index of the assistant message each request precedes
    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # seconds inside the manager, per call


def replay(
    session: AgentSession, manager: Manager, budget: int, name: str = "", *, at: Sequence[int] | None = None
) -> Replay:
    """Feed ``session`` to ``manager`` call by call; record each request and the CPU time it took.

    ``at``: the model calls to make (indices of assistant messages; default every one).  Calling only
    where questions are asked (``questions(session)``) is faster and exact for stateless trimmers, but
    a stateful manager then sees the messages in fewer, larger batches than an agent loop would give it.
    """
    out = Replay(name or getattr(manager, "name", type(manager).__name__), budget)
    messages = [dict(m) for m in session.messages]
    seen = 0
    for call in session.calls() if at is None else at:
        new = messages[seen:call]
        t0 = time.process_time()
        request = manager(new)
        out.cpu.append(time.process_time() - t0)
        out.calls.append(call)
        out.requests.append(request)
        seen = call
    close = getattr(manager, "close", None)
    if callable(close):
        close()
    return out


def questions(session: AgentSession) -> list[int]:
    """The model calls that answer a question about a planted fact."""
    return sorted({fact.asked + 1 for fact in session.facts})


def sizes(requests: Sequence[list[dict[str, Any]]]) -> list[int]:
    """Exact prompt size of every request; a message object sent again is counted once."""
    seen: dict[int, int] = {}  # id() of a message the requests keep alive -> its size
    out = []
    for request in requests:
        total = count([])
        for m in request:
            size = seen.get(id(m))
            if size is None:
                size = seen[id(m)] = count([m]) - count([])
            total += size
        out.append(total)
    return out


def facts_present(session: AgentSession, run: Replay) -> list[bool]:
    """Per planted fact: is its text in the request made when the question about it is asked?"""
    by_call = dict(zip(run.calls, run.requests, strict=True))
    out = []
    for fact in session.facts:
        request = by_call[fact.asked + 1]  # the question is the last message before its scripted answer
        out.append(any(fact.value in message_text(m) for m in request))
    return out


def invalid_requests(run: Replay) -> list[tuple[int, list[str]]]:
    """(call index, problems) for every request a chat provider would reject (the core's checker,
    ``conversation_problems``: an orphaned tool result, a call without its result, no content, an unknown role)."""
    out = []
    for k, request in enumerate(run.requests):
        problems = [f"{p.kind}: {p}" for p in conversation_problems(request)]
        if problems:
            out.append((k, problems))
    return out


def cache_simulation(requests: Sequence[list[dict[str, Any]]], rules: Any) -> Any:
    """``simulate_cache`` over the recorded requests: request k is served as the k-th turn of a stand-in
    transcript, so the simulator prices exactly what the manager sent."""
    transcript = [{"role": "user", "content": f"request {k}", "id": f"request-{k}"} for k in range(len(requests))]
    return simulate_cache(transcript, lambda sent: requests[len(sent) - 1], rules=rules, counter=COUNTER)


@dataclass(frozen=True)
class Result:
    manager: str
    budget: int
    share: float
    facts: float
    facts_by_kind: dict[str, float]
    invalid: int
    over: int
    calls: int
    mean_tokens: float
    cached: dict[str, float]
    cost: dict[str, float]
    cpu_mean_ms: float
    cpu_p95_ms: float


def measure(session: AgentSession, run: Replay, share: float, *, cache: bool = True) -> Result:
    """Every figure of the table for one replay."""
    present = facts_present(session, run)
    by_kind = {}
    for kind in KINDS:
        flags = [p for p, f in zip(present, session.facts, strict=True) if f.kind == kind]
        by_kind[kind] = sum(flags) / len(flags) if flags else float("nan")
    sims = {name: cache_simulation(run.requests, rules) for name, rules in PROVIDERS.items()} if cache else {}
    prompt = [t.prompt_tokens for t in next(iter(sims.values())).turns] if sims else sizes(run.requests)
    cpu = sorted(run.cpu)
    return Result(
        manager=run.manager,
        budget=run.budget,
        share=share,
        facts=sum(present) / len(present) if present else float("nan"),
        facts_by_kind=by_kind,
        invalid=len(invalid_requests(run)),
        over=sum(s > run.budget for s in prompt),
        calls=len(run.requests),
        mean_tokens=statistics.fmean(prompt) if prompt else 0.0,
        cached={name: sim.cached_share for name, sim in sims.items()},
        cost={name: sim.cost for name, sim in sims.items()},
        cpu_mean_ms=statistics.fmean(cpu) * 1e3 if cpu else 0.0,
        cpu_p95_ms=cpu[min(len(cpu) - 1, int(0.95 * len(cpu)))] * 1e3 if cpu else 0.0,
    )


def run_session(
    session: AgentSession,
    makers: dict[str, Callable[[int], Manager]],
    shares: Sequence[float] = BUDGET_SHARES,
    *,
    cache: bool = True,
    done: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Replay ``session`` through every manager at every budget share (``done`` sees each result as it comes)."""
    size = count(session.messages)
    results = []
    for share in shares:
        budget = int(size * share)
        for name, make in makers.items():
            results.append(measure(session, replay(session, make(budget), budget, name), share, cache=cache))
            if done:
                done(results[-1])
    return results


def cpu_at(
    session: AgentSession, makers: dict[str, Callable[[int], Manager]], share: float = 0.10, tail: int = 20
) -> dict[str, list[float]]:
    """CPU seconds per call over the last ``tail`` turns, each manager first given everything before them at once."""
    budget = int(count(session.messages) * share)
    calls = session.calls()
    start = next(c for c in calls if session.turn_of(c) >= session.turns - tail)
    timed = [c for c in calls if c >= start]
    out = {}
    for name, make in makers.items():
        warm = calls[calls.index(start) - 1]
        out[name] = replay(session, make(budget), budget, name, at=[warm, *timed]).cpu[1:]
    return out


HEADER = (
    f"{'manager':<40}{'budget':>14}{'facts':>7}{'invalid':>8}{'over':>7}{'tokens/call':>12}"
    f"{'cached OA':>10}{'cached An':>10}{'$ OA':>8}{'$ An':>8}{'ms/call':>9}{'p95':>7}"
)


def row(r: Result) -> str:
    """One line of the table: a manager at one budget."""
    cached = [f"{r.cached[p]:>10.1%}" if p in r.cached else f"{'-':>10}" for p in PROVIDERS]
    cost = [f"{r.cost[p]:>8.2f}" if p in r.cost else f"{'-':>8}" for p in PROVIDERS]
    return (
        f"{r.manager:<40}{f'{r.share:.0%} = {r.budget:,}':>14}{r.facts:>7.0%}{r.invalid:>8}{r.over:>7}"
        f"{r.mean_tokens:>12,.0f}{''.join(cached)}{''.join(cost)}{r.cpu_mean_ms:>9.1f}{r.cpu_p95_ms:>7.1f}"
    )


def table(results: Sequence[Result]) -> str:
    """A plain-text table, one row per manager and budget."""
    return "\n".join([HEADER, "-" * len(HEADER), *map(row, results)])


def kinds_table(results: Sequence[Result], share: float) -> str:
    """Facts present by kind at one budget share."""
    rows = [f"{'manager':<40}" + "".join(f"{k:>10}" for k in KINDS)]
    for r in results:
        if abs(r.share - share) < 1e-9:
            rows.append(f"{r.manager:<40}" + "".join(f"{r.facts_by_kind[k]:>10.0%}" for k in KINDS))
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--cpu-turns", type=int, default=500, help="session length of the CPU measurement (0: none)")
    parser.add_argument("--quick", action="store_true", help="60 turns (CPU at 100), for a smoke run")
    parser.add_argument("--seeds", type=int, nargs="*", default=[TUNING_SEEDS[0], HELD_OUT_SEED])
    parser.add_argument("--shares", type=float, nargs="*", default=list(BUDGET_SHARES))
    parser.add_argument(
        "--embedder", default=None, help="module:name of a text -> vector embedder for a ContextSession row"
    )
    parser.add_argument("--only", nargs="*", default=None, help="managers whose name contains one of these words")
    args = parser.parse_args(argv)
    turns = 60 if args.quick else args.turns
    makers = managers()
    if args.embedder:
        embedded = with_embedder(args.embedder)
        makers = {embedded.name: embedded, **makers}  # type: ignore[attr-defined]
    if args.only:
        makers = {n: m for n, m in makers.items() if any(w.lower() in n.lower() for w in args.only)}
    print(__doc__.split("\n\n")[0])
    for name, note in notes(makers).items():
        print(f"  {name}: {note}")
    by_seed: dict[int, list[Result]] = {}
    for seed in args.seeds:
        session = agent_session(turns, seed=seed)
        label = "held-out seed, never tuned on" if seed == HELD_OUT_SEED else "tuning seed"
        print(
            f"\n## seed {seed} ({label}): {session.turns} turns, {len(session.messages):,} messages, "
            f"{len(session.calls()):,} model calls, {count(session.messages):,} tokens, {len(session.facts)} facts"
        )
        print(HEADER + "\n" + "-" * len(HEADER), flush=True)
        by_seed[seed] = run_session(session, makers, args.shares, done=lambda r: print(row(r), flush=True))
        results = by_seed[seed]
        print(f"\nfacts present at 10 % by kind (seed {seed}):")
        print(kinds_table(results, 0.10))
    cpu_turns = 100 if args.quick else args.cpu_turns
    cpu_ms: dict[str, float] = {}
    if cpu_turns:
        session = agent_session(cpu_turns, seed=args.seeds[0])
        print(f"\n## CPU per call at {cpu_turns} turns (seed {args.seeds[0]}, budget 10 %, the last 20 turns' calls)")
        print(f"{'manager':<40}{'calls':>7}{'mean ms':>9}{'p95 ms':>8}{'max ms':>8}")
    for name, cpu in cpu_at(session, makers).items() if cpu_turns else ():
        cpu.sort()
        p95 = cpu[min(len(cpu) - 1, int(0.95 * len(cpu)))]
        cpu_ms[name] = statistics.fmean(cpu) * 1e3
        print(f"{name:<40}{len(cpu):>7}{cpu_ms[name]:>9.1f}{p95 * 1e3:>8.1f}{cpu[-1] * 1e3:>8.1f}", flush=True)
    print(f"\n## Goals (issue 23): facts >= 90 % and cached >= 80 % at 10 %, 0 invalid, <= 50 ms/call at {cpu_turns}")
    print(goals(by_seed, cpu_ms))


def goals(by_seed: dict[int, list[Result]], cpu_ms: dict[str, float], share: float = 0.10) -> str:
    """Per manager: facts at ``share`` on each seed, invalid requests over every run, cached shares at ``share``
    (first seed), CPU per call; each against the issue's goal (``ok`` / ``--``)."""

    def mark(good: bool) -> str:
        return "ok" if good else "--"

    seeds = list(by_seed)
    head = f"{'manager':<40}" + "".join(f"{f'facts s{seed}':>14}" for seed in seeds)
    head += f"{'invalid':>10}{'cached OA':>12}{'cached An':>12}{'ms/call':>11}"
    rows = [head]
    for name in dict.fromkeys(r.manager for r in by_seed[seeds[0]]):
        at = {
            seed: next(r for r in by_seed[seed] if r.manager == name and abs(r.share - share) < 1e-9) for seed in seeds
        }
        invalid = sum(r.invalid for results in by_seed.values() for r in results if r.manager == name)
        first = at[seeds[0]]
        row = f"{name:<40}" + "".join(f"{at[seed].facts:>11.0%} {mark(at[seed].facts >= 0.9)}" for seed in seeds)
        row += f"{invalid:>7} {mark(invalid == 0)}"
        row += "".join(f"{first.cached.get(p, 0.0):>9.1%} {mark(first.cached.get(p, 0.0) >= 0.8)}" for p in PROVIDERS)
        ms = cpu_ms.get(name)
        row += f"{ms:>8.1f} {mark(ms <= 50)}" if ms is not None else f"{'-':>11}"
        rows.append(row)
    return "\n".join(rows)


def notes(makers: dict[str, Any]) -> dict[str, str]:
    """One line per manager on how it is configured (its docstring's first paragraph)."""
    return {n: " ".join((m.__doc__ or "").strip().split("\n\n")[0].split()) for n, m in makers.items() if m.__doc__}


if __name__ == "__main__":
    main()
