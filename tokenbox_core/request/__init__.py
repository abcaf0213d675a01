"""The neutral model request (:class:`ModelRequest`): what one model call sends, counted as sent, and its window
as a budget; :meth:`tokenbox_core.ContextSession.prepare` takes it (``docs/request-path.md``).  The window
arithmetic adapters share — triggers, keep targets, the output reserve and the schemas reserved — is
:func:`resolve_window` (a :class:`RequestWindow`)."""

from tokenbox_core.request._request import ModelRequest, PreparedRequest, schema_tokens
from tokenbox_core.request._window import (
    ContextSize,
    RequestWindow,
    Trigger,
    check_size,
    check_trigger,
    keep_tokens,
    reached,
    resolve_window,
    thresholds,
)

__all__ = [
    "ContextSize",
    "ModelRequest",
    "PreparedRequest",
    "RequestWindow",
    "Trigger",
    "check_size",
    "check_trigger",
    "keep_tokens",
    "reached",
    "resolve_window",
    "schema_tokens",
    "thresholds",
]
