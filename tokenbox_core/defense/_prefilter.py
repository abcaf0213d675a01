"""Which rules can match a text, decided in one pass (chapter §6.9.2 Layer 1, made cheap).

Every :class:`~tokenbox_core.defense._rules.Rule` has literal *gates*: groups
of literals, one of each group being necessary for a match (see
:mod:`~tokenbox_core.defense._gates`).  :class:`Prefilter` finds which of those
literals occur in a text, and the rules whose every group meets that set are
the open ones: only their patterns run.  It also reports *probes*, literals the
caller asks about besides the gates (the override verbs), from the same pass.

With the optional ``ahocorasick-rs`` package (``pip install
"tokenbox-context[defense]"``, the Rust ``aho-corasick`` crate compiled to a
DFA) the literals are found in one Aho-Corasick pass, which makes scanning
megabytes of retrieved text an order of magnitude cheaper; without it each
literal is looked for with ``str.find``.  Both answer the same for every
literal, so the detector's decisions do not depend on which one runs (a test
pins that on the corpus).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from tokenbox_core.defense._gates import Literal
from tokenbox_core.defense._rules import Rule

__all__ = ["Prefilter", "native_available"]


def _automaton_module() -> Any | None:
    try:
        return importlib.import_module("ahocorasick_rs")
    except ImportError:
        return None


def native_available() -> bool:
    """True when ``ahocorasick-rs`` (the ``defense`` extra) is installed."""
    return _automaton_module() is not None


class Prefilter:
    """The open rules of ``rules`` for a text, and which ``probes`` occur in it.

    ``native=None`` uses the Aho-Corasick automaton when ``ahocorasick_rs``
    imports, ``False`` looks each literal up with ``str.find``, ``True``
    requires the package (an ``ImportError`` naming the extra otherwise).
    """

    def __init__(self, rules: Sequence[Rule], *, native: bool | None = None, probes: Sequence[str] = ()) -> None:
        self.rules = tuple(rules)
        self.probes = tuple(probes)
        # One bit per (rule, gate group), then one per probe; a literal carries the bits of the groups it is in
        # (and of its probe), and a rule opens when the bits of the literals present cover all of its groups.
        masks: dict[str, int] = {}
        needs: list[int] = []
        bit = 0
        for rule in self.rules:
            need = 0
            for group in rule.gate:
                for spec in group:
                    masks[spec] = masks.get(spec, 0) | 1 << bit
                need |= 1 << bit
                bit += 1
            needs.append(need)
        self._needs = tuple(needs)
        self._probe_shift = bit
        for k, spec in enumerate(self.probes):
            masks[spec] = masks.get(spec, 0) | 1 << (bit + k)
        specs = sorted(masks)
        self._literals = tuple(Literal.parse(spec) for spec in specs)
        self._masks = tuple(masks[spec] for spec in specs)
        texts = sorted({literal.text for literal in self._literals})
        # Per text the automaton finds, the literals written with it (``"ai"`` and ``"\\bai\\b"``, say).
        self._written = tuple(
            tuple(i for i, literal in enumerate(self._literals) if literal.text == text) for text in texts
        )
        module = _automaton_module() if native is not False else None
        if native is True and module is None:
            raise ImportError('Prefilter(native=True) needs ahocorasick-rs: pip install "tokenbox-context[defense]"')
        # A DFA: a few hundred literals make a small one, and it reads a text several times faster than the
        # default (NFA) form.  Overlapping matches, so every occurrence of every literal is reported.
        self._automaton = (
            None if module is None else module.AhoCorasick(texts, implementation=module.Implementation.DFA)
        )

    @property
    def native(self) -> bool:
        """True when this prefilter runs the Aho-Corasick automaton."""
        return self._automaton is not None

    def _bits(self, text: str) -> int:
        """The group and probe bits of the literals that occur in ``text`` with their word boundaries."""
        have = 0
        if self._automaton is None:
            for literal, mask in zip(self._literals, self._masks, strict=True):
                if mask & ~have and literal.occurs(text):
                    have |= mask
            return have
        seen: set[int] = set()
        for found, start, _ in self._automaton.find_matches_as_indexes(text, overlapping=True):
            for i in self._written[found]:
                if i not in seen and self._literals[i].at(text, start):
                    seen.add(i)
                    have |= self._masks[i]
        return have

    def scan(self, text: str) -> tuple[list[Rule], list[str]]:
        """The rules, in order, whose every gate group has a member in ``text``; the probes in ``text``, in order."""
        have = self._bits(text)
        rules = [rule for rule, need in zip(self.rules, self._needs, strict=True) if have & need == need]
        probes = have >> self._probe_shift
        return rules, [p for k, p in enumerate(self.probes) if probes >> k & 1]
