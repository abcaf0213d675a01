"""Defensive compilation: untrusted text stays data (chapter §6.9, with §6.5).

Algorithm 6.6 as stages: :func:`sanitize` (phase 1: invisible and smuggling
characters, normalisation), an :class:`InjectionDetector` (the default
:class:`HeuristicDetector`) and per-source policies in :class:`DefensePolicy`
(reject, quarantine, allow), :class:`NanoGuardDetector` (a local classifier
model, the optional ``classifier`` extra), :class:`TrustLevel` (phase 2), HMAC-derived
boundaries and spotlighting (phase 3), validation and the injection
vulnerability surface (phase 4, §6.9.4), and :func:`check_output` (Layer 4).
Turn it on in the compiler with ``CompilerConfig(defense=DefensePolicy(...))``
or around one layout with :func:`defensive_layout`.  Security events are
logged to the ``tokenbox.security`` logger.
"""

from tokenbox_core.defense._classifier import NanoGuardDetector
from tokenbox_core.defense._detector import CompositeDetector, Detection, HeuristicDetector, InjectionDetector
from tokenbox_core.defense._output import OutputCheck, check_output
from tokenbox_core.defense._pipeline import DefendedLayout, defensive_layout
from tokenbox_core.defense._policy import DefensePolicy, SourcePolicy, TrustLevel
from tokenbox_core.defense._sanitize import sanitize
from tokenbox_core.defense._spotlight import hierarchy_statement
from tokenbox_core.defense._stage import defend_sections
from tokenbox_core.defense._trace import DefenseReport

__all__ = [
    "CompositeDetector",
    "DefendedLayout",
    "DefensePolicy",
    "DefenseReport",
    "Detection",
    "HeuristicDetector",
    "InjectionDetector",
    "NanoGuardDetector",
    "OutputCheck",
    "SourcePolicy",
    "TrustLevel",
    "check_output",
    "defend_sections",
    "defensive_layout",
    "hierarchy_statement",
    "sanitize",
]
