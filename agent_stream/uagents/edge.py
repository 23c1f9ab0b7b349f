"""The HTTP edge of the inbox guard: what an envelope may cost before uagents handles it.

uagents' ``ASGIServer.__call__`` reads the whole body, parses it and, for a signed envelope,
verifies the signature -- pure-Python secp256k1, ~4 ms of the event loop each -- before anything
of ours runs. :func:`guarded_asgi_call` (installed by :func:`agent_stream.uagents.guard.install`)
runs first, with the limits of :data:`agent_stream.uagents.guard.settings`:

- an envelope over ``max_envelope_bytes`` (4 MiB) is answered 413 before it is read whole;
- admission: signed envelopes from senders not verified in the last 10 minutes share
  ``new_senders_per_second`` (25, a burst of twice that); a sender once verified has
  ``sender_envelopes_per_second`` (200, same burst) of its own. Past them: 429 before the
  signature is checked (an agent_stream asker retries an undelivered question for 5 s).
  Unsigned envelopes (``user...`` addresses: no verification, and chat handlers answer them
  only with an error) share ``unsigned_per_second`` (50, same burst);
- an exception inside uagents' envelope handling (a payload that is not base64 or not UTF-8,
  ...) is answered 400 and logged rate-limited, instead of a 500 and a traceback per request.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from agent_stream.uagents import guard

__all__ = ["TokenBucket", "guarded_asgi_call", "reset"]

LOG = logging.getLogger("agent_stream.uagents.guard")
KNOWN_FOR = 600.0  # seconds a verified sender counts as known
MAX_KNOWN = 4096  # senders remembered (least recently verified forgotten first)

Receive = Callable[[], Awaitable[dict[str, Any]]]
SendASGI = Callable[[dict[str, Any]], Awaitable[None]]


class TokenBucket:
    """``rate`` tokens per second, at most ``2 * rate`` saved up."""

    __slots__ = ("last", "rate", "tokens")

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tokens = 2.0 * rate
        self.last = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(2.0 * self.rate, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


_log = guard.RateLimitedLog(LOG, 5, 10.0)
_new = TokenBucket(guard.settings.new_senders_per_second)
_unsigned = TokenBucket(guard.settings.unsigned_per_second)
_known: OrderedDict[str, tuple[float, TokenBucket]] = OrderedDict()


def reset() -> None:
    """Forget admission state and the log's rate (for tests)."""
    global _new, _unsigned, _log
    _new = TokenBucket(guard.settings.new_senders_per_second)
    _unsigned = TokenBucket(guard.settings.unsigned_per_second)
    _log = guard.RateLimitedLog(LOG, guard.settings.log_burst, guard.settings.log_period)
    _known.clear()


def _admit(sender: Any, signed: bool) -> bool:
    if not signed or not isinstance(sender, str) or sender.startswith("user"):
        _unsigned.rate = guard.settings.unsigned_per_second
        return _unsigned.take()
    entry = _known.get(sender)
    if entry is not None and time.monotonic() - entry[0] < KNOWN_FOR:
        return entry[1].take()
    bucket = _new
    bucket.rate = guard.settings.new_senders_per_second
    return bucket.take()


def _verified(sender: str) -> None:
    entry = _known.pop(sender, None)
    bucket = entry[1] if entry is not None else TokenBucket(
        guard.settings.sender_envelopes_per_second)
    _known[sender] = (time.monotonic(), bucket)
    while len(_known) > MAX_KNOWN:
        _known.popitem(last=False)


async def _answer(send: SendASGI, status: int, error: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [[b"content-type", b"application/json"]]})
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


async def guarded_asgi_call(self: Any, scope: dict[str, Any], receive: Receive,
                            send: SendASGI) -> None:
    """``ASGIServer.__call__`` behind the limits of the module doc."""
    original = guard.original("asgi_call")
    if scope.get("type") != "http" or scope.get("method") != "POST":
        await original(self, scope, receive, send)
        return
    limit = guard.settings.max_envelope_bytes
    for key, value in scope.get("headers") or ():
        if key.lower() == b"content-length" and value.isdigit() and int(value) > limit:
            guard.stats["http_refused"] += 1
            await _answer(send, 413, f"envelope over {limit} bytes")
            return
    body = await _read(receive, limit)
    if body is None:
        guard.stats["http_refused"] += 1
        await _answer(send, 413, f"envelope over {limit} bytes")
        return
    try:
        head = json.loads(body)
    except (ValueError, RecursionError):
        head = None
    sender = head.get("sender") if isinstance(head, dict) else None
    signed = isinstance(head, dict) and head.get("signature") is not None
    if not _admit(sender, signed):
        guard.stats["http_refused"] += 1
        await _answer(send, 429, "too many envelopes; try again shortly")
        return
    await _forward(self, scope, body, receive, send, original,
                   sender if signed and isinstance(sender, str) else None)


async def _forward(server: Any, scope: dict[str, Any], body: bytes, receive: Receive,
                   send: SendASGI, original: Any, signer: str | None) -> None:
    """Hand the body read to uagents' handler; note a signer it accepted as verified."""
    given = False
    status: int | None = None

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    async def tracked_send(msg: dict[str, Any]) -> None:
        nonlocal status
        if msg.get("type") == "http.response.start":
            status = int(msg.get("status", 0))
        await send(msg)

    try:
        await original(server, scope, replay, tracked_send)
    except Exception as exc:
        guard.stats["http_refused"] += 1
        _log.warning("refused an envelope: %s: %s", type(exc).__name__, guard.short(exc))
        if status is None:
            await _answer(send, 400, "malformed envelope")
        return
    if status == 200 and signer is not None:
        _verified(signer)
