"""The neutral model request (:class:`ModelRequest`): what one model call sends, counted as sent, and its window
as a budget; :meth:`tokenbox_core.ContextSession.prepare` takes it (``docs/request-path.md``)."""

from tokenbox_core.request._request import ModelRequest, PreparedRequest, schema_tokens

__all__ = ["ModelRequest", "PreparedRequest", "schema_tokens"]
