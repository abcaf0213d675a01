"""The adapter's public API, and the core's independence from LlamaIndex."""

from __future__ import annotations

import subprocess
import sys

import tokenbox_llamaindex

EXPECTED_ALL = [
    "TokenBoxChatEngine",
    "TokenBoxMemory",
    "TokenBoxNodePostprocessor",
    "TokenBoxPromptHelper",
    "TokenBoxQueryEngine",
]


def test_all_is_exactly_the_expected_names() -> None:
    """__all__ lists the adapter classes, sorted, and each exists."""
    assert tokenbox_llamaindex.__all__ == EXPECTED_ALL
    assert sorted(EXPECTED_ALL) == EXPECTED_ALL
    for name in EXPECTED_ALL:
        assert hasattr(tokenbox_llamaindex, name)


def test_public_attributes_are_in_all() -> None:
    """Every public, non-module attribute of the package is in __all__."""
    import types

    public = {
        n for n, v in vars(tokenbox_llamaindex).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public == set(EXPECTED_ALL)


def test_class_names_follow_llama_index_convention() -> None:
    """Each component reports its own class_name() for LlamaIndex serialisation."""
    for name in EXPECTED_ALL:
        assert getattr(tokenbox_llamaindex, name).class_name() == name


def test_core_never_imports_llama_index() -> None:
    """Importing tokenbox_core loads no llama_index module; importing the adapter does."""
    code = (
        "import sys, tokenbox_core; assert not [m for m in sys.modules if m.startswith('llama_index')];"
        "import tokenbox_llamaindex; assert 'llama_index.core' in sys.modules; print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
