"""Recall on real long conversations: what the model is shown of what it was told (issue 33).

Corpora (prepared outside the repository, never committed):

- **LoCoMo** (Maharana et al., ACL 2024; github.com/snap-research/locomo, ``data/locomo10.json``): ten
  conversations of ~20k tokens (300–700 dialogue turns over up to 35 sessions) whose QA items name the
  dialogue turns holding the evidence.  Read from ``../shared/data/locomo10.zip`` (one JSON file per
  conversation, unchanged; see that folder's README), unzipped to a temporary directory.  Conversations 0–4
  (sorted by their number: 26, 30, 41, 42, 43) are the ones tuned on; 5–9 are held out and reported apart.
- **BEAM 100K** (Tavakoli et al., "Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in
  LLMs"; github.com/mohammadtavakoli78/BEAM at commit b2a3ee8ba12d68f83143dda191097dc3e028ddd3, ``chats/100K``):
  20 user–assistant conversations of ~100–130k tokens (~190 messages each, long assistant answers), 20 probing
  questions each whose ``source_chat_ids`` name the evidence messages (abstention questions name none and are
  left out).  Never tuned on.  Prepare it outside the repository, e.g.
  ``git --git-dir <mirror> archive b2a3ee8 chats/100K | tar -x -C /tmp/beam``, then
  ``--corpus beam --data /tmp/beam/chats/100K``.  (LongMemEval_S could not be had: its 264 MB file is in no
  stored snapshot.)  Its answers are sentences, so "answer present" is near zero there: read evidence recall.

Each conversation is replayed turn by turn into the managers as one message per dialogue turn, the session's
date and the speaker in the text (``[8:56 pm on 20 July, 2023] Caroline: ...``); the first speaker is the
``user`` role, the second the ``assistant``.  Each question is then the current user message after the whole
conversation is archived, and the manager returns the request the model would get.  Per manager and budget:

- **evidence recall**: evidence turns present verbatim (whitespace collapsed) anywhere in the compiled
  context, every content part read — over all evidence turns (micro average);
- **answer present**: questions whose answer string occurs in the context (case-folded);
- **false recalls**: recalled turns that are not evidence, as a share of recalled turns (managers that
  recall: TokenBox and the bm25 baseline), and the questions with nothing recalled;
- **tokens**: the context's size (o200k, chat overhead included), mean; **CPU ms** per question, mean.

Managers: ``ContextSession`` (default config; ``+ MiniLM`` with the ``embeddings`` extra), keep-newest
trimming (``fit_conversation``), LangChain's ``SummarizationMiddleware`` (its ``before_model`` applied at the
question, summaries from the benchmarks' deterministic extractive fake model), LlamaIndex ``Memory``
(``Memory.from_defaults(token_limit=budget)``; the question is appended after ``get()``), and ``bm25``: a
stdlib prototype (FTS5 bm25 hits with ±1 neighbours in half the budget, the newest turns in the rest).

    python benchmarks/bench_recall.py --limit 20 --budgets 2000 8000      # quick
    python benchmarks/bench_recall.py                                      # LoCoMo, every manager, 2k–16k
    python benchmarks/bench_recall.py --skip MiniLM --json benchmarks/results/recall.json   # notebook 07's figures

Not a timed test: CPU times are for comparison on one machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _agent_managers import COUNTER, ExtractiveFakeChat, count

from tokenbox_core.session._lexical import content_words

LOCOMO_ZIP = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.zip"
BUDGETS = (2000, 4000, 8000, 16000)
Message = dict[str, Any]


@dataclass
class Question:
    text: str
    answer: str | None  # None: no short answer to look for (not counted in answer presence)
    evidence: tuple[int, ...]  # positions of the evidence turns


@dataclass
class Conversation:
    name: str
    messages: list[Message]
    questions: list[Question]


# ---------------------------------------------------------------------------------------------------- corpora


def load_locomo(path: Path = LOCOMO_ZIP) -> list[Conversation]:
    """The ten LoCoMo conversations, in the order of their number."""
    out = []
    with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        z.extractall(tmp)
        files = sorted(Path(tmp).rglob("*.json"), key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
        for f in files:
            out.append(_locomo_conversation(f.stem, json.loads(f.read_text())))
    return out


def _locomo_conversation(name: str, data: dict[str, Any]) -> Conversation:
    c = data.get("conversation", data)
    roles = {c["speaker_a"]: "user", c["speaker_b"]: "assistant"}
    messages: list[Message] = []
    where: dict[str, int] = {}
    n = 1
    while f"session_{n}" in c:
        date = c.get(f"session_{n}_date_time", "")
        for turn in c[f"session_{n}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            where[turn["dia_id"]] = len(messages)
            content = f"[{date}] {turn['speaker']}: {text}"
            messages.append({"role": roles.get(turn["speaker"], "user"), "content": content})
        n += 1
    questions = []
    for qa in data["qa"]:
        if "answer" not in qa:
            continue  # adversarial items have no answer in the conversation
        ids = re.findall(r"D\d+:\d+", " ".join(qa.get("evidence", [])))
        evidence = tuple(sorted({where[i] for i in ids if i in where}))
        if evidence:
            questions.append(Question(qa["question"], str(qa["answer"]), evidence))
    return Conversation(name, messages, questions)


def _flat(value: Any) -> list[int]:
    """Every message id in a ``source_chat_ids`` value (a list, a dict of lists, nested)."""
    if isinstance(value, dict):
        return [i for v in value.values() for i in _flat(v)]
    if isinstance(value, list):
        return [i for v in value for i in _flat(v)]
    return [int(value)] if str(value).strip().isdigit() else []


def load_beam(path: Path) -> list[Conversation]:
    """BEAM's 100K conversations: ``path`` holds ``<n>/chat.json`` and ``<n>/probing_questions/probing_questions.json``
    (``chats/100K`` of the pinned commit); evidence: each question's ``source_chat_ids`` (message ids)."""
    out = []
    for folder in sorted((p for p in path.iterdir() if p.is_dir()), key=lambda p: int(p.name)):
        chat, probes = folder / "chat.json", folder / "probing_questions" / "probing_questions.json"
        if not chat.is_file() or not probes.is_file():
            continue
        messages: list[Message] = []
        where: dict[int, int] = {}
        for batch in json.loads(chat.read_text()):
            for turn in batch["turns"]:
                for m in turn:
                    date = m.get("time_anchor") or batch.get("time_anchor") or ""
                    speaker = "User" if m["role"] == "user" else "Assistant"
                    where[int(m["id"])] = len(messages)
                    messages.append({"role": m["role"], "content": f"[{date}] {speaker}: {m['content']}"})
        questions = []
        for items in json.loads(probes.read_text()).values():
            for item in items:
                source = item.get("source_chat_ids") or []
                ids = _flat(source)
                evidence = tuple(sorted({where[i] for i in ids if i in where}))
                if evidence:
                    questions.append(
                        Question(item["question"], str(item["answer"]) if item.get("answer") else None, evidence)
                    )
        out.append(Conversation(folder.name, messages, questions))
    return out


