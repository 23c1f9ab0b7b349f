"""One agent's keep-alive HTTP connections for its envelopes.

uagents (0.26) posts every envelope with a new ``aiohttp.ClientSession``: a new TCP connection
(and its handshake, and a socket in TIME_WAIT) per envelope. An :class:`EnvelopePoster` keeps
one session -- one connection pool -- per agent, so the envelopes of a conversation ride
connections already open. What it sends and what it answers are uagents' own: the envelope's
JSON as uagents serializes it, the same headers, ``MsgStatus`` delivered on HTTP 200 and failed
otherwise; a synchronous envelope (a query awaiting an envelope in the answer) goes uagents' own
way.

Idle connections are closed after ``keepalive`` seconds (4 s: below the 5 s after which uvicorn,
which serves uagents agents, closes them itself, so a post seldom lands on a connection the
peer is closing). A post that finds its kept connection closed or reset by the peer before any
answer is tried again on a new connection (three times at most), and so is a connect refused
(after 50 ms, 100, then 150: on loopback, under load, new connections to a peer that listens
were seen refused by the hundred for a moment, e.g. landing on a TIME_WAIT it left).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
from typing import Any

import aiohttp
from uagents.communication import send_exchange_envelope
from uagents_core.types import DeliveryStatus, MsgStatus

__all__ = ["EnvelopePoster"]

LOG = logging.getLogger("agent_stream.uagents")
HEADERS = {"content-type": "application/json"}
RETRIES = 3  # more tries of one post after a kept connection was closed, or a connect refused
REFUSED_PAUSE = 0.05  # seconds before trying a refused connect again (times the try)


class EnvelopePoster:
    """Posts one agent's envelopes over a pool of kept-alive connections."""

    def __init__(self, max_connections: int = 256, keepalive: float = 4.0) -> None:
        """Open no connection yet (the first post does).

        Args:
            max_connections: connections open at once, all destinations together.
            keepalive: seconds an idle connection stays open.
        """
        self.max_connections = max_connections
        self.keepalive = keepalive
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connections_opened = 0

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._session
        if session is None or session.closed or self._loop is not loop:
            trace = aiohttp.TraceConfig()
            trace.on_connection_create_end.append(self._opened)
            connector = aiohttp.TCPConnector(
                limit=self.max_connections, keepalive_timeout=self.keepalive
            )
            session = self._session = aiohttp.ClientSession(
                connector=connector, trace_configs=[trace]
            )
            self._loop = loop
        return session

    async def _opened(self, *_args: Any) -> None:
        self.connections_opened += 1

    async def post(self, envelope: Any, endpoints: list[str], sync: bool = False) -> Any:
        """Deliver ``envelope`` to the first of ``endpoints`` that takes it (uagents' rules).

        Args:
            envelope: a signed uagents ``Envelope``.
            endpoints: the destination's endpoints, tried in order.
            sync: a query expecting an envelope in the answer (posted uagents' own way).
        """
        if sync:
            return await send_exchange_envelope(envelope=envelope, endpoints=endpoints, sync=True)
        data = envelope.model_dump_json()
        errors: list[str] = []
        for endpoint in endpoints:
            for attempt in range(1, RETRIES + 2):
                try:
                    async with self._client().post(endpoint, data=data, headers=HEADERS) as resp:
                        if resp.status == 200:
                            return MsgStatus(
                                status=DeliveryStatus.DELIVERED,
                                detail="Message successfully delivered via HTTP",
                                destination=envelope.target,
                                endpoint=endpoint,
                                session=envelope.session,
                            )
                        errors.append(f"{resp.status}: {_detail(await resp.text())}")
                except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                    refused = getattr(getattr(exc, "os_error", exc), "errno", None)
                    if isinstance(exc, aiohttp.ClientConnectorError):
                        if refused == errno.ECONNREFUSED and attempt <= RETRIES:
                            # on loopback a new connection can land on the server side's
                            # TIME_WAIT of one it closed and be refused: again, from another port
                            await asyncio.sleep(REFUSED_PAUSE * attempt)
                            continue
                        errors.append(
                            f"Failed to connect: {exc}" + (f" (errno {refused})" if refused else "")
                        )
                    elif attempt <= RETRIES:  # a kept connection the peer closed or reset:
                        continue  # again, afresh (it had not read the request)
                    else:
                        errors.append(f"Failed to send message: {exc}")
                except Exception as exc:  # never let a transport error escape
                    errors.append(f"Failed to send message: {exc}")
                break
        LOG.debug(
            "failed to deliver an envelope to %s @ %s: %s", envelope.target, endpoints, errors
        )
        return MsgStatus(
            status=DeliveryStatus.FAILED,
            detail="Message delivery failed" + (f": {errors[-1]}" if errors else ""),
            destination=envelope.target,
            endpoint="",
            session=envelope.session,
        )

    async def close(self) -> None:
        """Close the pool's connections (a later post opens new ones)."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _detail(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body[:200]
    return str(data.get("detail", body) if isinstance(data, dict) else body)[:200]
