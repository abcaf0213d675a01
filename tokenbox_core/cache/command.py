"""``tokenbox cache-sim``: replay a transcript through TokenBox's trimmers under a provider's cache rules."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tokenbox_core.cache.report import simulations_html
from tokenbox_core.cache.rules import cache_rules
from tokenbox_core.cache.simulate import CacheSimulation, simulate_cache
from tokenbox_core.cache.window import CacheWindow
from tokenbox_core.errors import TokenBoxError

__all__ = ["add_command", "run"]

HELP = "replay a transcript turn by turn and simulate the provider's prompt cache"


def add_command(commands: Any) -> argparse.ArgumentParser:
    """Register ``cache-sim`` on the command's sub-parsers."""
    p: argparse.ArgumentParser = commands.add_parser("cache-sim", help=HELP, description=HELP + ".")
    p.add_argument("transcript", help="JSONL (one chat message per line) or a JSON list of messages")
    p.add_argument("--model", default="gpt-4o", help="model for counting and cache rules (default gpt-4o)")
    p.add_argument("--provider", help="cache rules: openai, anthropic or gemini (default: from --model)")
    p.add_argument("--budget", type=int, default=32_000, help="tokens per request (default 32000)")
    p.add_argument("--low-water", type=float, default=0.7, help="cache-aware: share kept after a cut (0.7)")
    p.add_argument("--every", type=int, default=10, help="print every N-th turn in the table (10)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--html", metavar="FILE", help="write the per-turn chart as an HTML report")
    return p


def _load(path: str) -> list[dict[str, Any]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenBoxError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TokenBoxError(f"{path}: not UTF-8 at byte {exc.start}") from exc
    try:
        if text.lstrip().startswith("["):
            messages = json.loads(text)
        else:
            messages = []
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        messages.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise TokenBoxError(f"{path}, line {n}: not JSON ({exc.msg})") from exc
    except json.JSONDecodeError as exc:
        raise TokenBoxError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise TokenBoxError(f"{path}: expected chat messages (JSON objects with a 'role')")
    return messages


def run(args: argparse.Namespace) -> tuple[str, list[CacheSimulation]]:
    """The report text (table or JSON) and the simulations; writes ``--html`` when asked."""
    from tokenbox_core.chat import fit_conversation

    if args.budget <= 0:
        raise TokenBoxError(f"--budget must be a positive number of tokens, got {args.budget}")
    messages = _load(args.transcript)
    rules = cache_rules(args.provider or args.model)
    window = CacheWindow(low_water=args.low_water)

    def trimmer(cache: CacheWindow | bool) -> Any:
        return lambda ms: fit_conversation(ms, args.budget, counter=args.model, cache_aware=cache)

    sims = [
        simulate_cache(messages, trimmer(window), rules=rules, counter=args.model, label="TokenBox cache-aware"),
        simulate_cache(messages, trimmer(False), rules=rules, counter=args.model, label="TokenBox plain"),
    ]
    if args.html:
        Path(args.html).write_text(simulations_html(sims), encoding="utf-8")
    if args.json:
        return json.dumps([s.to_dict() for s in sims], indent=2), sims
    return "\n\n".join(s.table(every=args.every) for s in sims), sims
