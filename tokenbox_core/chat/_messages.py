"""Framework-neutral chat messages: roles, per-message overrides, tool groups and sizes.

A conversation is a sequence of dicts in the OpenAI chat shape, the one every
provider SDK and both frameworks convert to (chapter §6.2.4, multi-turn):
``role`` (``system``, ``developer``, ``user``, ``assistant``, ``tool`` ...),
``content`` (a string or a list of content parts), and optionally ``name``,
``tool_calls`` (``[{"id", "type": "function", "function": {"name",
"arguments"}}]``), ``tool_call_id``, a stable ``id`` and the reserved key
``"tokenbox"``: per-message options, ``{"critical": bool}`` and/or
``{"priority": int}``, stripped from the output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core.errors import CounterError, SectionError, TokenBoxError
from tokenbox_core.tokens import PRIMING_TOKENS, TokenCounter, content_text, get_counter
from tokenbox_core.tokens._messages import TOKENS_PER_MESSAGE, message_token_count

__all__ = [
    "OVERRIDE_KEY",
    "SYSTEM_ROLES",
    "ChatCounter",
    "Roles",
    "ToolGroups",
    "content_text",
    "matcher",
    "tool_groups",
]

OVERRIDE_KEY = "tokenbox"
"""The reserved per-message key: ``{"critical": bool, "priority": int, "id": str}``; never sent (``id`` names the
message in layouts and markers without an ``id`` key, which providers reject)."""

SYSTEM_ROLES = frozenset({"system", "developer"})
"""Roles that carry instructions rather than conversation."""

Roles = str | Sequence[str] | Callable[[Mapping[str, Any]], bool]
"""Which messages a rule applies to: a role, several roles, or a predicate over a message."""


def matcher(roles: Roles) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate over messages for ``roles`` (a role name, a list of them, or a predicate as it is)."""
    if isinstance(roles, str):
        return lambda m: m.get("role") == roles
    if callable(roles):
        return roles
    names = frozenset(roles)
    for name in names:
        if not isinstance(name, str):
            raise SectionError(f"roles must be strings, got {name!r}; e.g. 'user' or ['user', 'tool']")
    return lambda m: m.get("role") in names


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


@dataclass(frozen=True)
class ToolGroups:
    """The atomic tool groups of a conversation: an assistant message with ``tool_calls`` and every tool
    message answering one of its calls (chapter §6.2.4: a call and all its results travel together).

    ``group_of`` maps each grouped index to the index of its call message,
    ``members`` a call's index to all its group's indices in order;
    ``contiguous`` is False when some result does not directly follow the
    previous member of its group (a message stands between a call and a result)
    or answers a call another result answered already.
    """

    group_of: dict[int, int]
    members: dict[int, list[int]]
    contiguous: bool = True

    def unit(self, index: int) -> list[int]:
        """The indices kept or removed together with ``index`` (itself alone when it is in no group)."""
        a = self.group_of.get(index)
        return self.members[a] if a is not None else [index]


def tool_groups(messages: Sequence[Mapping[str, Any]]) -> ToolGroups:
    """Group each tool call with its results: a result joins the call whose ``id`` it names (earlier in the
    list); a result without a matching id joins the call it directly follows (after other results)."""
    grouper = _Grouper()
    for i, m in enumerate(messages):
        role = m.get("role")
        grouper.add(i, m, role, m.get("tool_calls") if role != "tool" else None)
    return grouper.groups()


