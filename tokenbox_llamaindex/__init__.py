"""TokenBox for LlamaIndex: fit retrieved nodes, prompt chunks and chat history into exact token budgets.

- :class:`TokenBoxNodePostprocessor` keeps the best retrieved nodes that fit a budget.
- :class:`TokenBoxPromptHelper` replaces ``PromptHelper``'s equal-share truncation and repacking.
- :class:`TokenBoxSessionMemory` is the memory for LlamaIndex agents (``FunctionAgent``, ``AgentWorkflow``):
  ``Memory``'s arguments and methods on a TokenBox context session (SQLite archive, recall, masking), and
  requests that stay within ``token_limit``.
- :class:`TokenBoxMemory` is a chat memory whose ``get`` is a layout of the history (``ChatMemoryBuffer``'s
  surface, for chat engines).
- :class:`TokenBoxQueryEngine` / :class:`TokenBoxChatEngine` put the prefill compiler behind a query or chat
  engine: the whole prompt is compiled, and shown in each response's metadata.

Each maps LlamaIndex objects onto TokenBox Sections and Items and calls the core
once; ``last_layout`` on each holds the core's report of the last call (a
single-threaded convenience), and each call sends a :class:`TokenBoxLayoutEvent`
to LlamaIndex's instrumentation dispatcher.  :class:`TokenBoxMemory` fits the
history with the core's conversation engine (``tokenbox_core.fit_conversation``).
"""

from importlib.util import find_spec as _find_spec
from pathlib import Path as _Path

try:  # the extra this adapter needs: say which one, not a bare ModuleNotFoundError
    _spec = _find_spec("llama_index")  # located, not imported: importing stays lazy (issue 16)
    if _spec is None or not any((_Path(p) / "core").is_dir() for p in _spec.submodule_search_locations or ()):
        raise ModuleNotFoundError("No module named 'llama_index.core'", name="llama_index.core")
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess (tests/core/test_packaging.py)
    raise ModuleNotFoundError(
        f"tokenbox_llamaindex needs llama-index-core ({exc.name} is missing): "
        f"pip install 'tokenbox-context[llamaindex]'",
        name=exc.name,
    ) from exc

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from tokenbox_llamaindex._chat_store import SessionChatStore
    from tokenbox_llamaindex._compiler import TokenBoxChatEngine, TokenBoxQueryEngine
    from tokenbox_llamaindex._events import TokenBoxLayoutEvent
    from tokenbox_llamaindex._memory import MemoryOverflow, TokenBoxMemory
    from tokenbox_llamaindex._postprocessor import TokenBoxNodePostprocessor
    from tokenbox_llamaindex._prompt_helper import PromptOverflow, TokenBoxPromptHelper
    from tokenbox_llamaindex._session_memory import TokenBoxSessionMemory
    from tokenbox_llamaindex._summarizer import LLMSummarizer
    from tokenbox_llamaindex._tools import session_tools

__all__ = [
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

# Each public name is imported from its module on first use (PEP 562), so importing the package costs
# almost nothing and a user pays only for the framework modules the names they use need (issue 16).
_MODULES = {
    "LLMSummarizer": "tokenbox_llamaindex._summarizer",
    "PromptOverflow": "tokenbox_llamaindex._prompt_helper",
    "SessionChatStore": "tokenbox_llamaindex._chat_store",
    "session_tools": "tokenbox_llamaindex._tools",
    "TokenBoxChatEngine": "tokenbox_llamaindex._compiler",
    "TokenBoxQueryEngine": "tokenbox_llamaindex._compiler",
    "MemoryOverflow": "tokenbox_llamaindex._memory",
    "TokenBoxLayoutEvent": "tokenbox_llamaindex._events",
    "TokenBoxMemory": "tokenbox_llamaindex._memory",
    "TokenBoxNodePostprocessor": "tokenbox_llamaindex._postprocessor",
    "TokenBoxPromptHelper": "tokenbox_llamaindex._prompt_helper",
    "TokenBoxSessionMemory": "tokenbox_llamaindex._session_memory",
}


def __getattr__(name: str) -> _typing.Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
