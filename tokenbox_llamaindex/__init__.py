"""TokenBox for LlamaIndex: fit retrieved nodes, prompt chunks and chat history into exact token budgets.

- :class:`TokenBoxNodePostprocessor` keeps the best retrieved nodes that fit a budget.
- :class:`TokenBoxPromptHelper` replaces ``PromptHelper``'s equal-share truncation and repacking.
- :class:`TokenBoxMemory` is a chat memory whose ``get`` is a layout of the history.
- :class:`TokenBoxQueryEngine` / :class:`TokenBoxChatEngine` put the prefill compiler behind a query or chat
  engine: the whole prompt is compiled, and shown in each response's metadata.

Each maps LlamaIndex objects onto TokenBox Sections and Items and calls the core
once; ``last_layout`` on each holds the core's report of the last call.
"""

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
