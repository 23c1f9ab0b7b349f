"""The HTTP edge of the inbox guard: what an envelope may cost before uagents handles it.

uagents' ``ASGIServer.__call__`` reads the whole body, parses it and, for a signed envelope,
verifies the signature -- pure-Python secp256k1, ~4 ms of the event loop each -- before anything
of ours runs. A protected agent's server object is an :class:`AgentServer` (a subclass of
uagents' ``ASGIServer``; the object of that agent only has its class switched, keeping its
identity and state, so it works before the agent starts and while uvicorn serves it; Python
looks ``__call__`` up on the class, so an instance attribute would not do). When it has an
:class:`Edge`, the limits of the agent's
:class:`~agent_stream.uagents.transport._guard.GuardSettings` apply first:

- an envelope over ``max_envelope_bytes`` (4 MiB) is answered 413 before it is read whole;
- admission: signed envelopes from senders not verified in the last 10 minutes share
  ``new_senders_per_second`` (25, a burst of twice that); a sender once verified has
  ``sender_envelopes_per_second`` (200, same burst) of its own, one of ``trusted_senders`` (a
  gateway asking for many users), or an agent streaming replies this agent asked for
  (:func:`answering`), ``trusted_envelopes_per_second`` (10,000). Past them: 429
  before the signature is checked (an agent_stream asker retries an undelivered question for
  5 s).
  Unsigned envelopes (``user...`` addresses: no verification, and chat handlers answer them
  only with an error) share ``unsigned_per_second`` (50, same burst);
- an exception inside uagents' envelope handling (a payload that is not base64 or not UTF-8,
  ...) is answered 400 and logged rate-limited, instead of a 500 and a traceback per request.

**Batches.** Every answer of a protected agent's server says it takes several envelopes in one
post (header ``x-agent-stream-batch: 64``). A post with that header carries a JSON array of up to
64 envelopes; each is admitted, verified and handled exactly as if it had come alone, in order,
and the answer is 200 with each one's HTTP status in order (``{"statuses": [...], "errors":
[...]}``). The body limit is the one of a single envelope; a batch that is not an array of at
most 64, or that is a query awaiting an answer (``x-uagents-connection: sync``), is answered 400
(413 when too many). See :mod:`._pool` for the sending side.

Signatures are verified by uagents' code with libsecp256k1 in place of its pure-Python ECDSA
(:mod:`._signing`; the same envelopes are accepted and refused).

An :class:`AgentServer` with a ``host`` listens there instead of uagents' ``0.0.0.0`` (local
agents: 127.0.0.1). One with a ``host`` or an :class:`Edge` cuts slow clients off (slowloris):
request headers must arrive within ``header_timeout`` (5 s), and past
``max_header_connections`` (256) connections sending headers, a new one closes the one at it
the longest (:mod:`agent_stream._header_timeout`; limits read when the server starts).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from uagents import Agent
from uagents.asgi import ASGIServer

from agent_stream.uagents import _compat
from agent_stream.uagents._ratelog import TokenBucket
from agent_stream.uagents.transport import _signing as signing
from agent_stream.uagents.transport._guard import AgentGuard, GuardSettings, short
from agent_stream.uagents.transport._pool import BATCH_HEADER, MAX_BATCH, error_text

__all__ = ["AgentServer", "Edge", "answering", "answering_from"]

KNOWN_FOR = 600.0  # seconds a verified sender counts as known
MAX_KNOWN = 4096  # senders remembered (least recently verified forgotten first)

_BATCH = BATCH_HEADER.encode()
_TAKES_BATCHES = [_BATCH, str(MAX_BATCH).encode()]  # the header every answer carries
_LENGTH = b"content-length"
_SYNC = b"x-uagents-connection"

Receive = Callable[[], Awaitable[dict[str, Any]]]
SendASGI = Callable[[dict[str, Any]], Awaitable[None]]


class Edge:
    """The admission state of one agent's HTTP edge (limits and counters: its guard's).

    Args:
        guard: the agent's guard, whose settings and counters the edge uses.
    """

    def __init__(self, guard: AgentGuard) -> None:
        self.guard = guard
        self._answering: OrderedDict[str, float] = OrderedDict()  # sender -> trusted until
        self._reset()

    def _reset(self) -> None:
        s = self._settings = self.guard.settings
        self._new = TokenBucket(s.new_senders_per_second, clock=self.guard.clock)
        self._unsigned = TokenBucket(s.unsigned_per_second, clock=self.guard.clock)
        self._known: OrderedDict[str, tuple[float, TokenBucket]] = OrderedDict()

    def admit(self, sender: Any, signed: bool) -> bool:
        """Whether an envelope from ``sender`` may be read on (see the module doc).

        Args:
            sender: the envelope's sender (as read, not yet verified).
            signed: whether the envelope carries a signature.
        """
        if self._settings is not self.guard.settings:  # the guard was reconfigured
            self._reset()
        if not signed or not isinstance(sender, str) or sender.startswith("user"):
            return self._unsigned.take()
        entry = self._known.get(sender)
        if entry is not None and self.guard.clock.now() - entry[0] < KNOWN_FOR:
            return entry[1].take()
        return self._new.take()

    def verified(self, sender: str) -> None:
        """Note that uagents accepted a signed envelope of ``sender``.

        Args:
            sender: the verified sender's address.
        """
        entry = self._known.pop(sender, None)
        bucket = (
            entry[1]
            if entry is not None
            else TokenBucket(self._rate(sender), clock=self.guard.clock)
        )
        self._known[sender] = (self.guard.clock.now(), bucket)
        while len(self._known) > MAX_KNOWN:
            self._known.popitem(last=False)

    def _rate(self, sender: str) -> float:
        s = self.guard.settings
        until = self._answering.get(sender)
        trusted = sender in s.trusted_senders or (
            until is not None and until > self.guard.clock.now()
        )
        return s.trusted_envelopes_per_second if trusted else s.sender_envelopes_per_second

    def answering(self, sender: str) -> None:
        """Note that ``sender`` streams replies this agent asked for (tagged ones): its
        envelopes are admitted at ``trusted_envelopes_per_second`` for the next 10 minutes.

        Args:
            sender: the address of the peer answering this agent.
        """
        self._answering[sender] = self.guard.clock.now() + KNOWN_FOR
        self._answering.move_to_end(sender)
        while len(self._answering) > MAX_KNOWN:
            self._answering.popitem(last=False)
        entry = self._known.get(sender)
        rate = self.guard.settings.trusted_envelopes_per_second
        if entry is not None and entry[1].rate != rate:
            self._known[sender] = (entry[0], TokenBucket(rate, clock=self.guard.clock))

    def refused(self) -> None:
        self.guard.stats["http_refused"] += 1


def _saying_batches(send: SendASGI, method: str | None = None) -> SendASGI:
    """``send``, adding to the answer's headers that this server takes batches (and, to a
    ``HEAD`` answered without a length, ``content-length: 0``: without it the asker's client
    cannot keep the connection)."""

    async def saying(msg: dict[str, Any]) -> None:
        if msg.get("type") == "http.response.start":
            headers = [*(msg.get("headers") or ()), _TAKES_BATCHES]
            if method == "HEAD" and not any(bytes(k).lower() == _LENGTH for k, _ in headers):
                headers.append([_LENGTH, b"0"])
            msg = {**msg, "headers": headers}
        await send(msg)

    return saying


async def _answer(send: SendASGI, status: int, error: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [[b"content-type", b"application/json"]],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps({"error": error}).encode()})


async def _read(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None when it goes over ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        msg = await receive()
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not msg.get("more_body", False):
            return b"".join(chunks)


def _utf8(body: bytes) -> bool:
    try:
        body.decode()
    except UnicodeDecodeError:
        return False
    return True


class AgentServer(ASGIServer):  # type: ignore[misc]
    """uagents' server of one agent, behind its :class:`Edge` (when it has one), listening on
    ``host`` (None: where uagents listens)."""

    edge: Edge | None = None
    host: str | None = None

    async def serve(self) -> None:
        if self.host is None and self.edge is None:
            await super().serve()
            return
        # slow clients cut off with the guard's limits (an unprotected local agent: defaults)
        s = self.edge.guard.settings if self.edge is not None else GuardSettings()
        await _compat.serve_on(
            self,
            self.host,
            header_timeout=s.header_timeout,
            max_header_connections=s.max_header_connections,
        )

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: SendASGI) -> None:
        edge = self.edge
        if edge is None or scope.get("type") != "http":
            await self._uagents(scope, receive, send)
            return
        if scope.get("method") != "POST":  # (a readiness probe: it learns batches are taken)
            await self._uagents(scope, receive, _saying_batches(send, scope.get("method")))
            return
        limit = edge.guard.settings.max_envelope_bytes
        batch = sync = False
        for key, value in scope.get("headers") or ():
            key = key.lower()
            if key == b"content-length" and value.isdigit() and int(value) > limit:
                edge.refused()
                await _answer(send, 413, f"envelope over {limit} bytes")
                return
            batch = batch or key == _BATCH
            sync = sync or (key == _SYNC and value == b"sync")
        body = await _read(receive, limit)
        if body is None:
            edge.refused()
            await _answer(send, 413, f"envelope over {limit} bytes")
            return
        if batch and scope.get("path") == "/submit":  # envelopes' own path, not a REST one
            await self._batch(edge, scope, body, send, sync)
            return
        try:
            head = json.loads(body)
        except (ValueError, RecursionError):
            head = None
        sender = head.get("sender") if isinstance(head, dict) else None
        signed = isinstance(head, dict) and head.get("signature") is not None
        if not edge.admit(sender, signed):
            edge.refused()
            await _answer(send, 429, "too many envelopes; try again shortly")
            return
        signer = sender if signed and isinstance(sender, str) else None
        if (
            not sync
            and isinstance(head, dict)
            and scope.get("path") == "/submit"
            and signing.AVAILABLE
            and _compat.submits_directly(self, scope.get("headers") or ())
            and _utf8(body)  # uagents decodes it strictly before parsing it
        ):
            await self._submit(edge, head, send, signer)
            return
        await self._forward(edge, scope, body, receive, send, signer)

    async def _submit(
        self, edge: Edge, head: dict[str, Any], send: SendASGI, signer: str | None
    ) -> None:
        """One envelope posted alone, parsed already: handled and answered as uagents' ASGI
        handler does (:func:`~agent_stream.uagents._compat.submit_envelope`), without giving it
        the body to parse again."""
        try:
            status, error = await _compat.submit_envelope(self, signing.FastEnvelope, head)
        except Exception as exc:  # as _forward answers what uagents' handler raised
            edge.refused()
            edge.guard.log.warning("refused an envelope: %s: %s", type(exc).__name__, short(exc))
            await _answer(send, 400, "malformed envelope")
            return
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [[b"content-type", b"application/json"], _TAKES_BATCHES],
            }
        )
        answer = b"{}" if status == 200 else json.dumps({"error": error}).encode()
        await send({"type": "http.response.body", "body": answer})
        if status == 200 and signer is not None:
            edge.verified(signer)

    async def _uagents(self, scope: dict[str, Any], receive: Receive, send: SendASGI) -> None:
        """uagents' own handling, verifying signatures with libsecp256k1 when it is there."""
        if signing.AVAILABLE:
            await _compat.serve_with_envelope(self, signing.FastEnvelope, scope, receive, send)
        else:
            await super().__call__(scope, receive, send)

    async def _forward(
        self,
        edge: Edge,
        scope: dict[str, Any],
        body: bytes,
        receive: Receive,
        send: SendASGI,
        signer: str | None,
    ) -> int | None:
        """Hand the body read to uagents' handler; note a signer it accepted as verified.
        Returns the HTTP status answered."""
        given = False
        status: int | None = None

        async def replay() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        saying = _saying_batches(send)

        async def tracked_send(msg: dict[str, Any]) -> None:
            nonlocal status
            if msg.get("type") == "http.response.start":
                status = int(msg.get("status", 0))
            await saying(msg)

        try:
            await self._uagents(scope, replay, tracked_send)
        except Exception as exc:
            edge.refused()
            edge.guard.log.warning("refused an envelope: %s: %s", type(exc).__name__, short(exc))
            if status is None:
                await _answer(send, 400, "malformed envelope")
                return 400
            return status
        if status == 200 and signer is not None:
            edge.verified(signer)
        return status

    async def _batch(
        self, edge: Edge, scope: dict[str, Any], body: bytes, send: SendASGI, sync: bool
    ) -> None:
        """A post of several envelopes: each handled as if it had come alone, in order."""
        try:
            items = json.loads(body)
        except (ValueError, RecursionError):
            items = None
        if sync or not isinstance(items, list) or not items:
            edge.refused()
            await _answer(send, 400, "a batch is a JSON array of envelopes, not a query")
            return
        if len(items) > MAX_BATCH:
            edge.refused()
            await _answer(send, 413, f"over {MAX_BATCH} envelopes in one post")
            return
        one = {
            **scope,
            "headers": [h for h in scope.get("headers") or () if h[0].lower() != _BATCH],
        }
        statuses: list[int] = []
        errors: list[str] = []
        direct = signing.AVAILABLE and _compat.submits_directly(self, one["headers"])
        for item in items:
            status, error = await self._one_of_batch(edge, one, item, direct)
            statuses.append(status)
            errors.append(error)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [[b"content-type", b"application/json"], _TAKES_BATCHES],
            }
        )
        answer = json.dumps({"statuses": statuses, "errors": errors}).encode()
        await send({"type": "http.response.body", "body": answer})

    async def _one_of_batch(
        self, edge: Edge, scope: dict[str, Any], item: Any, direct: bool = False
    ) -> tuple[int, str]:
        """(status, error) of one envelope of a batch, admitted and handled as if alone;
        ``direct``: handed to uagents' envelope handling as the object it is (the batch's
        headers are ones :func:`~agent_stream.uagents._compat.submits_directly` takes), not
        encoded again as a body for uagents' ASGI handler to decode (a fifth of the CPU a
        gateway spent on an envelope)."""
        if not isinstance(item, dict):
            edge.refused()
            return 400, "not an envelope"
        sender = item.get("sender")
        signed = item.get("signature") is not None
        if not edge.admit(sender, signed):
            edge.refused()
            return 429, "too many envelopes; try again shortly"
        signer = sender if signed and isinstance(sender, str) else None
        if direct:
            try:
                status, error = await _compat.submit_envelope(self, signing.FastEnvelope, item)
            except Exception as exc:  # as _forward answers what uagents' handler raised
                edge.refused()
                edge.guard.log.warning(
                    "refused an envelope: %s: %s", type(exc).__name__, short(exc)
                )
                return 400, "malformed envelope"
            if status == 200 and signer is not None:
                edge.verified(signer)
            return status, error[:200]
        answer: list[bytes] = []

        async def gone() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        async def keep(msg: dict[str, Any]) -> None:
            if msg.get("type") == "http.response.body":
                answer.append(msg.get("body", b""))

        body = json.dumps(item).encode()
        status = await self._forward(edge, scope, body, gone, keep, signer) or 500
        return status, "" if status == 200 else error_text(b"".join(answer))


def answering(agent: Any, sender: str) -> None:
    """Note on ``agent``'s HTTP edge that ``sender`` streams replies it asked for (see
    :meth:`Edge.answering`); nothing for an agent without an edge.

    Args:
        agent: the asking ``uagents.Agent``.
        sender: the address of the agent answering it.
    """
    server = _compat.server_of(agent)
    if isinstance(server, AgentServer) and server.edge is not None:
        server.edge.answering(sender)


def answering_from(ctx: Any, sender: str) -> None:
    """:func:`answering` for the agent whose handler context ``ctx`` is.

    Args:
        ctx: a handler's context.
        sender: the address of the agent answering it.
    """
    address = getattr(getattr(ctx, "agent", None), "address", None)
    for sink in _compat.sinks_for(address) if isinstance(address, str) else ():
        if isinstance(sink, Agent):
            answering(sink, sender)
            return