class _Grouper:
    """:func:`tool_groups` one message at a time (``read_messages`` feeds it in its single pass)."""

    __slots__ = ("answered", "contiguous", "current", "group_of", "members", "owner")

    def __init__(self) -> None:
        self.owner: dict[str, int] = {}
        self.group_of: dict[int, int] = {}
        self.members: dict[int, list[int]] = {}
        self.contiguous = True
        self.current: int | None = None  # the call that directly following results join
        self.answered: set[str] = set()  # tool_call_ids a result answered (a second one is not contiguous either)

    def add(self, i: int, m: Mapping[str, Any], role: Any, calls: Any) -> None:
        """Message ``i`` (``m``, its ``role`` and its ``tool_calls``, read by the caller)."""
        if role == "tool":
            call_id = m.get("tool_call_id")
            a = self.owner.get(str(call_id)) if call_id else None
            if a is None:
                a = self.current
            if a is not None:
                group = self.members[a]
                if group[-1] != i - 1:
                    self.contiguous = False
                if call_id:
                    key = f"{a}:{call_id}"
                    if key in self.answered:
                        self.contiguous = False
                    self.answered.add(key)
                group.append(i)
                self.group_of[i] = a
            return
        if calls:
            for call in calls:
                call_id = _field(call, "id")
                if call_id:
                    self.owner[str(call_id)] = i
            self.members[i] = [i]
            self.group_of[i] = i
            self.current = i
        else:
            self.current = None

    def groups(self) -> ToolGroups:
        return ToolGroups(self.group_of, self.members, self.contiguous)

    def copy(self) -> _Grouper:
        """An independent grouper in the same state (to continue a conversation read earlier, and keep that one)."""
        out = _Grouper()
        out.owner, out.group_of = dict(self.owner), dict(self.group_of)
        out.members = {a: list(m) for a, m in self.members.items()}
        out.contiguous, out.current = self.contiguous, self.current
        out.answered = set(self.answered)
        return out


def _media_free(message: Mapping[str, Any]) -> tuple[Mapping[str, Any], int]:
    """The message without its media placeholders, and how many there were.

    A placeholder is a non-text part that carries no data (``{"type": "video"}``): no published rule can cost
    it, so it is charged a flat ``media_tokens``.  Parts with data (an image or audio with its bytes, URL or
    size) stay in the message and are costed by the model's rule (:mod:`tokenbox_core.media`, issue 14).
    """
    content = message.get("content")
    if not isinstance(content, list | tuple):
        return message, 0
    kept = [p for p in content if not (isinstance(p, Mapping) and set(p) <= {"type"} and p.get("type") != "text")]
    placeholders = len(content) - len(kept)
    if not placeholders:
        return message, 0
    return {**message, "content": kept}, placeholders