# ---------------------------------------------------------------------------------------------------- managers


class Manager:
    """Built once per conversation (every message archived), then asked once per question and budget."""

    name = ""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def context(self, question: str, budget: int) -> tuple[list[Message], list[int] | None]:
        """The request the model gets, and the positions it recalled (``None``: the manager does not recall)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the manager holds."""


RECALL: dict[str, Any] = {}  # --recall: RecallConfig fields for the TokenBox rows


class TokenBox(Manager):
    name = "ContextSession"
    options: ClassVar[dict[str, Any]] = {}

    def __init__(self, messages: list[Message]) -> None:
        from tokenbox_core import ContextSession
        from tokenbox_core.session import RecallConfig

        super().__init__(messages)
        options = dict(self.options)
        if RECALL:
            options["recall"] = RecallConfig(**{**RECALL, **({"embedder": _EMBEDDER} if "recall" in options else {})})
        self.session = ContextSession(None, "bench", budget=max(BUDGETS), counter="gpt-4o", **options)
        self.session.add(messages)
        self.position = {t.turn_id: n for n, t in enumerate(self.session.archive.turns())}

    def context(self, question: str, budget: int) -> tuple[list[Message], list[int] | None]:
        compiled = self.session.compile(user=question, budget=budget)
        return list(compiled.messages), [self.position[i] for i in compiled.recalled if i in self.position]

    def close(self) -> None:
        self.session.close()


