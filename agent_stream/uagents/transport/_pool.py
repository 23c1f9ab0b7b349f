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

**Envelope batches.** An agent_stream agent's server says in every answer that it takes several
envelopes in one post (header ``x-agent-stream-batch``: how many at most). To such an endpoint,
:meth:`EnvelopePoster.post_many` posts a JSON array of envelopes with that header, and the
server answers each envelope's HTTP status in order (``{"statuses": [200, 429, ...]}``), taking
them one after the other as if each had come alone (:mod:`._http_edge`). Posts are what a busy lane
runs out of: a thousand replies' first texts due within a second queued ~2 s behind a window of
single posts that each took 0.15 s. A server that stops taking batches (an endpoint now served
by stock uagents) is forgotten as one and gets the envelopes one at a time again. Stock uagents
servers never send the header, so they never get a batch.

**Warming** (:meth:`EnvelopePoster.warm`): uagents' readiness probe (``HEAD``) sent ahead of any
envelope opens a kept connection and, answered by an agent_stream agent's server (which says it
takes batches in that answer too), tells whether the endpoint takes batches. An agent warms its
static peers when it starts (a gateway its agents): its first thousand envelopes to one then go
as batches at once, not behind four single posts whose answers a busy loop reads late.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import aiohttp
from uagents.communication import send_exchange_envelope
from uagents_core.types import DeliveryStatus, MsgStatus

__all__ = ["BATCH_HEADER", "MAX_BATCH", "MAX_BATCH_BYTES", "EnvelopePoster"]

