"""Long, tool-heavy agent sessions with planted facts, for the agent-loop benchmark and notebook 07.

:func:`agent_session` builds a deterministic session (one ``random.Random(seed)``,
no other randomness): a system prompt, then ``turns`` user turns, each a user
message, zero to four tool steps (an assistant message with OpenAI-shaped
``tool_calls`` and one ``tool`` result per call; some results are large) and an
assistant reply.  Facts of five kinds — numbers, file paths, shell commands,
names, decisions — are planted in user messages, tool results or assistant
replies, and a later user turn asks about each one (in the same words a user
would use, never containing the answer); the scripted reply to a question
states the fact.

The filler is real prose, not a small vocabulary: slices, at varying offsets and
lengths, of the repository's ``README.md`` and ``docs/`` and of the specification
texts in ``shared/seeds/`` beside the repository (used when present).  Synthetic
names (files, log lines) draw from the corpus's own words.

Every fact's text occurs in exactly one message before its question; the
generator checks it and raises ``AssertionError`` otherwise.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TUNING_SEEDS = (1, 2)
"""Seeds the benchmark may be looked at and tuned on."""
HELD_OUT_SEED = 9173
"""A seed never tuned on: the benchmark reports it apart."""

KINDS = ("number", "path", "command", "name", "decision")
COMPONENTS = (
    "billing-api", "ledger", "search-indexer", "auth-gateway", "report-builder", "media-transcoder",
    "notification-fanout", "session-cache", "feature-flags", "export-worker", "geo-resolver", "invoice-renderer",
)  # fmt: skip
NUMBER_ATTRS = {
    "port": "port",
    "connection pool size": "pool_size",
    "retry budget": "retry_budget",
    "p99 latency target in ms": "p99_target_ms",
    "shard count": "shards",
    "max batch size": "max_batch",
}
PATH_ATTRS = {
    "config file": "yaml",
    "migration script": "sql",
    "crash dump": "core",
    "TLS certificate": "pem",
    "feature flag file": "json",
}
COMMAND_ATTRS = ("reindex", "roll back", "warm the cache of", "backfill the schema of", "drain")
NAME_ATTRS = ("on-call owner", "code reviewer", "product contact", "security contact")
FIRST = (
    "Ilse", "Tomasz", "Priyanka", "Oluwaseun", "Mireille", "Kenji", "Anouk", "Radovan", "Saoirse", "Teodora",
    "Bashir", "Lucinda", "Evander", "Margit", "Yusuf", "Hallie", "Dragomir", "Ines", "Caspian", "Noor",
)  # fmt: skip
LAST = (
    "Vandermeer", "Okonkwo", "Lindqvist", "Marchetti", "Szabo", "Quintero", "Haldane", "Nakamura", "Brannigan",
    "Oyelaran", "Castellanos", "Wojcik", "Fairbanks", "Rautio", "Delacroix", "Abernathy", "Kowalczyk", "Ferreira",
)  # fmt: skip
DECISIONS = {
    "rollout strategy": (
        "canary deploys at {a} percent for {b} minutes",
        "a blue-green cutover after a {b}-minute soak",
    ),
    "storage engine": ("a {a}-node write quorum with {b} GB volumes", "a single primary with {a} read replicas"),
    "retry policy": ("exponential backoff capped at {a} attempts and {b} s", "a fixed {b} ms delay for {a} retries"),
    "caching approach": ("a write-through cache with a {b}-second ttl", "a read-aside cache of {a} MB per shard"),
}
BINARIES = (("kubectl", "rollout"), ("tbctl", "run"), ("make", "-C"), ("psql", "-f"), ("./scripts/ops.sh", "exec"))

ASK = {
    "number": ("What {attr} did we find for {component} earlier?", "Remind me, what is the {attr} of {component}?"),
    "path": ("Where is the {attr} of {component}?", "Which path held the {attr} for {component} again?"),
    "command": ("Which command do we use to {attr} {component}?", "What was the exact command to {attr} {component}?"),
    "name": ("Who is the {attr} for {component}?", "Remind me who we should ping as {attr} of {component}?"),
    "decision": (
        "What did we decide about the {attr} of {component}?",
        "Which {attr} did we settle on for {component}?",
    ),
}
TOOLS = ("read_file", "search_docs", "run", "list_dir", "grep")


@dataclass(frozen=True)
class Fact:
    """One planted fact: its text, where it was planted and where it is asked about."""

    kind: str
    value: str
    subject: str
    planted: int
    asked: int


@dataclass(frozen=True)
class AgentSession:
    """A generated session: the messages in order and the facts planted in them."""

    seed: int
    messages: tuple[dict[str, Any], ...]
    facts: tuple[Fact, ...]

    @property
    def turns(self) -> int:
        return sum(m["role"] == "user" for m in self.messages)

    def turn_of(self, index: int) -> int:
        """The user turn (0-based) message ``index`` belongs to; the system prompt is in turn -1."""
        return sum(m["role"] == "user" for m in self.messages[: index + 1]) - 1

    def calls(self) -> list[int]:
        """Indices of the assistant messages: the model is called on everything before each one."""
        return [i for i, m in enumerate(self.messages) if m["role"] == "assistant"]


def corpus_paths(root: Path = ROOT) -> list[Path]:
    """README, docs and the shared specification seeds (when the checkout has them beside it), sorted."""
    paths = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    for base in (root.parent, root.parent.parent):
        seeds = base / "shared" / "seeds"
        if seeds.is_dir():
            paths += sorted(seeds.glob("*.txt"))
            break
    return [p for p in paths if p.is_file()]


def load_prose(paths: Sequence[Path] | None = None) -> tuple[str, ...]:
    """The corpus texts, whitespace runs inside lines collapsed."""
    return tuple(re.sub(r"[ \t]+", " ", p.read_text(encoding="utf-8")) for p in (paths or corpus_paths()))


class _Writer:
    """Draws filler text and synthetic names from the corpus with one seeded generator.

    Every draw that depends on the corpus (which text, where in it, which word) takes one ``random()``, so an
    edit to README or docs changes the filler's words but not the session's shape: the same turns, tool steps,
    facts and questions come from the same seed.
    """

    def __init__(self, rng: random.Random, prose: Sequence[str]) -> None:
        self.rng = rng
        self.prose = [t for t in prose if len(t) > 2000]
        if not self.prose:
            raise ValueError("the prose corpus needs at least one text of 2,000 characters or more")
        self.weights = [len(t) for t in self.prose]
        self.words = sorted({w.lower() for t in self.prose for w in re.findall(r"\b[A-Za-z]{4,11}\b", t)})
        self.everything = "\n".join(self.prose)

    def slice(self, words: int) -> str:
        """About ``words`` words of prose from a random offset, starting and ending on whitespace."""
        text = self.rng.choices(self.prose, self.weights)[0]
        want = words * 6
        start = int(self.rng.random() * max(1, len(text) - want))
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        chunk = text[start : start + want]
        cut = max(chunk.rfind(" "), chunk.rfind("\n"))
        return (chunk[:cut] if cut > want // 2 else chunk).strip()

    def word(self) -> str:
        return self.words[int(self.rng.random() * len(self.words))]

    def hex(self, digits: int = 4) -> str:
        return f"{self.rng.getrandbits(4 * digits):0{digits}x}"

    def log(self, lines: int) -> str:
        """Synthetic command output: numbers of at most four digits, words from the corpus."""
        r = self.rng
        out = []
        for _ in range(lines):
            form = r.randrange(3)
            if form == 0:
                out.append(f"step {r.randrange(9999):04d} ok: {self.word()}-{r.randrange(9)} handled "
                           f"{r.randrange(9999)} {self.word()} items (queue {r.randrange(99)})")  # fmt: skip
            elif form == 1:
                out.append(
                    f"WARN {self.word()}: {self.word()} {self.word()} took {r.randrange(999)}.{r.randrange(99)} ms"
                )
            else:
                out.append(f"{self.word()}/{self.word()}_{self.word()}.py  {r.randrange(9999)} bytes")
        return "\n".join(out)


def _unique(w: _Writer, used: set[str], make: Any) -> str:
    for _ in range(1000):
        value = str(make())
        if value not in used and value not in w.everything:
            used.add(value)
            return value
    raise AssertionError("could not draw a unique fact value")  # pragma: no cover - 1000 draws


def _draw_fact(w: _Writer, kind: str, used: set[str], subjects: set[tuple[str, str]]) -> tuple[str, str, str]:
    """(value, component, attribute) of a new fact; no (component, attribute) pair is asked twice."""
    r = w.rng
    attrs = {
        "number": list(NUMBER_ATTRS),
        "path": list(PATH_ATTRS),
        "command": list(COMMAND_ATTRS),
        "name": list(NAME_ATTRS),
        "decision": list(DECISIONS),
    }[kind]
    while True:
        component, attr = r.choice(COMPONENTS), r.choice(attrs)
        if (component, attr) not in subjects:
            subjects.add((component, attr))
            break
    if kind == "number":
        value = _unique(w, used, lambda: r.randrange(10_000, 100_000))
    elif kind == "path":
        value = _unique(
            w,
            used,
            lambda: f"/srv/{component}/{w.word()}-{w.hex()}/{w.word()}.{PATH_ATTRS[attr]}",
        )
    elif kind == "command":
        binary, sub = r.choice(BINARIES)
        value = _unique(w, used, lambda: f"{binary} {sub} {component}-{w.hex()} --{w.word()}={r.randrange(2, 999)}")
    elif kind == "name":
        value = _unique(w, used, lambda: f"{r.choice(FIRST)} {r.choice(LAST)}")
    else:
        value = _unique(
            w, used, lambda: r.choice(DECISIONS[attr]).format(a=r.randrange(2, 99), b=r.randrange(100, 999))
        )
    return value, component, attr


def _plant(w: _Writer, kind: str, value: str, component: str, attr: str) -> tuple[str, str]:
    """(where, text): the message that carries the fact, as user, tool or assistant text."""
    r = w.rng
    if kind == "number":
        if r.random() < 0.6:
            lines = w.log(r.randrange(8, 40)).split("\n")
            lines.insert(r.randrange(len(lines) + 1), f"{component}.{NUMBER_ATTRS[attr]} = {value}  # {attr}")
            return "tool", "\n".join(lines)
        return "user", f"For the record, the {attr} of {component} is {value}. {w.slice(r.randrange(10, 60))}"
    if kind == "path":
        if r.random() < 0.6:
            lines = w.log(r.randrange(8, 40)).split("\n")
            lines.insert(r.randrange(len(lines) + 1), f"{value}  ({attr} of {component})")
            return "tool", "\n".join(lines)
        return "user", f"The {attr} for {component} lives at {value}. {w.slice(r.randrange(10, 60))}"
    if kind == "command":
        if r.random() < 0.5:
            return (
                "assistant",
                f"To {attr} {component} I ran `{value}`; it finished cleanly. {w.slice(r.randrange(20, 70))}",
            )
        return "user", f"Whenever you need to {attr} {component}, run `{value}`. {w.slice(r.randrange(10, 60))}"
    if kind == "name":
        if r.random() < 0.5:
            record = {
                "component": component,
                "role": attr,
                "person": value,
                "since": f"{r.randrange(1, 12)}/{r.randrange(1, 28)}",
            }
            return "tool", json.dumps(record, sort_keys=True) + "\n" + w.log(r.randrange(4, 20))
        return "user", f"{value} is the {attr} for {component}; loop them in on changes. {w.slice(r.randrange(10, 50))}"
    alt = r.choice(DECISIONS[attr]).format(a=r.randrange(2, 99), b=r.randrange(100, 999))
    return "assistant", (
        f"Decision: for the {attr} of {component} we go with {value}, not {alt}. {w.slice(r.randrange(20, 70))}"
    )


def _tool_step(w: _Writer, fact_text: str | None) -> list[dict[str, Any]]:
    """One assistant tool-call message (one or two parallel calls) and its results."""
    r = w.rng
    calls, results = [], []
    for k in range(2 if r.random() < 0.15 else 1):
        tool = r.choice(TOOLS)
        call_id = f"call_{w.hex(12)}"
        if tool == "read_file":
            args = {"path": f"docs/{w.word()}/{w.word()}.md"}
            big = r.random() < 0.06
            text = w.slice(r.randrange(1200, 3500) if big else r.randrange(80, 500))
        elif tool == "search_docs":
            args = {"query": f"{w.word()} {w.word()}"}
            text = "\n".join(f"[{i + 1}] {w.slice(r.randrange(30, 100))}" for i in range(r.randrange(2, 5)))
        elif tool == "run":
            args = {"command": f"{w.word()} --{w.word()} {r.randrange(99)}"}
            text = w.log(r.randrange(4, 36))
        elif tool == "list_dir":
            args = {"path": f"{w.word()}/{w.word()}"}
            text = w.log(r.randrange(4, 24))
        else:
            args = {"pattern": w.word(), "path": "."}
            text = "\n".join(f"{w.word()}/{w.word()}.md:{r.randrange(1, 999)}: {w.slice(r.randrange(8, 25))}"
                             for _ in range(r.randrange(3, 15)))  # fmt: skip
        if fact_text is not None and k == 0:
            text = fact_text
        arguments = json.dumps(args, sort_keys=True)
        calls.append({"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}})
        results.append({"role": "tool", "tool_call_id": call_id, "content": text})
    return [{"role": "assistant", "content": "", "tool_calls": calls}, *results]


def agent_session(
    turns: int = 300,
    *,
    seed: int = TUNING_SEEDS[0],
    fact_every: int = 8,
    ask: str = "spread",
    min_gap: int | None = None,
    prose: Sequence[str] | None = None,
) -> AgentSession:
    """A deterministic ``turns``-turn agent session with facts planted and asked about later.

    Args:
        turns: user turns.
        seed: the generator's seed (``HELD_OUT_SEED`` is the one never tuned on).
        fact_every: one fact per this many turns.
        ask: ``"spread"`` (each fact asked ``min_gap`` or more turns after it was planted) or ``"end"``
            (every fact asked in the session's last turns, one a turn).
        min_gap: fewest turns between a fact and its question (default: a tenth of the session, at least 5).
        prose: the filler corpus (default: :func:`load_prose`).
    """
    if ask not in ("spread", "end"):
        raise ValueError(f"ask must be 'spread' or 'end', got {ask!r}")
    rng = random.Random(seed)
    w = _Writer(rng, prose if prose is not None else load_prose())
    gap = max(5, turns // 10) if min_gap is None else min_gap
    n_facts = max(1, turns // fact_every)
    last_plant = turns - n_facts - gap if ask == "end" else turns - 2 * gap
    if last_plant < 1:
        raise ValueError(f"{turns} turns leave no room for {n_facts} facts asked {gap} or more turns later")
    plant_turns = sorted(rng.sample(range(1, last_plant + 1), min(n_facts, last_plant)))
    plants_set = set(plant_turns)
    kinds = [KINDS[i % len(KINDS)] for i in range(len(plant_turns))]
    rng.shuffle(kinds)
    ask_turns: dict[int, int] = {}  # question turn -> fact number
    for f, t in enumerate(plant_turns):
        if ask == "end":
            ask_turns[turns - len(plant_turns) + f] = f
            continue
        want = t + rng.randint(gap, max(gap, turns // 2))
        free = [q for q in range(t + gap, turns) if q not in ask_turns and q not in plants_set]
        if not free:
            raise ValueError(
                f"{turns} turns leave no free turn to ask fact {f} (planted at turn {t}) {gap} turns later"
            )
        ask_turns[min((q for q in free if q >= want), default=free[-1])] = f
    plants = {t: f for f, t in enumerate(plant_turns)}
    used: set[str] = set()
    subjects: set[tuple[str, str]] = set()
    drawn = [_draw_fact(w, k, used, subjects) for k in kinds]
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "You are a careful operations and coding agent. Use the tools (read_file, search_docs, run, "
            "list_dir, grep) to inspect before you act, and answer from what you found.\n\n" + w.slice(250),
        }
    ]
    planted_at: dict[int, int] = {}
    asked_at: dict[int, int] = {}
    for t in range(turns):
        if t in ask_turns:
            f = ask_turns[t]
            value, component, attr = drawn[f]
            asked_at[f] = len(messages)
            question = rng.choice(ASK[kinds[f]]).format(attr=attr, component=component)
            messages.append({"role": "user", "content": question})
            messages.append({"role": "assistant", "content": f"From earlier in this session: {value}."})
            continue
        where, text = ("", "")
        if t in plants:
            f = plants[t]
            where, text = _plant(w, kinds[f], *drawn[f])
        messages.append({"role": "user", "content": text if where == "user" else w.slice(rng.randrange(15, 90))})
        if where == "user":
            planted_at[plants[t]] = len(messages) - 1
        steps = rng.choice((0, 1, 1, 1, 2, 2, 3, 4))
        if where == "tool":
            steps = max(steps, 1)
        fact_step = rng.randrange(steps) if where == "tool" else -1
        for s in range(steps):
            step = _tool_step(w, text if s == fact_step else None)
            if s == fact_step:
                planted_at[plants[t]] = len(messages) + 1
            messages.extend(step)
        messages.append(
            {"role": "assistant", "content": text if where == "assistant" else w.slice(rng.randrange(20, 110))}
        )
        if where == "assistant":
            planted_at[plants[t]] = len(messages) - 1
    for i, m in enumerate(messages):
        m["id"] = f"msg{i:05d}"
    facts = tuple(
        Fact(kinds[f], drawn[f][0], _subject(kinds[f], drawn[f][1], drawn[f][2]), planted_at[f], asked_at[f])
        for f in range(len(plant_turns))
    )
    _check(messages, facts)
    return AgentSession(seed, tuple(messages), facts)


def _subject(kind: str, component: str, attr: str) -> str:
    return f"how to {attr} {component}" if kind == "command" else f"the {attr} of {component}"


def message_text(message: dict[str, Any]) -> str:
    """What a model reads in a message: its text content and its tool-call arguments."""
    content = message.get("content")
    parts = [content] if isinstance(content, str) else []
    if isinstance(content, list):
        parts += [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    for call in message.get("tool_calls") or ():
        parts.append(str(call.get("function", {}).get("arguments", "")))
    return "\n".join(parts)


def _check(messages: list[dict[str, Any]], facts: Sequence[Fact]) -> None:
    for fact in facts:
        holders = [i for i in range(fact.asked + 1) if fact.value in message_text(messages[i])]
        assert holders == [fact.planted], (fact, holders)
        assert fact.planted < fact.asked and messages[fact.asked]["role"] == "user"
