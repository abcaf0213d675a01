"""``tokenbox_core.session`` exports exactly its ``__all__``, including the names DESIGN.md promises."""

from __future__ import annotations

import subprocess
import sys
import types

import tokenbox_core.session as session

DESIGN_NAMES = {
    "ContextSession",
    "ExtractiveSummarizer",
    "MaskingConfig",
    "MemorySessionStore",
    "SQLiteSessionStore",
    "SessionStore",
    "OffloadConfig",
    "RecallConfig",
    "Summarizer",
    "rehydrate",
}


def test_all_is_sorted_complete_and_has_the_design_names() -> None:
    """__all__ is sorted, every name exists, every public attribute is listed, DESIGN.md's names are in it."""
    names = list(session.__all__)
    assert names == sorted(names) and len(names) == len(set(names))
    public = {n for n, v in vars(session).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == set(names)
    assert set(names) >= DESIGN_NAMES


def test_importing_the_session_package_loads_no_framework_or_extra() -> None:
    """``import tokenbox_core.session`` loads neither langchain, llama_index, mcp nor langgraph."""
    code = (
        "import sys, tokenbox_core.session; "
        "print([m for m in ('langchain_core', 'llama_index', 'mcp', 'langgraph') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
