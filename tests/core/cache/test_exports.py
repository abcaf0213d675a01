"""``tokenbox_core.cache`` exports exactly its ``__all__``, including the names DESIGN.md promises."""

from __future__ import annotations

import types

import tokenbox_core.cache as cache


def test_all_is_sorted_complete_and_has_the_design_names() -> None:
    """__all__ is sorted, every name exists, every public attribute is listed, DESIGN.md's names are in it."""
    names = list(cache.__all__)
    assert names == sorted(names) and len(names) == len(set(names))
    public = {n for n, v in vars(cache).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == set(names)
    assert set(names) >= {"simulate_cache", "CacheRules", "cache_rules", "rule_names", "TurnCheck"}
