"""``tokenbox cache-sim``: replay a transcript through TokenBox's trimmers under providers' cache rules.

``--rules openai,openai-24h,anthropic,anthropic-1h`` reports each rule set in
turn (default: the rules of ``--model``).  ``--usage FILE`` (one provider usage
per request, JSON list or JSONL, any shape ``read_usage`` reads) checks a live
session against the simulation of the requests as they were sent (``--sent``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tokenbox_core.cache._report import simulations_html
from tokenbox_core.cache._rules import CacheRules, cache_rules
from tokenbox_core.cache._simulate import CacheSimulation, simulate_cache
from tokenbox_core.cache._window import CacheWindow
from tokenbox_core.errors import TokenBoxError

__all__ = ["add_command", "run"]

HELP = "replay a transcript turn by turn and simulate the provider's prompt cache"
_SENT = ("as-is", "cache-aware", "plain")


def add_command(commands: Any) -> argparse.ArgumentParser:
    """Register ``cache-sim`` on the command's sub-parsers."""
    p: argparse.ArgumentParser = commands.add_parser("cache-sim", help=HELP, description=HELP + ".")
    p.add_argument("transcript", help="JSONL (one chat message per line) or a JSON list of messages")
    p.add_argument("--model", default="gpt-4o", help="model for counting and cache rules (default gpt-4o)")
    p.add_argument(
        "--rules",
        "--provider",
        dest="rules",
        help="comma-separated rule sets, e.g. openai,openai-24h,anthropic,anthropic-1h (default: from --model)",
    )
    p.add_argument("--budget", type=int, default=32_000, help="tokens per request (default 32000)")
    p.add_argument("--low-water", type=float, default=0.7, help="cache-aware: share kept after a cut (0.7)")
    p.add_argument("--prompt-cache-key", help="OpenAI's prompt_cache_key for every request (OpenAI rules only)")
    p.add_argument("--usage", metavar="FILE", help="the provider's usage per request (JSON list or JSONL) to check")
    p.add_argument(
        "--sent", choices=_SENT, default="as-is", help="with --usage: how the requests were trimmed (default as-is)"
    )
    p.add_argument("--every", type=int, default=10, help="print every N-th turn in the table (10)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--html", metavar="FILE", help="write the per-turn chart as an HTML report")
    return p


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenBoxError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TokenBoxError(f"{path}: not UTF-8 at byte {exc.start}") from exc


def _records(path: str) -> list[Any]:
    text = _read(path)
    try:
        if text.lstrip().startswith("["):
            records = json.loads(text)
        else:
            records = []
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise TokenBoxError(f"{path}, line {n}: not JSON ({exc.msg})") from exc
    except json.JSONDecodeError as exc:
        raise TokenBoxError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(records, list):
        raise TokenBoxError(f"{path}: expected a JSON list or one JSON value per line")
    return records


def _load(path: str) -> list[dict[str, Any]]:
    messages = _records(path)
    if not all(isinstance(m, dict) for m in messages):
        raise TokenBoxError(f"{path}: expected chat messages (JSON objects with a 'role')")
    return messages


def _rule_sets(args: argparse.Namespace) -> list[CacheRules]:
    names = [n.strip() for n in (args.rules or args.model).split(",") if n.strip()]
    if not names:
        raise TokenBoxError("--rules is empty: name at least one rule set, e.g. --rules openai,anthropic")
    return [cache_rules(n) for n in names]


def run(args: argparse.Namespace) -> tuple[str, list[CacheSimulation]]:
    """The report text (table or JSON) and the simulations; writes ``--html`` when asked."""
    from tokenbox_core.chat import fit_conversation

    if args.budget <= 0:
        raise TokenBoxError(f"--budget must be a positive number of tokens, got {args.budget}")
    messages = _load(args.transcript)
    window = CacheWindow(low_water=args.low_water)
    usage = _records(args.usage) if getattr(args, "usage", None) else None
    key = getattr(args, "prompt_cache_key", None)

    def trimmer(kind: str) -> Any:
        if kind == "as-is":
            return lambda ms: ms
        cache: CacheWindow | bool = window if kind == "cache-aware" else False
        return lambda ms: fit_conversation(ms, args.budget, counter=args.model, cache_aware=cache)

    labels = {"cache-aware": "TokenBox cache-aware", "plain": "TokenBox plain", "as-is": "as sent"}
    sims: list[CacheSimulation] = []
    for rules in _rule_sets(args):
        routed = key if rules.keyed else None
        tag = f" [{rules.name}]" if args.rules and "," in args.rules else ""
        for kind in ("cache-aware", "plain"):
            sims.append(
                simulate_cache(
                    messages,
                    trimmer(kind),
                    rules=rules,
                    counter=args.model,
                    prompt_cache_key=routed,
                    label=labels[kind] + tag,
                )
            )
        if usage is not None:
            sent = getattr(args, "sent", "as-is")
            sims.append(
                simulate_cache(
                    messages,
                    trimmer(sent),
                    rules=rules,
                    counter=args.model,
                    prompt_cache_key=routed,
                    reported=usage,
                    label=f"{labels[sent]}, checked{tag}",
                )
            )
    if args.html:
        Path(args.html).write_text(simulations_html(sims), encoding="utf-8")
    if args.json:
        return json.dumps([s.to_dict() for s in sims], indent=2), sims
    return "\n\n".join(s.table(every=args.every) for s in sims), sims
