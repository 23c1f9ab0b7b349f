"""Slow clients (slowloris) cut off: uvicorn's HTTP protocol with a deadline for request headers.

uvicorn (0.3x-0.5x) has no timeout for reading a request's headers: a client that sends them a
byte at a time keeps its connection, and a few hundred such clients keep a server's every
connection. :func:`protocol_class` makes a subclass of uvicorn's httptools protocol (give it as
``uvicorn.Config(http=...)``) that bounds this two ways:

- **a deadline**: a connection has ``header_timeout`` seconds from when it opens (and, kept
  alive, from the first byte of each later request) to when its request's headers are complete;
  then it is answered 408 and closed. The deadline is not moved by data arriving: a client
  dripping its headers does not extend it. Bodies and responses are not bounded by it;
- **a cap**: at most ``max_pending`` connections of one server are sending headers at once; a
  new one past it closes the one that has been at it longest (an attacker's, whose headers
  never end: a normal client's arrive at once), so that attackers cannot lock normal clients
  out.

Idle kept-alive connections are uvicorn's ``timeout_keep_alive``'s: they count for neither.
"""

from __future__ import annotations

import asyncio
import logging
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HeaderTimeoutProtocol", "protocol_class"]

LOG = logging.getLogger("agent_stream.header_timeout")

_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: 24\r\n"
    b"connection: close\r\n"
    b"\r\n"
    b"request headers too slow"
)


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline for request headers and a cap on
    connections sending them (the module doc). Use a subclass of :func:`protocol_class`: the
    limits and the connections counted are class attributes, one set per server."""

    header_timeout: ClassVar[float] = 5.0
    max_pending: ClassVar[int] = 256
    # the connections sending headers, the longest at it first (dicts keep insertion order)
    pending: ClassVar[dict[HeaderTimeoutProtocol, None]] = {}

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_done()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._await_headers()  # a later request on a kept-alive connection

    def on_headers_complete(self) -> None:
        self._headers_done()
        super().on_headers_complete()

    def _await_headers(self) -> None:
        """Start the headers' deadline, unless it runs already; first close the connections
        sending headers the longest while there are ``max_pending`` of them."""
        if self._header_timer is not None:
            return
        pending = self.pending
        while len(pending) >= self.max_pending:
            oldest = next(iter(pending))
            oldest._headers_done()
            LOG.debug("closed a connection still sending headers: %s", oldest.client)
            oldest.transport.close()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)
        pending[self] = None

    def _headers_done(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        self.pending.pop(self, None)

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        self.pending.pop(self, None)
        transport = self.transport
        if transport.is_closing():
            return
        LOG.debug("headers not complete in %s s: closed %s", self.header_timeout, self.client)
        if self.cycle is None or self.cycle.response_complete:  # not in a response's middle
            transport.write(_REQUEST_TIMEOUT)
        transport.close()


def protocol_class(header_timeout: float, max_pending: int) -> type[HeaderTimeoutProtocol]:
    """A new :class:`HeaderTimeoutProtocol` class for one server (its own connections count).

    Args:
        header_timeout: seconds a request's headers may take, from the connection's start (or
            the request's first byte on a kept-alive connection); more than 0.
        max_pending: connections sending headers at once; at least 1.

    Returns:
        The class to give ``uvicorn.Config`` as ``http``.

    Raises:
        ValueError: a limit out of range.
    """
    if not header_timeout > 0:
        raise ValueError(f"header_timeout must be more than 0 seconds, got {header_timeout}")
    if max_pending < 1:
        raise ValueError(f"max_pending must be at least 1, got {max_pending}")
    timeout, cap = float(header_timeout), int(max_pending)

    class ServerProtocol(HeaderTimeoutProtocol):
        header_timeout = timeout
        max_pending = cap
        pending: ClassVar[dict[HeaderTimeoutProtocol, None]] = {}

    return ServerProtocol
