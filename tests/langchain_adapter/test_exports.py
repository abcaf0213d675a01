"""The public API of tokenbox_langchain is exactly what ``__all__`` says, and the core stays framework-free."""

from __future__ import annotations

import subprocess
import sys
import types

import tokenbox_langchain

EXPECTED_ALL = [
    "COMPILE_EVENT",
    "CriticalMessagesOverflow",
    "FitResult",
    "LAYOUT_EVENT",
    "METADATA_KEY",
    "RemovedMessage",
    "TokenBoxCompiler",
    "TokenBoxCompressor",
    "TokenBoxLayout",
    "TokenBoxMessages",
    "trim_messages",
]


def test_all_is_expected_and_sorted() -> None:
    """__all__ lists exactly the expected names, sorted."""
    assert tokenbox_langchain.__all__ == EXPECTED_ALL
    assert sorted(EXPECTED_ALL) == EXPECTED_ALL


def test_public_attributes_are_in_all() -> None:
    """Every public, non-module attribute of the package is in __all__ and exists."""
    public = {
        n for n, v in vars(tokenbox_langchain).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public == set(EXPECTED_ALL)


def test_core_import_does_not_load_langchain() -> None:
    """Importing tokenbox_core loads no langchain module; importing tokenbox_langchain does."""
    code = (
        "import sys, tokenbox_core; assert not any(m.startswith('langchain') for m in sys.modules); "
        "import tokenbox_langchain; assert 'langchain_core' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
