"""The MCP sessions each caller has open at ``/mcp``, as far as the gateway sees them. Pure.

The SDK caps the sessions open in all; this book caps them per caller (API key, or client
address without keys), so one caller opening sessions without end cannot take every place. A
session is counted from the response that gave its id until its ``DELETE``, a 404 for it (the
SDK closed it), or :attr:`SessionBook.idle` seconds without a request naming it (the SDK's own
idle close); a session whose one request outlasts that is no longer counted (the book errs on
the caller's side).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["SessionBook"]


class SessionBook:
    """Per caller, its open sessions and when each was last named.

    Args:
        per_key: the most sessions one caller may have open.
        idle: seconds without a request after which a session is no longer counted.
        clock: the time source (``time.monotonic``).
    """

    def __init__(
        self, per_key: int, idle: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_key = per_key
        self.idle = idle
        self.clock = clock
        self._open: dict[str, OrderedDict[str, float]] = {}  # key -> session id -> last named
        self._owner: dict[str, str] = {}  # session id -> key

    def count(self, key: str) -> int:
        """The sessions ``key`` has open (the idle ones forgotten first).

        Args:
            key: the caller.
        """
        sessions = self._open.get(key)
        if not sessions:
            return 0
        cutoff = self.clock() - self.idle
        while sessions:
            sid, last = next(iter(sessions.items()))
            if last > cutoff:
                break
            self.closed(sid)
        return len(sessions)

    def full(self, key: str) -> bool:
        """Whether ``key`` may open no more sessions now.

        Args:
            key: the caller.
        """
        return self.count(key) >= self.per_key

    def opened(self, key: str, session_id: str) -> None:
        """``key`` was given the session ``session_id``.

        Args:
            key: the caller.
            session_id: the session's id.
        """
        self._open.setdefault(key, OrderedDict())[session_id] = self.clock()
        self._owner[session_id] = key

    def named(self, key: str, session_id: str) -> None:
        """``key`` sent a request naming ``session_id`` (nothing happens unless it is the
        session's owner: the SDK answers anyone else as for an unknown session).

        Args:
            key: the caller.
            session_id: the session's id.
        """
        if self._owner.get(session_id) == key:
            sessions = self._open[key]
            sessions[session_id] = self.clock()
            sessions.move_to_end(session_id)

    def closed(self, session_id: str, key: str | None = None) -> None:
        """The session ``session_id`` is over (when ``key`` is given: only if it is ``key``'s).

        Args:
            session_id: the session's id.
            key: the caller that said so (None: the book itself).
        """
        owner = self._owner.get(session_id)
        if owner is None or (key is not None and owner != key):
            return
        del self._owner[session_id]
        sessions = self._open[owner]
        sessions.pop(session_id, None)
        if not sessions:
            del self._open[owner]
