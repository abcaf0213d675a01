"""A conformance kit for the Cupel test-vector format (``wollax/cupel``, ``conformance/``).

``run_vector(path)`` runs one TOML vector (scoring, slicing, placing or
pipeline; required or optional) against :mod:`tokenbox_core.select` and
returns a :class:`VectorResult` with ``passed`` and a readable ``detail``.
``run_vectors(directory)`` runs every ``*.toml`` below a directory.

Vectors may use TOML 1.1's times without seconds (``2024-01-01T12:00Z``);
they are read as ``:00`` seconds (Python's TOML parsers implement 1.0).

>>> toml11_to_toml10('at = 2024-01-01T12:00Z  # "12:00" in comments and strings stays')
'at = 2024-01-01T12:00:00Z  # "12:00" in comments and strings stays'
"""

from tokenbox_core.testing.cupel._runner import VectorResult, run_vector, run_vectors
from tokenbox_core.testing.cupel._vectors import load_vector, toml11_to_toml10

__all__ = [
    "VectorResult",
    "load_vector",
    "run_vector",
    "run_vectors",
    "toml11_to_toml10",
]
