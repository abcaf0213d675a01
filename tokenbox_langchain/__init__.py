"""TokenBox for LangChain: fit conversations, prompt parts and retrieved documents into exact token budgets.

- :class:`TokenBoxMiddleware`: an ``AgentMiddleware`` for ``create_agent`` and deepagents: every model request
  (system message, tool schemas, messages) fitted into the model's window, the graph state kept whole;
- :class:`TokenBoxMaskingEdit`: TokenBox's observation masking as a ``ContextEdit`` for ``ContextEditingMiddleware``;
- :class:`TokenBoxMessages`: a Runnable fitting a conversation (``prompt | TokenBoxMessages(...) | model``);
- :class:`TokenBoxLayout`: a Runnable fitting named prompt parts together, optionally rendering a template;
- :class:`TokenBoxCompressor`: a ``BaseDocumentCompressor`` fitting retrieved documents;
- :func:`trim_messages`: a drop-in for ``langchain_core.messages.trim_messages``;
- :class:`TokenBoxCompiler`: the prefill compiler over named sources (retrievers allowed) → ``ChatPromptValue``.

The adapter maps LangChain objects to TokenBox Sections and Items and calls
the core once; the core decides what is kept.  Each Runnable reports its
layout to the callbacks as the custom event :data:`LAYOUT_EVENT`.
"""

from importlib.util import find_spec as _find_spec

try:  # the extra this adapter needs: say which one, not a bare ModuleNotFoundError
    if _find_spec("langchain_core") is None:  # located, not imported: importing stays lazy (issue 16)
        raise ModuleNotFoundError("No module named 'langchain_core'", name="langchain_core")
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess (tests/core/test_packaging.py)
    raise ModuleNotFoundError(
        f"tokenbox_langchain needs langchain-core ({exc.name} is missing): pip install 'tokenbox-context[langchain]'",
        name=exc.name,
    ) from exc

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from tokenbox_langchain._compiler import COMPILE_EVENT, TokenBoxCompiler
    from tokenbox_langchain._compressor import TokenBoxCompressor
    from tokenbox_langchain._context_edit import TokenBoxMaskingEdit
    from tokenbox_langchain._counting import MessageCounter
    from tokenbox_langchain._fit import METADATA_KEY, CriticalMessagesOverflow, FitResult, RemovedMessage
    from tokenbox_langchain._graph import checkpoint_hook
    from tokenbox_langchain._history import SessionChatMessageHistory
    from tokenbox_langchain._layout import TokenBoxLayout
    from tokenbox_langchain._messages import LAYOUT_EVENT, TokenBoxMessages
    from tokenbox_langchain._middleware import TokenBoxMiddleware
    from tokenbox_langchain._summarizer import ChatModelSummarizer
    from tokenbox_langchain._tools import session_tools
    from tokenbox_langchain._trim import trim_messages

__all__ = [
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

# Each public name is imported from its module on first use (PEP 562), so importing the package costs
# almost nothing and a user pays only for the framework modules the names they use need (issue 16).
_MODULES = {
    "ChatModelSummarizer": "tokenbox_langchain._summarizer",
    "MessageCounter": "tokenbox_langchain._counting",
    "SessionChatMessageHistory": "tokenbox_langchain._history",
    "checkpoint_hook": "tokenbox_langchain._graph",
    "session_tools": "tokenbox_langchain._tools",
    "COMPILE_EVENT": "tokenbox_langchain._compiler",
    "TokenBoxCompiler": "tokenbox_langchain._compiler",
    "CriticalMessagesOverflow": "tokenbox_langchain._fit",
    "FitResult": "tokenbox_langchain._fit",
    "LAYOUT_EVENT": "tokenbox_langchain._messages",
    "METADATA_KEY": "tokenbox_langchain._fit",
    "RemovedMessage": "tokenbox_langchain._fit",
    "TokenBoxCompressor": "tokenbox_langchain._compressor",
    "TokenBoxLayout": "tokenbox_langchain._layout",
    "TokenBoxMaskingEdit": "tokenbox_langchain._context_edit",
    "TokenBoxMessages": "tokenbox_langchain._messages",
    "TokenBoxMiddleware": "tokenbox_langchain._middleware",
    "trim_messages": "tokenbox_langchain._trim",
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
