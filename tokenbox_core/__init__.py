"""TokenBox: deterministic context layout for LLM applications.

This module is the whole everyday API: sections and the Token Box, budgets and counters, conversations, the
prefill compiler, the agent loop's ``ContextSession``, and the errors a caller catches.  The rest lives in
subpackages, each with its own public ``__init__``: ``tokenbox_core.errors`` (every error), ``.layout``
(``Layout``'s records), ``.lenses`` (``register_lens``), ``.media`` (image, audio and video costs), ``.models``
(model profiles), ``.cache`` (prompt caching), ``.defense``, ``.session``, ``.select``, ``.spec``, ``.report``,
``.chat``, ``.compiler``, ``.tokens`` and ``.testing``.  Modules whose names start with ``_`` are internal.

>>> from tokenbox_core import Section, TokenBox
>>> layout = TokenBox(40, counter="whitespace").layout([
...     Section("system", "You answer in one short sentence."),
...     Section("notes", "background " * 100, shrink=1),
... ])
>>> layout.total_tokens <= 40, layout["system"].status, layout["notes"].status
(True, 'kept', 'truncated')
"""

import tokenbox_core.structured  # noqa: F401  (registers the "structured" lens)
from tokenbox_core._budget import (
    MODEL_CONTEXT_WINDOWS,
    ContextBudget,
    TokenBudget,
    TokenBudgetCalculator,
    register_model,
)
from tokenbox_core._sections import Item, Section
from tokenbox_core.box import TokenBox
from tokenbox_core.chat import fit_conversation
from tokenbox_core.compiler import CompiledContext, CompilerConfig, ContextCompiler, Evidence, ablate
from tokenbox_core.errors import (
    BudgetError,
    CompilationError,
    ContextCriticalOverflow,
    ConversationError,
    CounterError,
    SectionError,
    SecurityError,
    TokenBoxError,
    TokenizerUnavailable,
)
from tokenbox_core.layout import Layout
from tokenbox_core.select import SelectionPolicy
from tokenbox_core.session import ContextSession
from tokenbox_core.tokens import TokenCounter, count_message_tokens, get_counter

__version__ = "0.1.0"

__all__ = [
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
