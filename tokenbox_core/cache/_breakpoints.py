"""Cache breakpoints for breakpoint-style providers (Anthropic's ``cache_control``).

A breakpoint asks the provider to cache the prompt up to and including the
marked block.  :func:`cache_breakpoints` chooses where, most valuable first:

1. the end of the leading system/developer messages (static: policy, tools);
2. the end of the session tier (a summary message, marked by the caller with
   ``stable_until``) when there is one;
3. the last message of the request (the next turn appends after it, so its
   prefix is read back on the next turn);
4. the last message before the newest user message (a fallback read point when
   one turn appends more blocks than the provider looks back over).

Boundaries whose prefix is shorter than the provider's minimum are skipped (a
breakpoint there is wasted).  :func:`with_cache_control` returns the messages with
``cache_control`` set on the last content part of each chosen message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokenbox_core.errors import ConfigError
from tokenbox_core.tokens import TokenCounter, get_counter
from tokenbox_core.tokens._messages import message_token_count

__all__ = ["cache_breakpoints", "with_cache_control"]


def cache_breakpoints(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_breakpoints: int = 4,
    min_tokens: int = 1024,
    stable_until: int | None = None,
    counter: TokenCounter | str = "o200k_base",
) -> list[int]:
    """Indices of the messages that should carry a breakpoint, in message order.

    >>> msgs = [{"role": "system", "content": "policy " * 2000}, {"role": "user", "content": "hi"}]
    >>> cache_breakpoints(msgs)
    [0, 1]
    """
    if isinstance(max_breakpoints, bool) or not isinstance(max_breakpoints, int) or max_breakpoints < 0:
        raise ConfigError(f"max_breakpoints must be an integer >= 0, got {max_breakpoints!r}")
    if not messages or max_breakpoints == 0:
        return []
    tok = get_counter(counter)
    ends: list[int] = []
    total = 0
    for message in messages:
        total += message_token_count(message, tok)
        ends.append(total)
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    candidates = [lead - 1, stable_until, len(messages) - 1, last_user - 1]
    chosen: list[int] = []
    for index in candidates:
        if index is None or not 0 <= index < len(messages) or index in chosen:
            continue
        if ends[index] < min_tokens:
            continue
        chosen.append(index)
        if len(chosen) == max_breakpoints:
            break
    return sorted(chosen)


def with_cache_control(
    messages: Sequence[Mapping[str, Any]], indices: Sequence[int], *, ttl: str | None = None
) -> list[dict[str, Any]]:
    """Copies of ``messages`` with ``cache_control`` on the last content part of each indexed message.

    String content becomes one text part (the form Anthropic's API and
    LangChain's ``ChatAnthropic`` accept); the input is not modified.
    """
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl is not None:
        if ttl not in ("5m", "1h"):
            raise ConfigError(f"ttl must be '5m' or '1h', got {ttl!r}")
        marker["ttl"] = ttl
    wanted = set(indices)
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        copy = dict(message)
        if i in wanted:
            content = copy.get("content")
            parts: list[dict[str, Any]]
            if isinstance(content, str):
                parts = [{"type": "text", "text": content}]
            else:
                parts = [dict(p) for p in content or []]
            if not parts:
                raise ConfigError(f"message {i} has no content to carry a cache breakpoint")
            parts[-1]["cache_control"] = dict(marker)
            copy["content"] = parts
        out.append(copy)
    return out
