"""The detector as it was before the speed work of issue 12 (round 2), kept as the reference.

A verbatim copy of ``tokenbox_core/defense/{analyzers,detector,homoglyphs,lexicon,prefilter,rules,sanitize}.py``
at main 07b26d9 (imports made relative).  The fast paths of the shipped detector must decide exactly as this
does: ``test_reference_equivalence.py`` compares the two on generated text, the corpus and the benchmark mix.
Not collected by pytest (see ``conftest.collect_ignore``); not shipped.
"""

from .detector import HeuristicDetector
from .sanitize import detection_view, sanitize_report

__all__ = ["HeuristicDetector", "detection_view", "sanitize_report"]
