"""TokenBox for the OpenAI Agents SDK: a ``Session`` on the archive and a ``call_model_input_filter``.

>>> from tokenbox_openai_agents import TokenBoxInputFilter, TokenBoxSession
>>> session = TokenBoxSession("user-1", window=32_000)  # store="chat.db" for a SQLite file
>>> run_config_filter = TokenBoxInputFilter(session)  # RunConfig(call_model_input_filter=run_config_filter)
"""

from tokenbox_openai_agents._session import TokenBoxInputFilter, TokenBoxSession, rehydrate_tool

__all__ = ["TokenBoxInputFilter", "TokenBoxSession", "rehydrate_tool"]
