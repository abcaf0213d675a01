"""TokenBox for pydantic-ai: a capability that fits every model request into the window.

>>> from tokenbox_pydantic_ai import TokenBoxCapability  # doctest: +SKIP
>>> agent = Agent(model, capabilities=[TokenBoxCapability(budget=128_000, session="agent.db")])  # doctest: +SKIP
"""

from tokenbox_pydantic_ai._capability import REHYDRATE_TOOL, TokenBoxCapability

__all__ = ["REHYDRATE_TOOL", "TokenBoxCapability"]
