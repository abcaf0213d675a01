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
    from tokenbox_langchain.compiler import COMPILE_EVENT, TokenBoxCompiler
    from tokenbox_langchain.compressor import TokenBoxCompressor
    from tokenbox_langchain.context_edit import TokenBoxMaskingEdit
    from tokenbox_langchain.fit import METADATA_KEY, CriticalMessagesOverflow, FitResult, RemovedMessage
    from tokenbox_langchain.layout import TokenBoxLayout
    from tokenbox_langchain.messages import LAYOUT_EVENT, TokenBoxMessages
    from tokenbox_langchain.middleware import TokenBoxMiddleware
    from tokenbox_langchain.trim import trim_messages

__all__ = [
    "COMPILE_EVENT",
    "CriticalMessagesOverflow",
    "FitResult",
    "LAYOUT_EVENT",
    "METADATA_KEY",
    "RemovedMessage",
    "TokenBoxCompiler",
    "TokenBoxCompressor",
    "TokenBoxLayout",
    "TokenBoxMaskingEdit",
    "TokenBoxMessages",
    "TokenBoxMiddleware",
    "trim_messages",
]

# Each public name is imported from its module on first use (PEP 562), so importing the package costs
# almost nothing and a user pays only for the framework modules the names they use need (issue 16).
_MODULES = {
    "COMPILE_EVENT": "tokenbox_langchain.compiler",
    "TokenBoxCompiler": "tokenbox_langchain.compiler",
    "CriticalMessagesOverflow": "tokenbox_langchain.fit",
    "FitResult": "tokenbox_langchain.fit",
    "LAYOUT_EVENT": "tokenbox_langchain.messages",
    "METADATA_KEY": "tokenbox_langchain.fit",
    "RemovedMessage": "tokenbox_langchain.fit",
    "TokenBoxCompressor": "tokenbox_langchain.compressor",
    "TokenBoxLayout": "tokenbox_langchain.layout",
    "TokenBoxMaskingEdit": "tokenbox_langchain.context_edit",
    "TokenBoxMessages": "tokenbox_langchain.messages",
    "TokenBoxMiddleware": "tokenbox_langchain.middleware",
    "trim_messages": "tokenbox_langchain.trim",
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
