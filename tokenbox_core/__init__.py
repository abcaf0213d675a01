"""TokenBox: deterministic context layout for LLM applications.

>>> from tokenbox_core import Section, TokenBox
>>> layout = TokenBox(40, counter="whitespace").layout([
...     Section("system", "You answer in one short sentence."),
...     Section("notes", "background " * 100, shrink=1),
... ])
>>> layout.total_tokens <= 40, layout["system"].status, layout["notes"].status
(True, 'kept', 'truncated')
"""

import tokenbox_core.structured  # noqa: F401  (registers the "structured" lens)
from tokenbox_core.box import TokenBox
from tokenbox_core.budget import (
    MODEL_CONTEXT_WINDOWS,
    ContextBudget,
    EffectiveBudget,
    TokenBudget,
    TokenBudgetCalculator,
    register_model,
)
from tokenbox_core.chat import ConversationFit, fit_conversation
from tokenbox_core.compiler import (
    CompilationError,
    CompiledContext,
    CompilerConfig,
    ContextCompiler,
    Evidence,
    ablate,
)
from tokenbox_core.errors import (
    BudgetError,
    ContextCriticalOverflow,
    CounterError,
    InvalidTextError,
    LensError,
    MediaError,
    OutputFormError,
    SectionError,
    SecurityError,
    SelectionError,
    TokenBoxError,
    TokenizerUnavailable,
)
from tokenbox_core.layout import Action, LaidOutSection, Layout, RemovedItem
from tokenbox_core.lenses import register_lens
from tokenbox_core.media import audio_tokens, image_tokens, video_tokens
from tokenbox_core.models import ModelProfile, get_model_profile
from tokenbox_core.report import LayoutDiff
from tokenbox_core.sections import Item, Section
from tokenbox_core.select import SelectionPolicy
from tokenbox_core.session import ContextSession
from tokenbox_core.spec import LayoutSpec, SpecError, load_spec
from tokenbox_core.tokens import TokenCounter, count_message_tokens, get_counter

__version__ = "0.1.0"

__all__ = [
    "Action",
    "BudgetError",
    "CompilationError",
    "CompiledContext",
    "CompilerConfig",
    "ContextBudget",
    "ContextCompiler",
    "ContextCriticalOverflow",
    "ContextSession",
    "ConversationFit",
    "CounterError",
    "EffectiveBudget",
    "Evidence",
    "InvalidTextError",
    "Item",
    "LaidOutSection",
    "Layout",
    "LayoutDiff",
    "LayoutSpec",
    "LensError",
    "MODEL_CONTEXT_WINDOWS",
    "MediaError",
    "ModelProfile",
    "OutputFormError",
    "RemovedItem",
    "Section",
    "SectionError",
    "SecurityError",
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
    "ablate",
    "audio_tokens",
    "count_message_tokens",
    "fit_conversation",
    "get_counter",
    "get_model_profile",
    "image_tokens",
    "load_spec",
    "register_lens",
    "register_model",
    "video_tokens",
]
