"""The public API is exactly what ``__all__`` says."""

from __future__ import annotations

import tokenbox_core

DESIGN_NAMES = {
    "BudgetError",
    "CompilationError",
    "CompiledContext",
    "CompilerConfig",
    "ContextCompiler",
    "ContextSession",
    "Evidence",
    "ablate",
    "ContextBudget",
    "ContextCriticalOverflow",
    "Item",
    "Layout",
    "MODEL_CONTEXT_WINDOWS",
    "Section",
    "TokenBox",
    "TokenBoxError",
    "TokenBudget",
    "TokenBudgetCalculator",
    "TokenizerUnavailable",
    "fit_conversation",
    "get_counter",
}


def test_fit_conversation_and_its_result_are_exported() -> None:
    """The conversation engine is public at the top level and in tokenbox_core.chat (issue 9 §1)."""
    import tokenbox_core.chat

    assert tokenbox_core.fit_conversation is tokenbox_core.chat.fit_conversation
    assert tokenbox_core.ConversationFit is tokenbox_core.chat.ConversationFit
    assert set(tokenbox_core.chat.__all__) >= {
        "fit_conversation",
        "ConversationFit",
        "conversation_sections",
        "read_messages",
        "ReadMessages",
    }


def test_all_names_exist_and_are_sorted() -> None:
    """Every name in __all__ exists, without duplicates, in sorted order."""
    names = list(tokenbox_core.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(tokenbox_core, name), name


def test_public_attributes_are_in_all() -> None:
    """Every public, non-module attribute of the package is listed in __all__."""
    import types

    public = {
        n for n, v in vars(tokenbox_core).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public == set(tokenbox_core.__all__) - {"__version__"}


def test_design_names_are_exported() -> None:
    """The names DESIGN.md promises are public."""
    assert set(tokenbox_core.__all__) >= DESIGN_NAMES
