"""Which rules can match a text, decided in one pass (chapter §6.9.2 Layer 1, made cheap).

Every :class:`~tokenbox_core.defense.rules.Rule` has literal *gates*: groups
of substrings, one of each group being necessary for a match.  Asking each
literal with ``str.__contains__`` costs one scan per literal (hundreds per
text).  :class:`Prefilter` asks them all at once: with the optional
``pyahocorasick`` package (``pip install "tokenbox-context[defense]"``) one
Aho-Corasick pass reports every literal present (overlaps included), and
the rules whose every group meets that set are the open ones (kept as bit
masks: one bit per gate group).  Without the
package it falls back to the memoised per-literal lookups of
:meth:`Rule.opens`.  Both paths answer exactly ``k in text`` for every
literal, so they open the same rules and the detector's decisions do not
depend on which one runs (a hypothesis property pins that).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from .rules import Rule

__all__ = ["Prefilter", "native_available"]


def _automaton_module() -> Any | None:
    try:
        return importlib.import_module("ahocorasick")
    except ImportError:
        return None


def native_available() -> bool:
    """True when ``pyahocorasick`` (the ``defense`` extra) is installed."""
    return _automaton_module() is not None


class Prefilter:
    """The open rules of ``rules`` for a text: native Aho-Corasick when available, else per-literal lookups.

    ``native=None`` uses the automaton when ``pyahocorasick`` imports, ``False``
    forces the pure-Python path, ``True`` requires the package (an
    ``ImportError`` naming the extra otherwise).
    """

    def __init__(self, rules: Sequence[Rule], *, native: bool | None = None) -> None:
        self.rules = tuple(rules)
        self._gates = tuple(tuple(frozenset(group) for group in rule.gate) for rule in self.rules)
        module = _automaton_module() if native is not False else None
        if native is True and module is None:
            raise ImportError('Prefilter(native=True) needs pyahocorasick: pip install "tokenbox-context[defense]"')
        self._automaton: Any | None = None
        if module is not None:
            # One bit per (rule, gate group); a literal carries the bits of the groups it belongs to,
            # and a rule opens when the bits of the literals present cover all of its groups.
            masks: dict[str, int] = {}
            needs: list[int] = []
            bit = 0
            for gates in self._gates:
                need = 0
                for group in gates:
                    for literal in group:
                        masks[literal] = masks.get(literal, 0) | (1 << bit)
                    need |= 1 << bit
                    bit += 1
                needs.append(need)
            self._needs = tuple(needs)
            automaton = module.Automaton()
            for literal in sorted(masks):
                automaton.add_word(literal, masks[literal])
            automaton.make_automaton()
            self._automaton = automaton

    @property
    def native(self) -> bool:
        """True when this prefilter runs the Aho-Corasick automaton."""
        return self._automaton is not None

    def open_rules(self, text: str, words: str | None = None) -> list[Rule]:
        """The rules, in order, whose every gate group has a member in ``text``.

        ``words`` (from :func:`~tokenbox_core.defense.rules.word_runs`) speeds the
        pure-Python path only; the automaton reads ``text`` once.
        """
        if self._automaton is None:
            seen: dict[str, bool] = {}
            return [rule for rule in self.rules if rule.opens(text, seen, words)]
        have = 0
        for _, mask in self._automaton.iter(text):
            have |= mask
        return [rule for rule, need in zip(self.rules, self._needs, strict=True) if have & need == need]
