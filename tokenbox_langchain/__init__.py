"""TokenBox for LangChain: fit conversations, prompt parts and retrieved documents into exact token budgets.

- :class:`TokenBoxMessages`: a Runnable fitting a conversation (``prompt | TokenBoxMessages(...) | model``);
- :class:`TokenBoxLayout`: a Runnable fitting named prompt parts together, optionally rendering a template;
- :class:`TokenBoxCompressor`: a ``BaseDocumentCompressor`` fitting retrieved documents;
- :func:`trim_messages`: a drop-in for ``langchain_core.messages.trim_messages``;
- :class:`TokenBoxCompiler`: the prefill compiler over named sources (retrievers allowed) → ``ChatPromptValue``.

The adapter maps LangChain objects to TokenBox Sections and Items and calls
the core once; the core decides what is kept.  Each Runnable reports its
layout to the callbacks as the custom event :data:`LAYOUT_EVENT`.
"""

try:  # the extra this adapter needs: say which one, not a bare ModuleNotFoundError
    import langchain_core  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess (tests/core/test_packaging.py)
    raise ModuleNotFoundError(
        f"tokenbox_langchain needs langchain-core ({exc.name} is missing): pip install 'tokenbox-context[langchain]'",
        name=exc.name,
    ) from exc

from tokenbox_langchain.compiler import COMPILE_EVENT, TokenBoxCompiler
from tokenbox_langchain.compressor import TokenBoxCompressor
from tokenbox_langchain.fit import METADATA_KEY, CriticalMessagesOverflow, FitResult, RemovedMessage
from tokenbox_langchain.layout import TokenBoxLayout
from tokenbox_langchain.messages import LAYOUT_EVENT, TokenBoxMessages
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
    "TokenBoxMessages",
    "trim_messages",
]
