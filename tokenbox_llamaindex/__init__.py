"""TokenBox for LlamaIndex: fit retrieved nodes, prompt chunks and chat history into exact token budgets.

- :class:`TokenBoxNodePostprocessor` keeps the best retrieved nodes that fit a budget.
- :class:`TokenBoxPromptHelper` replaces ``PromptHelper``'s equal-share truncation and repacking.
- :class:`TokenBoxMemory` is a chat memory whose ``get`` is a layout of the history.

Each maps LlamaIndex objects onto TokenBox Sections and Items and calls the core
once; ``last_layout`` on each holds the core's report of the last call (a
single-threaded convenience), and each call sends a :class:`TokenBoxLayoutEvent`
to LlamaIndex's instrumentation dispatcher.  :class:`TokenBoxMemory` fits the
history with the core's conversation engine (``tokenbox_core.fit_conversation``).
"""

from tokenbox_llamaindex.events import TokenBoxLayoutEvent
from tokenbox_llamaindex.memory import MemoryOverflow, TokenBoxMemory
from tokenbox_llamaindex.postprocessor import TokenBoxNodePostprocessor
from tokenbox_llamaindex.prompt_helper import TokenBoxPromptHelper

__all__ = [
    "MemoryOverflow",
    "TokenBoxLayoutEvent",
    "TokenBoxMemory",
    "TokenBoxNodePostprocessor",
    "TokenBoxPromptHelper",
]
