"""Keyword-argument checks the adapters share with the core: a misspelt or wrongly typed argument fails where the
user typed it, naming the nearest known one (``UnknownArgumentError`` in :mod:`tokenbox_core.errors`' tree).

``check_arguments(owner, kwargs, known)`` checks a function's ``**kwargs``; ``StrictArguments`` is the pydantic
mixin that does it for a model's fields (the LangChain Runnables, the LlamaIndex memories); ``no_bool(name, v)``
refuses a ``bool`` where a number is meant (``True`` is an ``int`` to Python, never a budget).

>>> check_arguments("TokenBoxMiddleware", {"budgte": 800}, ["budget", "token_counter"])
Traceback (most recent call last):
...
tokenbox_core._arguments.UnknownArgumentError: TokenBoxMiddleware got unknown argument 'budgte' (did you mean \
'budget'?); its arguments are budget, token_counter
"""

from tokenbox_core._arguments import StrictArguments, check_arguments, no_bool

__all__ = ["StrictArguments", "check_arguments", "no_bool"]
