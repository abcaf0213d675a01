"""Errors of the session archive (part of the ``TokenBoxError`` tree)."""

from __future__ import annotations

from tokenbox_core.errors import TokenBoxError

__all__ = ["SessionError", "SessionStoreError", "UnknownTurnError"]


class SessionError(TokenBoxError, ValueError):
    """Invalid input to the session archive (a message that is not a neutral chat dict, a bad option)."""


class UnknownTurnError(SessionError, KeyError):
    """Turn or summary ids that the session does not hold."""

    def __str__(self) -> str:  # KeyError would repr the message
        return str(self.args[0]) if self.args else ""


class SessionStoreError(TokenBoxError):
    """The archive file cannot be used: not a database, corrupt, another application's, or a newer schema.

    Never answered by silently resetting the file.
    """
