"""Which rules can match a text, decided in one pass (chapter §6.9.2 Layer 1, made cheap).

Every :class:`~tokenbox_core.defense.rules.Rule` has literal *gates*: groups
of substrings, one of each group being necessary for a match.  Asking each
literal with ``str.__contains__`` costs one scan per literal (hundreds per
text).  :class:`Prefilter` asks them all at once: with the optional
``ahocorasick-rs`` package (``pip install "tokenbox-context[defense]"``, the
Rust ``aho-corasick`` crate compiled to a DFA) one Aho-Corasick pass reports
every literal present (overlapping matches included), and
the rules whose every group meets that set are the open ones (kept as bit
masks: one bit per gate group).  The same pass reports *probes*, literals
the caller asks about besides the gates (the override verbs, rot13 keywords,
the lower-case forms of the case-sensitive rules' gates), one bit each.  Without the
package it falls back to the memoised per-literal lookups of
:meth:`Rule.opens`.  Both paths answer exactly ``k in text`` for every
literal, so they open the same rules and the detector's decisions do not
depend on which one runs (a hypothesis property pins that).
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Sequence
from typing import Any

from tokenbox_core.defense.rules import Rule, line_starts_before
from tokenbox_core.defense.scan_at import occurrences

__all__ = ["Prefilter", "native_available"]

_LITERAL = operator.itemgetter(0)
"""The literal index of an automaton match ``(index, start, end)``."""


def _automaton_module() -> Any | None:
    try:
        return importlib.import_module("ahocorasick_rs")
    except ImportError:
        return None


def native_available() -> bool:
    """True when ``ahocorasick-rs`` (the ``defense`` extra) is installed."""
    return _automaton_module() is not None


class Prefilter:
    """The open rules of ``rules`` for a text: native Aho-Corasick when available, else per-literal lookups.

    ``native=None`` uses the automaton when ``ahocorasick_rs`` imports, ``False``
    forces the pure-Python path, ``True`` requires the package (an
    ``ImportError`` naming the extra otherwise).
    """

    def __init__(self, rules: Sequence[Rule], *, native: bool | None = None, probes: Sequence[str] = ()) -> None:
        self.rules = tuple(rules)
        self.probes = tuple(probes)
        self._gates = tuple(tuple(frozenset(group) for group in rule.gate) for rule in self.rules)
        module = _automaton_module() if native is not False else None
        if native is True and module is None:
            raise ImportError('Prefilter(native=True) needs ahocorasick-rs: pip install "tokenbox-context[defense]"')
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
            self._probe_shift = bit
            for i, literal in enumerate(self.probes):
                masks[literal] = masks.get(literal, 0) | (1 << (bit + i))
            literals = sorted(masks)
            self._masks = tuple(masks[literal] for literal in literals)
            # Per rule, the indexes of its anchors that are gate literals or probes: their match starts
            # come from this pass too.  Anchors that are nothing else ("the ", "rm", "prior") are not in
            # the automaton, whose every hit costs a tuple (they were a third of all hits): they are looked
            # up with ``str.find`` when one of their rules opens.
            index = {literal: i for i, literal in enumerate(literals)}
            # A line-start rule with heads (see LINE_HEADS) has its heads looked up like anchors; the line
            # starts before them are derived from their positions (:func:`line_starts_before`).
            spots = tuple(rule.anchors or rule.heads for rule in self.rules)
            self._anchor_indexes = tuple(frozenset(index[a] for a in spot if a in index) for spot in spots)
            self._extra_anchors = tuple(tuple(a for a in spot if a not in index) for spot in spots)
            # Per literal, the rules one of whose gate groups holds it (one bit per rule): only those can open.
            self._rules_of = tuple(
                sum(1 << r for r, gates in enumerate(self._gates) if any(literal in g for g in gates))
                for literal in literals
            )
            self._anchored = tuple(bool(spot) for spot in spots)
            self._heads = tuple(bool(rule.heads) for rule in self.rules)
            # A DFA: a few hundred literals make a small one, and it reads a text several times faster
            # than the default (NFA) form.  Standard match semantics, so overlapping matches are reported.
            self._automaton = module.AhoCorasick(literals, implementation=module.Implementation.DFA)

    @property
    def native(self) -> bool:
        """True when this prefilter runs the Aho-Corasick automaton."""
        return self._automaton is not None

    def open_rules(self, text: str, words: str | None = None) -> list[Rule]:
        """The rules, in order, whose every gate group has a member in ``text``.

        ``words`` (from :func:`~tokenbox_core.defense.rules.word_runs`) speeds the
        pure-Python path only; the automaton reads ``text`` once.
        """
        return self.scan(text, words)[0]

    def scan(self, text: str, words: str | None = None) -> tuple[list[Rule], int | None, list[list[int] | None] | None]:
        """The open rules (as :meth:`open_rules`), which probes occur in ``text``, and anchor positions.

        The probes come back as an int, bit ``i`` set when ``probes[i]`` is a
        substring of ``text``, found in the same automaton pass as the gates.
        The third item holds, for each open rule, where its anchors occur (every
        occurrence, overlapping ones included; for a line-start rule with heads,
        the line starts before its heads; ``None`` for a rule without either),
        to be passed to :meth:`Rule.finditer`.  The pure-Python path
        looks for neither and returns ``None`` for both (the caller then
        decides without them, as it would without this pass).
        """
        if self._automaton is None:
            seen: dict[str, bool] = {}
            return [rule for rule in self.rules if rule.opens(text, seen, words)], None, None
        hits = self._automaton.find_matches_as_indexes(text, overlapping=True)
        if not hits:
            return [], 0, []
        present = set(map(_LITERAL, hits))
        masks, rules_of = self._masks, self._rules_of
        have = candidates = 0
        for i in present:
            have |= masks[i]
            candidates |= rules_of[i]
        # The candidate rules in order (lowest bit first); open when the bits present cover every group.
        needs, anchors = self._needs, self._anchor_indexes
        opened: list[int] = []
        wanted: set[int] = set()
        while candidates:
            lowest = candidates & -candidates
            candidates ^= lowest
            r = lowest.bit_length() - 1
            if have & needs[r] == needs[r]:
                opened.append(r)
                wanted |= anchors[r]
        starts: list[list[int] | None] = [None] * len(opened)
        wanted &= present
        at: dict[int, list[int]] = {i: [] for i in wanted}
        if wanted:
            # Positions only of the anchors of open rules that occur: one pass over the hits.
            for i, start, _ in hits:
                if i in wanted:
                    at[i].append(start)
        for n, r in enumerate(opened):
            if self._anchored[r]:
                found: list[int] = []
                for i in anchors[r] & wanted:
                    found += at[i]
                found += occurrences(text, self._extra_anchors[r])
                starts[n] = line_starts_before(text, found, self.rules[r].head_lead) if self._heads[r] else found
        return [self.rules[r] for r in opened], have >> self._probe_shift, starts
