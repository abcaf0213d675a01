"""The adapter's public API, and the core's independence from LlamaIndex."""

from __future__ import annotations

import subprocess
import sys

import tokenbox_llamaindex

EXPECTED_ALL = [
    "LLMSummarizer",
    "MemoryOverflow",
    "PromptOverflow",
    "SessionChatStore",
    "TokenBoxChatEngine",
    "TokenBoxLayoutEvent",
    "TokenBoxMemory",
    "TokenBoxNodePostprocessor",
    "TokenBoxPromptHelper",
    "TokenBoxQueryEngine",
    "TokenBoxSessionMemory",
    "session_tools",
]
COMPONENTS = [
    "TokenBoxLayoutEvent",
    "TokenBoxMemory",
    "TokenBoxNodePostprocessor",
    "TokenBoxPromptHelper",
    "TokenBoxSessionMemory",
]


def test_all_is_exactly_the_expected_names() -> None:
    """__all__ lists the adapter classes (the agent memory among them), the memory's error and the
    instrumentation event, sorted."""
    assert tokenbox_llamaindex.__all__ == EXPECTED_ALL
    assert sorted(EXPECTED_ALL) == EXPECTED_ALL
    for name in EXPECTED_ALL:
        assert hasattr(tokenbox_llamaindex, name)


def test_public_attributes_are_in_all() -> None:
    """Every public, non-module attribute of the package is in __all__."""
    import types

    public = {
        n
        for n in dir(tokenbox_llamaindex)
        if not n.startswith("_") and not isinstance(getattr(tokenbox_llamaindex, n), types.ModuleType)
    }
    assert public == set(EXPECTED_ALL)


def test_class_names_follow_llama_index_convention() -> None:
    """Each component reports its own class_name() for LlamaIndex serialisation."""
    for name in COMPONENTS:
        assert getattr(tokenbox_llamaindex, name).class_name() == name
    assert issubclass(tokenbox_llamaindex.MemoryOverflow, ValueError)


def test_core_never_imports_llama_index() -> None:
    """Importing tokenbox_core or the bare adapter package loads no llama_index module; using a name does."""
    code = (
        "import sys, tokenbox_core; assert not [m for m in sys.modules if m.startswith('llama_index')];"
        "import tokenbox_llamaindex; assert not [m for m in sys.modules if m.startswith('llama_index')];"
        "tokenbox_llamaindex.TokenBoxMemory; assert 'llama_index.core' in sys.modules; print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