LOG = logging.getLogger("agent_stream.uagents")
HEADERS = {"content-type": "application/json"}
RETRIES = 3  # more tries of one post after a kept connection was closed, or a connect refused
REFUSED_PAUSE = 0.05  # seconds before trying a refused connect again (times the try)
#: The header of a batch post, and of a server's answer saying it takes batches (and how many).
BATCH_HEADER = "x-agent-stream-batch"
MAX_BATCH = 64  # envelopes in one post, at most (a server may say fewer)
MAX_BATCH_BYTES = 256 * 1024  # payload bytes a batch is filled up to (a bigger one goes alone)
MAX_ENDPOINTS = 4096  # endpoints remembered as taking batches
BATCH_HEADERS = {**HEADERS, BATCH_HEADER: "1"}
_BACK_OFF = (429, 503)  # a batch answered so failed whole: the server is busy, not batch-blind


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
        self.posts = 0  # HTTP posts made (a batch is one)
        self._batches: OrderedDict[str, int] = OrderedDict()  # endpoint -> envelopes per post
        self._answered: OrderedDict[str, None] = OrderedDict()  # endpoints that have answered

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

    async def warm(self, endpoint: str, address: str, timeout: float = 5.0) -> bool:
        """Open a kept-alive connection to ``endpoint`` before any envelope goes there, and
        learn from the answer whether it takes batches: uagents' readiness probe (``HEAD`` with
        ``x-uagents-address``), which an agent_stream agent answers with the batch header. A
        crowd's first envelopes then go as batches at once, not behind four single posts whose
        answers a busy loop reads late. Never raises; whether the endpoint answered.

        Args:
            endpoint: the destination's endpoint URL.
            address: the agent expected there.
            timeout: seconds the probe may take.
        """
        try:
            async with self._client().head(
                endpoint,
                headers={"x-uagents-address": address},
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                self._heard(endpoint, resp)
                await resp.read()
        except Exception as exc:  # not up yet, refused, not HTTP: the first post will learn
            LOG.debug("could not warm %s: %s", endpoint, exc)
            return False
        return True

    def batch_limit(self, endpoint: str) -> int:
        """How many envelopes ``endpoint`` takes in one post (1: it never said it takes more).

        Args:
            endpoint: the destination's endpoint URL.
        """
        return self._batches.get(endpoint, 1)

    def heard(self, endpoint: str) -> bool:
        """Whether ``endpoint`` has answered a post (so whether it takes batches is known).

        Args:
            endpoint: the destination's endpoint URL.
        """
        return endpoint in self._answered

    def _heard(self, endpoint: str, resp: aiohttp.ClientResponse) -> None:
        if endpoint not in self._answered:
            self._answered[endpoint] = None
            while len(self._answered) > MAX_ENDPOINTS:
                self._answered.popitem(last=False)
        value = resp.headers.get(BATCH_HEADER)
        if value is None:
            if resp.status == 200 and endpoint in self._batches:  # served by something else now
                del self._batches[endpoint]
            return
        try:
            n = min(MAX_BATCH, int(value))
        except ValueError:
            return
        if n > 1:
            self._batches[endpoint] = n
            self._batches.move_to_end(endpoint)
            while len(self._batches) > MAX_ENDPOINTS:
                self._batches.popitem(last=False)

    async def _exchange(
        self, endpoint: str, data: str, headers: dict[str, str]
    ) -> tuple[int, str] | str:
        """One post of ``data`` (again on a new connection when a kept one was closed, or when
        a connect was refused): (status, body), or what went wrong."""
        for attempt in range(1, RETRIES + 2):
            try:
                self.posts += 1
                async with self._client().post(endpoint, data=data, headers=headers) as resp:
                    self._heard(endpoint, resp)
                    # read to the end even when the answer is not needed: a connection whose
                    # answer was not read whole is closed, not kept (measured: a new connection
                    # every 4 to 20 posts, one at a time, on uvloop)
                    return resp.status, (await resp.read()).decode("utf-8", "replace")
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                refused = getattr(getattr(exc, "os_error", exc), "errno", None)
                if isinstance(exc, aiohttp.ClientConnectorError):
                    if refused == errno.ECONNREFUSED and attempt <= RETRIES:
                        # on loopback a new connection can land on the server side's
                        # TIME_WAIT of one it closed and be refused: again, from another port
                        await asyncio.sleep(REFUSED_PAUSE * attempt)
                        continue
                    return f"Failed to connect: {exc}" + (f" (errno {refused})" if refused else "")
                if attempt <= RETRIES:  # a kept connection the peer closed or reset:
                    continue  # again, afresh (it had not read the request)
                return f"Failed to send message: {exc}"
            except Exception as exc:  # never let a transport error escape
                return f"Failed to send message: {exc}"
        return "Failed to send message"  # not reached: the last try returns

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
            got = await self._exchange(endpoint, data, HEADERS)
            if isinstance(got, str):
                errors.append(got)
            elif got[0] == 200:
                return _delivered(envelope, endpoint)
            else:
                errors.append(f"{got[0]}: {error_text(got[1])}")
        LOG.debug(
            "failed to deliver an envelope to %s @ %s: %s", envelope.target, endpoints, errors
        )
        return _failed(envelope, errors[-1] if errors else "")

    async def post_many(self, envelopes: Sequence[Any], endpoints: list[str]) -> list[Any]:
        """Deliver ``envelopes`` (in order, one destination) in one post to the first of
        ``endpoints``, which said it takes batches; one ``MsgStatus`` per envelope.

        A server that no longer takes them (any answer but 200, 429 or 503) is forgotten as
        one, and the envelopes go one at a time, in order (:meth:`post`).

        Args:
            envelopes: signed uagents ``Envelope`` objects (not queries awaiting an answer).
            endpoints: the destination's endpoints.
        """
        if len(envelopes) == 1 or self.batch_limit(endpoints[0]) == 1:
            return [await self.post(env, endpoints) for env in envelopes]
        endpoint = endpoints[0]
        data = "[" + ",".join(env.model_dump_json() for env in envelopes) + "]"
        got = await self._exchange(endpoint, data, BATCH_HEADERS)
        if isinstance(got, str):
            return [_failed(env, got) for env in envelopes]
        status, body = got
        if status in _BACK_OFF:
            return [_failed(env, f"{status}: {error_text(body)}") for env in envelopes]
        statuses = _statuses(body, len(envelopes)) if status == 200 else None
        if statuses is None:  # not a batch server (any more): one at a time
            LOG.debug(
                "%s does not take envelope batches (%s); posting one at a time", endpoint, status
            )
            self._batches.pop(endpoint, None)
            return [await self.post(env, endpoints) for env in envelopes]
        return [
            _delivered(env, endpoint) if code == 200 else _failed(env, f"{code}: {why}")
            for env, (code, why) in zip(envelopes, statuses, strict=True)
        ]

    async def close(self) -> None:
        """Close the pool's connections (a later post opens new ones)."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def error_text(body: str | bytes) -> str:
    """What an error answer says: its ``detail`` or ``error`` field, else its start.

    Args:
        body: the answer's body.
    """
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and ("detail" in data or "error" in data):
        return str(data.get("detail", data.get("error")))[:200]
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    return text[:200]


def _delivered(envelope: Any, endpoint: str) -> MsgStatus:
    return MsgStatus(
        status=DeliveryStatus.DELIVERED,
        detail="Message successfully delivered via HTTP",
        destination=envelope.target,
        endpoint=endpoint,
        session=envelope.session,
    )


def _failed(envelope: Any, why: str) -> MsgStatus:
    return MsgStatus(
        status=DeliveryStatus.FAILED,
        detail="Message delivery failed" + (f": {why}" if why else ""),
        destination=envelope.target,
        endpoint="",
        session=envelope.session,
    )


def _statuses(body: str, n: int) -> list[tuple[int, str]] | None:
    """A batch answer's (status, error) per envelope; None when it is not one for ``n``."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    codes = data.get("statuses") if isinstance(data, dict) else None
    if not isinstance(codes, list) or len(codes) != n:
        return None
    errors = data.get("errors")
    if not isinstance(errors, list) or len(errors) != n:
        errors = [""] * n
    out: list[tuple[int, str]] = []
    for code, why in zip(codes, errors, strict=True):
        if not isinstance(code, int) or isinstance(code, bool):
            return None
        out.append((code, str(why)[:200] if why else ""))
    return out