class ChatCounter:
    """Per-message sizes in one unit, plus ``base``: what an empty list costs.

    ``count(messages) == base + sum(size(m) for m in messages)``.  Build one
    with :meth:`of` from a counter name or ``TokenCounter`` (exact chat counts
    as OpenAI bills them: 3 priming tokens, 4 per message, role, content,
    name, tool-call payloads and ids — :func:`tokenbox_core.count_message_tokens`),
    or from a callable over one message; or directly, for a size function
    that also takes the message's input index (``None`` for a message the
    engine made, such as an omission marker or a partial cut's candidate).
    ``size_at`` (optional, for an adapter that keeps the original messages):
    the size of input message ``i`` by its index alone — the same number
    ``size(messages[i], i)`` gives —, so the engine need not read (or make)
    a message to size it.
    """

    def __init__(
        self,
        size: Callable[[Mapping[str, Any], int | None], int],
        *,
        base: int = 0,
        name: str = "custom",
        text: TokenCounter | None = None,
        size_at: Callable[[int], int] | None = None,
    ) -> None:
        self._size = size
        self._size_at = size_at
        self.base = base
        self.name = name
        self.core = text
        self._plain_many: Callable[[Sequence[Mapping[str, Any]], Iterable[int]], dict[int, int]] | None = None

    @classmethod
    def of(cls, spec: Any, *, media_tokens: int | None = None) -> ChatCounter:
        """A ChatCounter for a counter name, a ``TokenCounter``, a callable over one message dict, or itself.

        ``media_tokens``: the cost of each media placeholder (a non-text part without data, e.g. a video or
        document block) with a core counter; parts with data are costed by the model's rule either way.
        """
        if isinstance(spec, ChatCounter):
            return spec
        if isinstance(spec, str) or (not callable(spec) or isinstance(spec, TokenCounter)):
            core = get_counter(spec)
            count = core.count
            per = media_tokens

            def sized(m: Mapping[str, Any], i: int | None) -> int:
                if per is None:
                    return message_token_count(m, core)
                plain, media = _media_free(m)
                return message_token_count(plain, core) + media * per

            def plain_many(messages: Sequence[Mapping[str, Any]], indices: Iterable[int]) -> dict[int, int]:
                """``sized`` of the plain messages among ``indices``: their texts counted in one batch, each role
                once."""
                plain: list[tuple[int, str, str]] = []
                for i in indices:
                    m = messages[i]
                    content = m.get("content")
                    if type(content) is str and not (m.get("name") or m.get("tool_calls") or m.get("tool_call_id")):
                        plain.append((i, m.get("role") or "", content))
                texts = [c for _, _, c in plain if c]
                counts = iter([core.count(t) for t in texts])
                roles: dict[str, int] = {}
                out: dict[int, int] = {}
                for i, role, content in plain:
                    r = roles.get(role)
                    if r is None:
                        r = roles[role] = count(role) if role else 0
                    out[i] = TOKENS_PER_MESSAGE + r + (next(counts) if content else 0)
                return out

            chat = cls(sized, base=PRIMING_TOKENS, name=core.name, text=core)
            chat._plain_many = plain_many
            return chat
        name = getattr(spec, "__qualname__", None) or type(spec).__name__
        return cls(lambda m, i: spec(m), name=name)

    def size(self, message: Mapping[str, Any], index: int | None = None) -> int:
        """The tokens ``message`` adds to a list; a counter that raises or returns a non-count is a CounterError
        naming it."""
        return self._checked(self._size, index, message, index)

    def size_of(self, messages: Sequence[Mapping[str, Any]], index: int) -> int:
        """``size(messages[index], index)``: the size of an input message, by ``size_at`` when the counter has
        it (the message is then not read)."""
        at = self._size_at
        if at is None:
            return self.size(messages[index], index)
        return self._checked(at, index, index)

    def _checked(self, size: Callable[..., Any], index: int | None, *args: Any) -> int:
        """``size(*args)`` for message ``index``, as a count: what it raises or returns that is not one is a
        CounterError naming the counter."""
        try:
            value = size(*args)
        except TokenBoxError:
            raise
        except Exception as exc:
            raise self._raised(exc, index) from exc
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._not_a_count(value, index)
        return value

    def _not_a_count(self, value: Any, index: int | None) -> CounterError:
        return CounterError(
            f"token counter {self.name} returned {value!r} for message {index}; it must return an int >= 0"
        )

    def _raised(self, exc: Exception, index: int | None) -> CounterError:
        return CounterError(
            f"token counter {self.name} raised {type(exc).__name__}: {exc} (on message "
            f"{'new' if index is None else index}); fix the counter or pass a counter name such as 'gpt-4o'"
        )

    def sizes(self, messages: Sequence[Mapping[str, Any]], indices: Iterable[int]) -> dict[int, int]:
        """``{i: size(messages[i], i)}`` for ``indices``, in their order: with a core counter the plain text
        messages' texts are counted in one batch and each role once; the others, and
        everything when the batch raises (so the first failing message raises what it always did), one by
        one."""
        order = list(indices)
        known: dict[int, int] = {}
        if self._plain_many is not None:
            try:
                known = self._plain_many(messages, order)
            except Exception:
                known = {}
        return {i: known[i] if i in known else self.size_of(messages, i) for i in order}

    def text_counter(self, role: str) -> TokenCounter:
        """A text counter in this counter's units, for text the engine makes (an omission marker).

        With a user counter, text is sized as a message of ``role`` holding it
        (overhead included): a safe over-estimate.
        """
        if self.core is not None:
            return self.core
        from tokenbox_core.tokens._counters import CallableCounter

        return CallableCounter(lambda text: self.size({"role": role, "content": text}), name=self.name)