_EMBEDDER: Any = None


class TokenBoxMiniLM(TokenBox):
    name = "ContextSession + MiniLM"

    def __init__(self, messages: list[Message]) -> None:
        global _EMBEDDER
        from tokenbox_core.session import MiniLMEmbedder, RecallConfig

        if _EMBEDDER is None:
            _EMBEDDER = MiniLMEmbedder()
        self.options = {"recall": RecallConfig(embedder=_EMBEDDER)}
        super().__init__(messages)


class KeepNewest(Manager):
    name = "keep-newest (fit_conversation)"

    def context(self, question: str, budget: int) -> tuple[list[Message], list[int] | None]:
        from tokenbox_core import fit_conversation

        fit = fit_conversation([*self.messages, {"role": "user", "content": question}], budget, counter="gpt-4o")
        return list(fit.messages), None


class Summarization(Manager):
    """SummarizationMiddleware.before_model at the question: trigger at budget, keep half, extractive fake."""

    name = "LangChain SummarizationMiddleware"

    def __init__(self, messages: list[Message]) -> None:
        from langchain_core.messages import convert_to_messages

        super().__init__(messages)
        self.state = convert_to_messages([{**m, "id": f"m{n}"} for n, m in enumerate(messages)])
        self.sizes: dict[tuple[str, str], int] = {}

    def tokens(self, messages: Any) -> int:
        from langchain_core.messages import convert_to_openai_messages

        from tokenbox_core.tokens import PRIMING_TOKENS
        from tokenbox_core.tokens._messages import message_token_count

        total = PRIMING_TOKENS
        for m in messages:
            key = (m.type, str(m.content))
            size = self.sizes.get(key)
            if size is None:
                size = self.sizes[key] = message_token_count(convert_to_openai_messages([m])[0], COUNTER)
            total += size
        return total

    def context(self, question: str, budget: int) -> tuple[list[Message], list[int] | None]:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.messages import HumanMessage, convert_to_openai_messages

        middleware = SummarizationMiddleware(
            model=ExtractiveFakeChat(max_tokens=max(64, budget // 8)),
            trigger=("tokens", budget),
            keep=("tokens", budget // 2),
            token_counter=self.tokens,
        )
        state = [*self.state, HumanMessage(question, id="question")]
        update = middleware.before_model({"messages": state}, None)
        if update is not None:
            state = [m for m in update["messages"] if m.type != "remove"]
        return [dict(m) for m in convert_to_openai_messages(state)], None


class LlamaMemory(Manager):
    """Memory.from_defaults(token_limit=budget), every turn put; get() then the question."""

    name = "LlamaIndex Memory"

    def __init__(self, messages: list[Message]) -> None:
        super().__init__(messages)
        self.memories: dict[int, Any] = {}
        self.encoded: dict[str, list[int]] = {}

    def encode(self, text: str) -> list[int]:
        ids = self.encoded.get(text)
        if ids is None:
            ids = self.encoded[text] = COUNTER.encode(text)
        return ids

    def context(self, question: str, budget: int) -> tuple[list[Message], list[int] | None]:
        from llama_index.core.llms import ChatMessage
        from llama_index.core.memory import Memory

        memory = self.memories.get(budget)
        if memory is None:
            memory = Memory.from_defaults(session_id=f"bench-{budget}", token_limit=budget, tokenizer_fn=self.encode)
            memory.put_messages([ChatMessage(role=m["role"], content=m["content"]) for m in self.messages])
            self.memories[budget] = memory
        shown = [{"role": str(m.role.value), "content": m.content or ""} for m in memory.get()]
        return [*shown, {"role": "user", "content": question}], None


class Bm25Baseline(Manager):
    """The ~60-line prototype: FTS5 bm25 hits (±1 neighbours) in half the budget, the newest turns in the rest."""

    name = "bm25 baseline (prototype)"

    def __init__(self, messages: list[Message]) -> None:
        super().__init__(messages)
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
        self.db.executemany(
            "INSERT INTO t(rowid, body) VALUES (?, ?)", [(n + 1, m["content"]) for n, m in enumerate(messages)]
        )
        self.sizes = [count([m]) - count([]) for m in messages]

    def context(self, question: str, budget: int) -> tuple[list[Message], list[int] | None]:
        q = {"role": "user", "content": question}
        room = budget - count([q])
        terms = list(dict.fromkeys(content_words(question)))
        hits: list[int] = []
        if terms:
            match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
            rows = self.db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 50", (match,))
            hits = [int(r[0]) - 1 for r in rows]
        chosen: set[int] = set()
        used, half = 0, room // 2
        for h in hits:
            for p in (h, h - 1, h + 1):
                if 0 <= p < len(self.messages) and p not in chosen and used + self.sizes[p] <= half:
                    chosen.add(p)
                    used += self.sizes[p]
        newest: list[int] = []
        for p in range(len(self.messages) - 1, -1, -1):
            if p in chosen:
                continue
            if used + self.sizes[p] > room:
                break
            newest.append(p)
            used += self.sizes[p]
        recalled = sorted(chosen)
        shown = [self.messages[p] for p in recalled] + [self.messages[p] for p in sorted(newest)]
        return [*shown, q], recalled

    def close(self) -> None:
        self.db.close()


MANAGERS: dict[str, type[Manager]] = {
    m.name: m for m in (TokenBox, TokenBoxMiniLM, KeepNewest, Summarization, LlamaMemory, Bm25Baseline)
}


# ---------------------------------------------------------------------------------------------------- scoring


def _norm(text: str) -> str:
    return " ".join(text.split())


def context_text(messages: Sequence[Message]) -> str:
    """Every content part of every message, whitespace collapsed (what the model reads)."""
    parts: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return _norm("\n".join(parts))


def _needle(message: Message) -> str:
    """An evidence turn as the model would see it: ``Speaker: text`` (the date prefix may be shown or not)."""
    return _norm(re.sub(r"^\[[^\]]*\] ", "", message["content"]))


@dataclass
class Tally:
    evidence: int = 0
    found: int = 0
    questions: int = 0
    answers: int = 0
    answered: int = 0
    recalled: int = 0
    false: int = 0
    empty: int = 0
    recalling: bool = False
    tokens: list[int] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def row(self) -> str:
        recall = 100 * self.found / max(1, self.evidence)
        answer = 100 * self.answered / max(1, self.answers)
        false = f"{100 * self.false / max(1, self.recalled):5.1f} %" if self.recalling else "    –  "
        empty = f"{100 * self.empty / max(1, self.questions):5.1f} %" if self.recalling else "    –  "
        tokens = sum(self.tokens) / max(1, len(self.tokens))
        cpu = sum(self.cpu) / max(1, len(self.cpu))
        return f"{recall:5.1f} % | {answer:5.1f} % | {false} | {empty} | {tokens:7.0f} | {cpu:7.1f}"


def evaluate(
    conversations: Sequence[Conversation], names: Sequence[str], budgets: Sequence[int], limit: int | None
) -> dict[tuple[str, int], Tally]:
    tallies: dict[tuple[str, int], Tally] = {}
    for conv in conversations:
        needles = [_needle(m) for m in conv.messages]
        questions = conv.questions[:limit] if limit else conv.questions
        for name in names:
            manager = MANAGERS[name](conv.messages)
            try:
                for budget in budgets:
                    tally = tallies.setdefault((name, budget), Tally())
                    for q in questions:
                        start = time.process_time()
                        messages, recalled = manager.context(q.text, budget)
                        tally.cpu.append(1000 * (time.process_time() - start))
                        text = context_text(messages)
                        tally.evidence += len(q.evidence)
                        tally.found += sum(1 for p in q.evidence if needles[p] in text)
                        tally.questions += 1
                        if q.answer is not None:
                            tally.answers += 1
                            tally.answered += q.answer.lower() in text.lower()
                        tally.tokens.append(count(messages))
                        if recalled is not None:
                            tally.recalling = True
                            tally.recalled += len(recalled)
                            tally.false += sum(1 for p in recalled if p not in q.evidence)
                            tally.empty += not recalled
            finally:
                manager.close()
        print(f"  {conv.name}: {len(conv.messages)} turns, {len(questions)} questions", file=sys.stderr)
    return tallies


def report(title: str, tallies: dict[tuple[str, int], Tally], names: Sequence[str], budgets: Sequence[int]) -> None:
    print(f"\n### {title}\n")
    print(
        "| manager | budget | evidence recall | answer present | false recalls | nothing recalled | tokens | CPU ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        for budget in budgets:
            t = tallies.get((name, budget))
            if t is not None:
                print(f"| {name} | {budget // 1000}k | {t.row()} |")


def _ranges(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def _corpus_tokens(conversations: Sequence[Conversation]) -> Iterator[int]:
    for c in conversations:
        yield count(c.messages)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", choices=("locomo", "beam"), default="locomo")
    parser.add_argument("--data", type=Path, help="the corpus file (default for locomo: ../shared/data/locomo10.zip)")
    parser.add_argument("--conversations", default="0-9", help="LoCoMo conversations, e.g. 0-4 or 5-9 (default 0-9)")
    parser.add_argument("--limit", type=int, help="questions per conversation")
    parser.add_argument("--max-conversations", type=int, help="BEAM: conversations to replay")
    parser.add_argument("--budgets", type=int, nargs="*", default=list(BUDGETS))
    parser.add_argument("--only", nargs="*", help="managers whose name contains one of these words")
    parser.add_argument("--recall", nargs="*", default=[], help="RecallConfig fields for the TokenBox rows: share=0.5")
    parser.add_argument("--skip", nargs="*", default=[], help="managers whose name contains one of these words")
    parser.add_argument(
        "--json", type=Path, help="also write the figures (no CPU times) to this file, merged with what it holds"
    )
    args = parser.parse_args(argv)
    names = [n for n in MANAGERS if not args.only or any(w.lower() in n.lower() for w in args.only)]
    names = [n for n in names if not any(w.lower() in n.lower() for w in args.skip)]
    for item in args.recall:
        key, _, value = item.partition("=")
        RECALL[key] = json.loads(value)
    if args.corpus == "locomo":
        every = load_locomo(args.data or LOCOMO_ZIP)
        picked = _ranges(args.conversations)
        splits = {
            "LoCoMo 0–4 (tuned on)": [every[i] for i in picked if i < 5],
            "LoCoMo 5–9 (held out)": [every[i] for i in picked if i >= 5],
        }
    else:
        if args.data is None:
            raise SystemExit("--corpus beam needs --data DIR: BEAM's chats/100K folder (see the module docstring)")
        every = load_beam(args.data)[: args.max_conversations]
        splits = {"BEAM 100K (held out)": every}
    for title, convs in splits.items():
        if not convs:
            continue
        sizes = list(_corpus_tokens(convs))
        print(f"{title}: {len(convs)} conversations, {min(sizes)}–{max(sizes)} tokens", file=sys.stderr)
        tallies = evaluate(convs, names, args.budgets, args.limit)
        report(
            f"{title}: {len(convs)} conversations of {min(sizes):,}–{max(sizes):,} tokens", tallies, names, args.budgets
        )
        if args.json is not None:
            write_json(args.json, title, tallies)


def write_json(path: Path, split: str, tallies: dict[tuple[str, int], Tally]) -> None:
    """Merge the split's figures into ``path`` (``benchmarks/results/recall.json``, read by notebook 07): one row per
    split, manager and budget, in percent; CPU times are left out (they are this machine's)."""
    rows = json.loads(path.read_text()) if path.is_file() else []
    rows = [r for r in rows if not (r["split"] == split and any(r["manager"] == m for m, _ in tallies))]
    for (manager, budget), t in tallies.items():
        rows.append(
            {
                "split": split,
                "manager": manager,
                "budget": budget,
                "evidence_recall": round(100 * t.found / max(1, t.evidence), 1),
                "answer_present": round(100 * t.answered / max(1, t.answers), 1),
                "false_recalls": round(100 * t.false / max(1, t.recalled), 1) if t.recalling else None,
                "tokens": round(sum(t.tokens) / max(1, len(t.tokens))),
            }
        )
    rows.sort(key=lambda r: (r["split"], r["manager"], r["budget"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
