"""Prompt-cache benchmark (issue 15): one agent session replayed through four trimmers.

A 300-turn agent session with tool calls (deterministic, ~600 o200k tokens a
turn) is fitted into a 32k window every turn by:

- TokenBox, cache-aware (``fit_conversation(cache_aware=CacheWindow(summarizer=ExtractiveSummarizer()))``),
- TokenBox, plain (``fit_conversation``: the sliding window),
- LangChain ``trim_messages(strategy="last", include_system=True, start_on="human")``,
- LlamaIndex ``Memory`` (token_limit=32k, its default chat-history ratio and flush size),

and each request is priced under OpenAI's rules (1,024-token minimum, 128-token
increments) and Anthropic's (breakpoints after the system prompt and on the last
message — the usual practice — 1.25× writes, 0.1× reads).  The OpenAI column is
priced at a 90 % cached-token discount (as GPT-5-family models are billed) so the
two providers compare at the same read price.  Reported: share of prompt tokens
served from cache, session cost relative to ``trim_messages``, past turns visible
(directly, and directly or through a summary), and the largest prompt.

Run: ``.venv/bin/python benchmarks/bench_cache.py [--turns 300] [--budget 32000]``.
Nothing here is timed: the figures are exact counts and prices, the same on every run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _trimmers import LlamaIndexMemory, langchain_trim

from tokenbox_core.cache import CacheWindow, cache_rules, simulate_cache
from tokenbox_core.chat import fit_conversation
from tokenbox_core.session import ExtractiveSummarizer
from tokenbox_core.testing.transcripts import agent_session


def tokenbox(budget: int, window: CacheWindow | None):
    def trim(messages):
        return fit_conversation(messages, budget, counter="gpt-4o", cache_aware=window or False)

    return trim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--budget", type=int, default=32_000)
    args = parser.parse_args()
    session = agent_session(args.turns)
    window = CacheWindow(summarizer=ExtractiveSummarizer(), summary_tokens=1024)
    trimmers = {
        "TokenBox cache-aware": lambda: tokenbox(args.budget, window),
        "TokenBox plain": lambda: tokenbox(args.budget, None),
        "LangChain trim_messages": lambda: langchain_trim(args.budget),
        "LlamaIndex Memory": lambda: LlamaIndexMemory(args.budget),
    }
    providers = {
        "OpenAI (90% read discount)": cache_rules("openai").with_discount(0.9),
        "Anthropic": cache_rules("anthropic"),
    }
    print(f"{args.turns}-turn agent session, {args.budget:,}-token window, o200k counts\n")
    for provider, rules in providers.items():
        results = {name: simulate_cache(session, make(), rules=rules, label=name) for name, make in trimmers.items()}
        base = results["LangChain trim_messages"].cost
        print(f"## {provider}")
        print(f"{'trimmer':<26}{'cached':>8}{'cost vs trim':>14}{'visible':>9}{'direct':>8}{'max prompt':>12}")
        for name, sim in results.items():
            print(
                f"{name:<26}{sim.cached_share:>8.1%}{sim.cost / base:>13.2f}×{sim.mean_visible_turns:>9.1f}"
                f"{sim.mean_direct_turns:>8.1f}{max(t.prompt_tokens for t in sim.turns):>12,}"
            )
        print()


if __name__ == "__main__":
    main()
