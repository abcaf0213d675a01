"""Compiling one spec of a batch into a result record, with one counter and box per worker (issue 16 §2).

A record is plain, deterministic data: the laid-out ``messages`` (``text`` for a text-mode layout), the
``fingerprint``, the headline numbers (``total_tokens``, ``max_tokens``, the
count of sections by status, the number of removed items) — no run ids,
timestamps or latencies, so every engine writes the same bytes.  A spec that
fails (bad JSON, an invalid field, a critical overflow) becomes an error
record with its ``line``, the one-line ``error`` and the ``input`` text: no
record is ever lost.
"""

from __future__ import annotations

from typing import Any

from tokenbox_core.box import TokenBox
from tokenbox_core.errors import TokenBoxError
from tokenbox_core.spec import LayoutSpec, loads_spec

__all__ = ["SpecCompiler"]

_MAX_BOXES = 64


class SpecCompiler:
    """A stateful compiler of spec tasks: one per worker process (or Ray actor), reused for every record.

    It keeps one :class:`TokenBox` per distinct (budget, counter, separator,
    mode) — so a batch of specs with the same budget and model loads its
    counter once and re-uses one box — and returns one record per task.

    >>> record = SpecCompiler()((1, '{"budget": 50, "counter": "whitespace", '
    ...     '"sections": [{"id": "a", "content": "one two three"}]}', "<doc>"))
    >>> record["ok"], record["total_tokens"], record["statuses"]
    (True, 3, {'kept': 1})
    """

    def __init__(self) -> None:
        self._boxes: dict[tuple[Any, ...], TokenBox] = {}

    def box(self, spec: LayoutSpec) -> TokenBox:
        """The worker's box for the spec's budget, counter, separator and mode."""
        key = (repr(spec.budget.to_dict()), spec.counter, spec.separator, spec.mode)
        box = self._boxes.get(key)
        if box is None:
            if len(self._boxes) >= _MAX_BOXES:
                self._boxes.clear()
            box = self._boxes[key] = spec.box()
        return box

    def __call__(self, task: tuple[int, str, str]) -> dict[str, Any]:
        line, text, source = task
        try:
            spec = loads_spec(text, fmt="json", source=f"{source} line {line}")
            layout = self.box(spec).layout(spec.sections)
            statuses: dict[str, int] = {}
            for section in layout.sections:
                statuses[section.status] = statuses.get(section.status, 0) + 1
            return {
                "line": line,
                "ok": True,
                "name": spec.name,
                "fingerprint": layout.fingerprint,
                "total_tokens": layout.total_tokens,
                "max_tokens": layout.max_tokens,
                "statuses": dict(sorted(statuses.items())),
                "removed": len(layout.removed),
                # chat messages when the layout was sized as messages; a text-mode layout sends its text
                **({"messages": layout.messages} if layout.mode == "messages" else {"text": layout.text}),
            }
        except TokenBoxError as exc:
            return _error(line, str(exc), text)
        except Exception as exc:  # a batch never loses a record: an unexpected failure is an error row too
            return _error(line, f"{type(exc).__name__}: {exc}", text)


def _error(line: int, message: str, text: str) -> dict[str, Any]:
    return {"line": line, "ok": False, "error": " ".join(message.split()), "input": text}
