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


EXPECTED_ALL = [
    "BudgetError",
    "CompilationError",
    "CompiledContext",
    "CompilerConfig",
    "ContextBudget",
    "ContextCompiler",
    "ContextCriticalOverflow",
    "ContextSession",
    "ConversationError",
    "CounterError",
    "Evidence",
    "Item",
    "Layout",
    "MODEL_CONTEXT_WINDOWS",
    "Section",
    "SectionError",
    "SecurityError",
    "SelectionPolicy",
    "TokenBox",
    "TokenBoxError",
    "TokenBudget",
    "TokenBudgetCalculator",
    "TokenCounter",
    "TokenizerUnavailable",
    "__version__",
    "ablate",
    "count_message_tokens",
    "fit_conversation",
    "get_counter",
    "register_model",
]


def test_the_root_api_is_small_and_exactly_this() -> None:
    """The root exports the everyday API (at most 30 names, issue 22); everything else lives in a subpackage."""
    assert tokenbox_core.__all__ == EXPECTED_ALL and len(EXPECTED_ALL) <= 30


def test_every_implementation_module_is_private() -> None:
    """Each module of the core is a package's ``__init__``, a public module by name (arguments — the keyword checks
    the adapters share —, errors, layout, lenses), or private (a leading underscore): the ``__init__`` files are the
    API."""
    from pathlib import Path

    root = Path(tokenbox_core.__file__).parent
    public = {"arguments.py", "errors.py", "layout.py", "lenses.py", "__init__.py", "__main__.py"}
    exposed = sorted(
        str(p.relative_to(root)) for p in root.rglob("*.py") if p.name not in public and not p.name.startswith("_")
    )
    assert exposed == []


def test_the_arguments_module_is_exactly_this() -> None:
    """``tokenbox_core.arguments`` offers the adapters the core's keyword checks, nothing else."""
    import tokenbox_core.arguments as arguments

    assert arguments.__all__ == ["StrictArguments", "check_arguments", "no_bool"]
