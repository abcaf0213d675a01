"""TokenBox: deterministic context layout for LLM applications.

>>> from tokenbox_core import Section, TokenBox
>>> layout = TokenBox(40, counter="whitespace").layout([
...     Section("system", "You answer in one short sentence."),
...     Section("notes", "background " * 100, shrink=1),
... ])
>>> layout.total_tokens <= 40, layout["system"].status, layout["notes"].status
(True, 'kept', 'truncated')
"""

from tokenbox_core.box import TokenBox
from tokenbox_core.budget import (
    MODEL_CONTEXT_WINDOWS,
    ContextBudget,
    EffectiveBudget,
    TokenBudget,
    TokenBudgetCalculator,
    register_model,
)
from tokenbox_core.errors import (
    BudgetError,
    ContextCriticalOverflow,
    CounterError,
    InvalidTextError,
    LensError,
    OutputFormError,
    SectionError,
    SelectionError,
    TokenBoxError,
    TokenizerUnavailable,
)
from tokenbox_core.layout import Action, LaidOutSection, Layout, RemovedItem
from tokenbox_core.lenses import register_lens
from tokenbox_core.report import LayoutDiff
from tokenbox_core.sections import Item, Section
from tokenbox_core.select import SelectionPolicy
from tokenbox_core.spec import LayoutSpec, SpecError, load_spec
from tokenbox_core.tokens import TokenCounter, count_message_tokens, get_counter

__version__ = "0.1.0"

__all__ = [
    "Action",
    "BudgetError",
    "ContextBudget",
    "ContextCriticalOverflow",
    "CounterError",
    "EffectiveBudget",
    "InvalidTextError",
    "Item",
    "LaidOutSection",
    "Layout",
    "LayoutDiff",
    "LayoutSpec",
    "LensError",
    "MODEL_CONTEXT_WINDOWS",
    "OutputFormError",
    "RemovedItem",
    "Section",
    "SectionError",
    "SelectionError",
    "SelectionPolicy",
    "SpecError",
    "TokenBox",
    "TokenBoxError",
    "TokenBudget",
    "TokenBudgetCalculator",
    "TokenCounter",
    "TokenizerUnavailable",
    "__version__",
    "count_message_tokens",
    "get_counter",
    "load_spec",
    "register_lens",
    "register_model",
]
