"""TokenBox for LlamaIndex: fit retrieved nodes, prompt chunks and chat history into exact token budgets.

- :class:`TokenBoxNodePostprocessor` keeps the best retrieved nodes that fit a budget.
- :class:`TokenBoxPromptHelper` replaces ``PromptHelper``'s equal-share truncation and repacking.
- :class:`TokenBoxMemory` is a chat memory whose ``get`` is a layout of the history.
- :class:`TokenBoxQueryEngine` / :class:`TokenBoxChatEngine` put the prefill compiler behind a query or chat
  engine: the whole prompt is compiled, and shown in each response's metadata.

Each maps LlamaIndex objects onto TokenBox Sections and Items and calls the core
once; ``last_layout`` on each holds the core's report of the last call.
"""

try:  # the extra this adapter needs: say which one, not a bare ModuleNotFoundError
    import llama_index.core  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess (tests/core/test_packaging.py)
    raise ModuleNotFoundError(
        f"tokenbox_llamaindex needs llama-index-core ({exc.name} is missing): "
        f"pip install 'tokenbox-context[llamaindex]'",
        name=exc.name,
    ) from exc

from tokenbox_llamaindex.compiler import TokenBoxChatEngine, TokenBoxQueryEngine
from tokenbox_llamaindex.memory import TokenBoxMemory
from tokenbox_llamaindex.postprocessor import TokenBoxNodePostprocessor
from tokenbox_llamaindex.prompt_helper import TokenBoxPromptHelper

__all__ = [
    "TokenBoxChatEngine",
    "TokenBoxMemory",
    "TokenBoxNodePostprocessor",
    "TokenBoxPromptHelper",
    "TokenBoxQueryEngine",
]
