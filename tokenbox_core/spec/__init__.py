"""Layout specs: a JSON or TOML description of sections, a budget and a counter.

``tokenbox layout SPEC`` and :func:`load_spec` read this format::

    {
      "$schema": "./tokenbox-spec.schema.json",    optional: for editors, ignored
      "name": "support-bot",                       optional label (batch reports use it)
      "budget": 8192,                              or an object, see below
      "counter": "gpt-4o",                         encoding, model, "bytes", "approximate" or
                                                   "whitespace"; default "o200k_base"; an unknown
                                                   model falls back to cl100k_base
      "separator": "\\n\\n",                         joins sections (text mode); default "\\n\\n"
      "mode": "text",                              or "messages" (chat messages with overhead)
      "sections": [                                at least one, in output order
        {"id": "policy", "content": "You are terse.", "role": "system"},
        {"id": "docs", "shrink": 1, "priority": 2, "basis": 300, "grow": 1,
         "eviction": "lowest_score", "omission_marker": true,
         "items": [{"id": "d1", "content": "...", "score": 0.9}]}
      ]
    }

``budget`` is an integer (``max_tokens``) or an object with the fields of
:class:`~tokenbox_core._budget.ContextBudget`: ``max_tokens`` (required),
``target_tokens``, ``output_reserve``, ``reserved_slots`` (kind → tokens) and
``estimation_safety_margin_percent``.

A section has an ``id`` and either ``content`` (a string) or ``items`` (a
list), plus any of ``priority``, ``shrink``, ``grow``, ``min_tokens``,
``max_tokens``, ``basis``, ``strategy`` (a lens name or a list of names),
``keep`` (``head``/``tail``/``middle``), ``role``, ``eviction``
(``oldest``/``newest``/``lowest_score``), ``partial``, ``omission_marker``
(``true`` or a template using only ``{count}`` and ``{ids}``), ``item_separator`` and
``metadata``.  An item has an ``id`` and ``content`` plus any of ``role``,
``kind``, ``score``, ``priority``, ``group``, ``pinned``, ``tokens``, ``tags``,
``metadata``, ``source`` and ``timestamp`` (ISO 8601).  The meaning of every
field is the one of :class:`~tokenbox_core._sections.Section` and
:class:`~tokenbox_core._sections.Item`.

The same spec in TOML (``[budget]`` table, ``[[sections]]`` and
``[[sections.items]]`` arrays of tables)::

    counter = "gpt-4o"

    [budget]
    max_tokens = 8192
    output_reserve = 1024

    [[sections]]
    id = "policy"
    content = "You are terse."

The format is defined by pydantic models (:mod:`tokenbox_core.spec._models`),
whose JSON Schema ``tokenbox schema`` prints: save it and point your editor at
it (a ``"$schema"`` key naming the file is allowed in a spec) to get
completion and checking while you type::

    tokenbox schema > tokenbox-spec.schema.json

Unknown fields are errors (a typo such as ``prority`` must not be ignored).
Every problem raises :class:`~tokenbox_core.errors.SpecError` naming the file,
the place, the value and the fix:

>>> parse_spec({"budget": 100, "sections": [{"id": "a", "content": "x", "prority": 1}]}, source="s.json")
Traceback (most recent call last):
...
tokenbox_core.errors.SpecError: s.json: sections[0] ('a'): unknown field 'prority'; did you mean 'priority'?
>>> spec = parse_spec({"budget": 50, "counter": "whitespace", "sections": [{"id": "a", "content": "x y z"}]})
>>> spec.layout().total_tokens
3
"""

from tokenbox_core.errors import SpecError
from tokenbox_core.spec._build import LayoutSpec, parse_spec
from tokenbox_core.spec._files import decode_utf8, load_spec, loads_spec, read_text

__all__ = [
    "LayoutSpec",
    "SpecError",
    "decode_utf8",
    "load_spec",
    "loads_spec",
    "parse_spec",
    "read_text",
    "spec_json_schema",
]


def spec_json_schema() -> dict[str, object]:
    """The JSON Schema of the spec format (``tokenbox schema`` prints it); imports pydantic on first use."""
    from tokenbox_core.spec._models import spec_json_schema as schema

    return schema()
