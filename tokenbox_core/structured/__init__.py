"""Structured data in the context: cheapest lossless rendering, filtering, aggregation, sampling.

Chapter §6.12.1 (relative costs of pretty/minified JSON, CSV, Markdown, compact
formats) and §6.12.3 (schema-aware filtering, aggregation, sampling).  Importing
this package registers the ``structured`` lens.

>>> from tokenbox_core.structured import cheapest
>>> cheapest({"name": "Ada", "born": 1815}, "o200k_base").format
'kv'
"""

from tokenbox_core.lenses import register_lens as _register_lens
from tokenbox_core.structured._lens import structured_lens as _structured_lens
from tokenbox_core.structured._reduce import TableFit, aggregate, fit_table, sample_rows, select_columns, select_rows
from tokenbox_core.structured._render import FORMATS, Rendering, cheapest, parse, render

_register_lens("structured", _structured_lens, replace=True)

__all__ = [
    "FORMATS",
    "Rendering",
    "TableFit",
    "aggregate",
    "cheapest",
    "fit_table",
    "parse",
    "render",
    "sample_rows",
    "select_columns",
    "select_rows",
]
