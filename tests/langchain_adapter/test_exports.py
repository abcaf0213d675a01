"""The public API of tokenbox_langchain is exactly what ``__all__`` says, and the core stays framework-free."""

from __future__ import annotations

import subprocess
import sys
import types

import tokenbox_langchain

EXPECTED_ALL = [
    "COMPILE_EVENT",
    "ChatModelSummarizer",
    "CriticalMessagesOverflow",
    "FitResult",
    "LAYOUT_EVENT",
    "METADATA_KEY",
    "MessageCounter",
    "RemovedMessage",
    "SessionChatMessageHistory",
    "TokenBoxCompiler",
    "TokenBoxCompressor",
    "TokenBoxLayout",
    "TokenBoxMaskingEdit",
    "TokenBoxMessages",
    "TokenBoxMiddleware",
    "checkpoint_hook",
    "session_tools",
    "trim_messages",
]


def test_all_is_expected_and_sorted() -> None:
    """__all__ lists exactly the expected names, sorted."""
    assert tokenbox_langchain.__all__ == EXPECTED_ALL
    assert sorted(EXPECTED_ALL) == EXPECTED_ALL


def test_public_attributes_are_in_all() -> None:
    """Every public, non-module attribute of the package is in __all__ and exists."""
    public = {
        n
        for n in dir(tokenbox_langchain)
        if not n.startswith("_") and not isinstance(getattr(tokenbox_langchain, n), types.ModuleType)
    }
    assert public == set(EXPECTED_ALL)


def test_core_import_does_not_load_langchain() -> None:
    """Importing tokenbox_core loads no langchain module; importing tokenbox_langchain does."""
    code = (
        "import sys, tokenbox_core; assert not any(m.startswith('langchain') for m in sys.modules); "
        "import tokenbox_langchain; tokenbox_langchain.TokenBoxMessages; assert 'langchain_core' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_names_load_lazily() -> None:
    """Importing the package loads no adapter module; a name loads only the modules it needs (issue 16)."""
    code = (
        "import sys, tokenbox_langchain; "
        "assert not [m for m in sys.modules if m.startswith(('langchain', 'tokenbox_langchain.'))]; "
        "from tokenbox_langchain import trim_messages; "
        "assert 'tokenbox_langchain._trim' in sys.modules; "
        "assert 'tokenbox_langchain._compressor' not in sys.modules; "
        "assert 'tokenbox_langchain._layout' not in sys.modules; "
        "assert tokenbox_langchain.TokenBoxCompressor.__name__ == 'TokenBoxCompressor'; print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_unknown_name_is_an_attribute_error() -> None:
    """A name the package does not export raises AttributeError naming it."""
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        tokenbox_langchain.no_such_name  # noqa: B018


def test_implementation_modules_are_private() -> None:
    """Each module of both adapters is its package's ``__init__``, ``testing`` or private (a leading underscore)."""
    from pathlib import Path

    for package in ("tokenbox_langchain", "tokenbox_llamaindex"):
        root = Path(__file__).parents[2] / package
        public = sorted(p.name for p in root.glob("*.py") if not p.name.startswith("_"))
        assert public == ["testing.py"], package
