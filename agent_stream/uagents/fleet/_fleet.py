"""One agent address served by several replicas: what they share through Redis.

Replicas share the seed (so the address) and sit behind a load balancer, which hands any envelope
to any of them. What a reply needs beyond the replica answering it goes through Redis, under
``agent_stream:fleet:<address>:``:

- claims: the first replica to take a question (``SET NX EX`` on sender and msg_id) answers it;
  the same question resent to another replica is acknowledged there, not answered twice. The
  claim names the replica, so it is also the record of which replica holds the reply;
- forwarding, on one pub/sub channel per agent address: an acknowledgement that no reply of this
  replica waits for is published to all replicas; a ``resend``/``cancel`` op for a reply held
  by another live replica is published to that one;
- liveness: each replica refreshes a key of its own every second (it expires 5 s after a crash)
  and is listed in the fleet's set of replicas;
- replay mirrors: each reply's numbered ChatMessages, written in batches (one pipelined round trip
  per flush, at most every 50 ms), bounded like the local replay buffer, expiring the delivery
  policy's ``replay_linger`` after the last write; a ``resend`` for a reply whose replica is gone
  is served from it by whichever replica receives it;
- open replies: each replica lists the replies it mirrors and has not ended. Every second each
  replica looks for replicas whose liveness key expired and ends, for the asker, a few of their
  open replies (:meth:`Fleet.sweep`): the reply's ``stream_end`` with status ``lost``, numbered
  after the last ChatMessage its mirror holds (:mod:`._lost`), sent once in the fleet (the
  replica that takes ``SET NX`` on the reply sends it). The asker learns its reply is lost seconds
  after its replica died, not at its own idle timeout. A reply that ended (its final ChatMessage
  mirrored) or whose mirror expired is left alone, and a live replica's replies are never ended.

A replica's ``ctx.storage`` is its own (:func:`use_replica_storage`): uagents names the file
after the address, which the replicas share, so in one working directory they would overwrite
each other's writes. State the replicas share belongs in Redis.

Redis down or slow never stalls a reply: every call is bounded by ``timeout``, a failure is logged
(rate-limited) and the replica acts alone (answers what it receives, serves what it holds).
Forwarded messages are validated and size-capped before anything acts on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from uagents.storage import KeyValueStore
from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.adapters.chat.wire import OP_CANCEL, OP_RESEND, seq_span
from agent_stream.uagents import _compat
from agent_stream.uagents._clock import LOOP_CLOCK, Clock
from agent_stream.uagents._ratelog import RateLimitedLog
from agent_stream.uagents.fleet._lost import SESSION_FIELD, SendTo, open_entry, sweep

__all__ = ["MAX_MESSAGE_BYTES", "Fleet", "Forwarded", "parse_forwarded", "use_replica_storage"]

LOG = logging.getLogger("agent_stream.uagents")
T = TypeVar("T")

MAX_MESSAGE_BYTES = 4096  # a forwarded ack or op is a few hundred bytes
_MAX_ID = 64  # replica ids, msg ids
_MAX_SENDER = 256
_MAX_OP_FIELDS = 8
_MAX_OP_VALUE = 128
_MAX_CHAT_BYTES = 1024 * 1024  # a bigger ChatMessage is not mirrored (it stays local)
_MAX_OUTBOX = 20_000  # commands waiting for the next flush; the oldest are dropped beyond
_MAX_REPLIES_TRACKED = 8192
_HEARTBEAT = 1.0
_ALIVE_TTL = 5
_SWEEP_EVERY = 1.0
_FLUSH_EVERY = 0.05
_BATCH = 512
_STORAGE_TAG = re.compile(r"[A-Za-z0-9_.-]{1,64}")

Send = Callable[[ChatMessage], Awaitable[object]]


@dataclass(frozen=True)
class Forwarded:
    """An acknowledgement or delivery op that reached another replica of this agent.

    Attributes:
        kind: ``"ack"`` or ``"op"``.
        sender: the asker's address.
        key: for an ``ack``: the acknowledged msg_id.
        op: for an ``op``: the asker's ``resend``/``cancel`` op, string fields only.
    """

    kind: str
    sender: str
    key: str = ""
    op: Mapping[str, str] = field(default_factory=dict)


def parse_forwarded(data: Any, me: str) -> Forwarded | None:
    """The Forwarded in a pub/sub message for replica ``me``; None when it is not one, is too
    big, is malformed in any way, is this replica's own, or is addressed to another replica.

    Args:
        data: the pub/sub message's payload.
        me: this replica's id.
    """
    obj = _message_object(data)
    if obj is None:
        return None
    sender, kind = obj.get("sender"), obj.get("kind")
    origin, to = obj.get("from"), obj.get("to")
    if not (_short(origin, _MAX_ID) and _short(to, _MAX_ID) and _short(sender, _MAX_SENDER)):
        return None
    if origin == me or to not in ("*", me):
        return None
    if kind == "ack":
        key = obj.get("key")
        return Forwarded("ack", str(sender), key=str(key)) if _short(key, _MAX_ID) else None
    op = obj.get("op")
    if kind != "op" or not isinstance(op, dict) or len(op) > _MAX_OP_FIELDS:
        return None
    if not all(_short(k, _MAX_OP_VALUE) and _short(v, _MAX_OP_VALUE) for k, v in op.items()):
        return None
    if op.get("op") not in (OP_CANCEL, OP_RESEND) or not op.get("conversation"):
        return None
    return Forwarded("op", str(sender), op={str(k): str(v) for k, v in op.items()})


def _message_object(data: Any) -> dict[str, Any] | None:
    """A pub/sub payload's JSON object (None: not bytes or text, over ``MAX_MESSAGE_BYTES``
    in UTF-8, not JSON, or not an object)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    if not isinstance(data, bytes | bytearray) or len(data) > MAX_MESSAGE_BYTES:
        return None
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def use_replica_storage(agent: Any, tag: str) -> KeyValueStore:
    """Give ``agent`` a ``ctx.storage`` of this replica's own: ``<address[:16]>_<tag>_data.json``
    in the current directory instead of uagents' ``<address[:16]>_data.json``, which every
    replica (same address) would write. Call it before the agent starts.

    Args:
        agent: the replica's uagents Agent.
        tag: what tells this replica from the others, and stays the same across its restarts
            (its port, say): 1 to 64 letters, digits, ``_``, ``.`` or ``-``.

    Returns:
        The replica's store (already read from its file, if there is one).

    Raises:
        ValueError: ``tag`` is not such a name.
    """
    if not isinstance(tag, str) or not _STORAGE_TAG.fullmatch(tag) or tag in (".", ".."):
        raise ValueError(f"replica storage: {tag!r} is not 1 to 64 of A-Z a-z 0-9 _ . -")
    store = KeyValueStore(f"{str(agent.address)[:16]}_{tag}")
    _compat.set_storage(agent, store)
    return store


def _short(value: Any, limit: int) -> bool:
    return isinstance(value, str) and 0 < len(value) <= limit


class _Mirror:
    """What one open reply has mirrored: the first sequence number of each ChatMessage."""

    def __init__(self) -> None:
        self.firsts: deque[int] = deque()
        self.kept: set[int] = set()
        self.session = False  # its mirror says its end ends the session


class Fleet:
    """This replica's share of a fleet serving one agent address (see the module doc).

    Args:
        url: the Redis server (``redis://HOST:PORT/DB``, ``rediss://`` or ``unix://``).
        replica: this replica's id (default: a random one).
        policy: the delivery policy (replay bounds and linger of the mirrors).
        timeout: seconds any one Redis call may take before the replica acts alone.
        claim_ttl: seconds a question's claim (and record of its holder) is kept.
        clock: the runtime's clock (heartbeats, sweeps, the quiet time after a failure; a Redis
            call's own timeout is network time, on the loop).
    """

    QUIET = 2.0  # seconds Redis is not asked after a failure

    def __init__(
        self,
        url: str,
        *,
        replica: str | None = None,
        policy: DeliveryPolicy | None = None,
        timeout: float = 0.5,
        claim_ttl: float = 900.0,
        clock: Clock = LOOP_CLOCK,
    ) -> None:
        self.clock = clock
        try:
            import redis.asyncio as aioredis
        except ImportError as exc:  # pragma: no cover - redis is a dependency
            raise RuntimeError("a fleet needs the redis package: pip install redis") from exc
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"fleet {url!r}: expected redis://HOST:PORT/DB")
        if timeout <= 0 or claim_ttl < 1:
            raise ValueError("fleet: timeout and claim_ttl must be positive")
        self.url = url
        self.replica = replica or secrets.token_hex(6)
        if not _short(self.replica, _MAX_ID):
            raise ValueError("fleet: a replica id is 1 to 64 characters")
        self.policy = policy or DeliveryPolicy()
        self.timeout = timeout
        self.claim_ttl = int(claim_ttl)
        self.redis = aioredis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._sub_client = aioredis.from_url(url, socket_connect_timeout=timeout)
        self.address: str | None = None
        self._handler: Callable[[Forwarded], None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._outbox: deque[tuple[str, tuple[Any, ...]]] = deque()
        self._wake: asyncio.Event | None = None
        self._mirrors: OrderedDict[tuple[str, str], _Mirror] = OrderedDict()
        self._log = RateLimitedLog(LOG, 3, 30.0)
        self.subscribed = asyncio.Event()
        self.forwarded = 0  # acks and ops this replica published for another
        self.received = 0  # forwarded messages this replica acted on
        self.refused = 0  # pub/sub messages refused as malformed
        self.degraded = 0  # Redis calls that failed or timed out
        self.ended_lost = 0  # replies of dead replicas this replica ended as lost
        self.send_to: SendTo | None = None
        self._quiet_until = 0.0  # Redis is not asked before then (it just failed)
        self._closing = False

    # -- lifecycle ----------------------------------------------------------------------------
    def start(
        self,
        address: str,
        handler: Callable[[Forwarded], None],
        send_to: SendTo | None = None,
    ) -> None:
        """Join the fleet of ``address``: heartbeat, subscription and batch writer start (once;
        in a running event loop), and with ``send_to`` the sweep of dead replicas' replies.

        Args:
            address: the agent's address, shared by its replicas.
            handler: called with each Forwarded meant for this replica.
            send_to: sends a ChatMessage to an asker, as this agent (None: this replica ends
                no dead replica's replies).
        """
        if self.address is not None:
            return
        self.address = address
        self._handler = handler
        self.send_to = send_to
        self._wake = asyncio.Event()
        works = [self._heartbeat(), self._subscribe(), self._flusher()]
        if send_to is not None:
            works.append(self._sweeper())
        for work in works:
            self._tasks.append(asyncio.ensure_future(work))

    async def close(self) -> None:
        """Leave the fleet: last writes flushed, liveness key removed, connections closed."""
        tasks, self._tasks = self._tasks, []
        self._closing = True
        for _ in range(5):  # (a cancellation the Redis client swallows is asked again)
            pending = [t for t in tasks if not t.done()]
            if not pending:
                break
            for t in pending:
                t.cancel()
            await asyncio.wait(pending, timeout=0.5)
        if self.address is not None:
            with contextlib.suppress(Exception):
                await self._flush_once()
            pipe = self.redis.pipeline(transaction=False)
            pipe.delete(self.key("replica", self.replica), self.key("open", self.replica))
            pipe.srem(self.key("replicas"), self.replica)
            await self.bounded(pipe.execute(), None)
        for client in (self.redis, self._sub_client):
            with contextlib.suppress(Exception):
                await client.aclose()

    # -- questions and holders ------------------------------------------------------------------
    async def claim(self, sender: str, msg_id: str) -> bool:
        """Whether this replica answers question ``msg_id`` from ``sender``: True when it took
        the claim (or Redis did not answer in time), False when another replica holds it.

        Args:
            sender: the asker's address.
            msg_id: the question's msg_id.
        """
        key = self.key("q", sender, msg_id)
        took = await self.bounded(
            self.redis.set(key, self.replica, nx=True, ex=self.claim_ttl), True
        )
        if took:
            return True
        holder = await self.bounded(self.redis.get(key), None)
        return holder is not None and _text(holder) == self.replica

    async def holder(self, sender: str, conversation: str) -> str | None:
        """The replica that took ``conversation`` (a question's msg_id) from ``sender``.

        Args:
            sender: the asker's address.
            conversation: the question's msg_id.

        Returns:
            The replica's id, or None (no claim, or Redis did not answer).
        """
        raw = await self.bounded(self.redis.get(self.key("q", sender, conversation)), None)
        return None if raw is None else _text(raw)

    async def alive(self, replica: str) -> bool:
        """Whether ``replica`` refreshed its liveness key lately (False when Redis is down).

        Args:
            replica: the replica's id.
        """
        if not _short(replica, _MAX_ID):
            return False
        found = await self.bounded(self.redis.exists(self.key("replica", replica)), 0)
        return bool(found)

    # -- forwarding -----------------------------------------------------------------------------
    def forward_ack(self, sender: str, key: str) -> None:
        """Publish an acknowledgement none of this replica's replies waits for (to all).

        Args:
            sender: the acknowledging asker's address.
            key: the acknowledged msg_id.
        """
        self._publish({"to": "*", "kind": "ack", "sender": sender, "key": key})

    async def route(self, sender: str, op: Mapping[str, str], send: Send) -> str:
        """Handle a ``resend``/``cancel`` op for a reply this replica does not hold: forward it
        to its live holder, else serve a ``resend`` from the reply's mirror. Returns what was
        done: ``"forwarded"``, ``"replayed"`` or ``"ignored"``.

        Args:
            sender: the asker's address.
            op: the asker's op (``op``, ``conversation``, and for a resend ``from`` and ``to``).
            send: delivers one ChatMessage to ``sender`` (for a replayed resend).
        """
        conv = op.get("conversation", "")
        clean = {k: v for k, v in op.items() if _short(k, _MAX_OP_VALUE)}
        if (
            not _short(conv, _MAX_OP_VALUE)
            or len(clean) > _MAX_OP_FIELDS
            or not all(_short(v, _MAX_OP_VALUE) for v in clean.values())
        ):
            return "ignored"
        holder = await self.holder(sender, conv)
        if holder is not None and holder != self.replica and await self.alive(holder):
            self._publish({"to": holder, "kind": "op", "sender": sender, "op": clean})
            return "forwarded"
        if op.get("op") != OP_RESEND:
            LOG.debug("%s op for %r: no live replica holds it", op.get("op"), conv[:80])
            return "ignored"
        lo, hi = _number(op.get("from")), _number(op.get("to"))
        if lo is None:
            return "ignored"
        chats = await self.mirrored(sender, conv, lo, hi)
        for chat in chats:
            await send(chat)
        return "replayed" if chats else "ignored"

    # -- replay mirrors -------------------------------------------------------------------------
    def mirror(
        self, peer: str, conversation: str, chat: ChatMessage, *, session: bool = False
    ) -> None:
        """Keep ``chat`` (one of a reply's numbered ChatMessages) in the reply's mirror; written
        with the next batch. A ChatMessage sent again is not written again.

        Args:
            peer: the asker's address.
            conversation: the question's msg_id.
            chat: the ChatMessage sent (one without a sequence number is not kept).
            session: the reply's last ChatMessage is to end the chat session (its question
                opened one): if a replica ends the reply ``lost``, its end does too.
        """
        span = seq_span(chat)
        if span is None or self.address is None:
            return
        ref = (peer, conversation)
        key = self.key("replay", peer, conversation)
        m = self._mirrors.get(ref)
        if m is None:
            m = self._mirrors[ref] = _Mirror()
            self.command("sadd", self.key("open", self.replica), open_entry(peer, conversation))
            while len(self._mirrors) > _MAX_REPLIES_TRACKED:
                self._mirrors.popitem(last=False)
        if session and not m.session:
            m.session = True
            self.command("hset", key, SESSION_FIELD, "1")
        if span[0] in m.kept:
            return
        raw = chat.json()
        if len(raw) > _MAX_CHAT_BYTES:
            return
        m.kept.add(span[0])
        m.firsts.append(span[0])
        self.command("hset", key, str(span[0]), f"{span[1]}:{raw}")
        if len(m.firsts) > self.policy.replay_count:
            old = m.firsts.popleft()
            m.kept.discard(old)
            self.command("hdel", key, str(old))
        self.command("expire", key, max(1, int(self.policy.replay_linger)))

    def mirror_ended(self, peer: str, conversation: str) -> None:
        """A reply ended: its mirror expires ``replay_linger`` seconds from now.

        Args:
            peer: the asker's address.
            conversation: the question's msg_id.
        """
        if self._mirrors.pop((peer, conversation), None) is not None:
            key = self.key("replay", peer, conversation)
            self.command("expire", key, max(1, int(self.policy.replay_linger)))
        if self.address is not None:  # (also when no longer tracked here: it is over)
            self.command("srem", self.key("open", self.replica), open_entry(peer, conversation))

    # -- dead replicas' replies -----------------------------------------------------------------
    async def sweep(self) -> int:
        """End, for their askers, open replies of replicas found dead: at most a few per call,
        each once in the fleet, never a live replica's (:func:`._lost.sweep`). Runs every
        second once started with ``send_to``. Returns how many this call ended."""
        return await sweep(self)

    async def mirrored(
        self, peer: str, conversation: str, lo: int, hi: int | None = None
    ) -> list[ChatMessage]:
        """The mirrored ChatMessages of a reply overlapping ``lo``..``hi``, in order.

        Args:
            peer: the asker's address.
            conversation: the question's msg_id.
            lo: the first sequence number wanted.
            hi: the last one (None: to the end).
        """
        raw = await self.bounded(self.redis.hgetall(self.key("replay", peer, conversation)), None)
        if not isinstance(raw, dict):
            return []
        top = hi if hi is not None else float("inf")
        found: list[tuple[int, ChatMessage]] = []
        numbered = ((_number(_text(k)), v) for k, v in raw.items())
        kept = [(first, v) for first, v in numbered if first is not None]
        for first, v in kept[: self.policy.replay_count]:
            last_text, _, body = _text(v).partition(":")
            last = _number(last_text)
            if last is None or not (last >= lo and first <= top):
                continue
            try:
                found.append((first, ChatMessage.parse_raw(body)))
            except Exception:  # a damaged entry is skipped, not served
                continue
        return [chat for _, chat in sorted(found, key=lambda p: p[0])]

    # -- the store interface: this class and the sweep (._lost) use Redis only through it ----
    def key(self, *parts: str) -> str:
        """The Redis key of ``parts`` under this fleet's prefix."""
        return ":".join(("agent_stream:fleet", self.address or "", *parts))

    def _publish(self, obj: dict[str, Any]) -> None:
        obj["from"] = self.replica
        self.forwarded += 1
        self.command("publish", self.key("channel"), json.dumps(obj, separators=(",", ":")))

    def command(self, name: str, *args: Any) -> None:
        """Queue a Redis write (``name`` and its arguments), sent in the next pipelined flush;
        the oldest is dropped when Redis is far behind."""
        self._outbox.append((name, args))
        if len(self._outbox) > _MAX_OUTBOX:
            self._outbox.popleft()
            self._log.warning("fleet: Redis writes are behind; the oldest was dropped")
        if self._wake is not None:
            self._wake.set()

    async def bounded(self, call: Awaitable[T], default: T) -> T:
        """``call``, or ``default`` when Redis fails or takes over ``timeout`` seconds; for
        ``QUIET`` seconds after a failure, ``default`` at once (a hanging Redis must not cost
        every question a timeout)."""
        if self.clock.now() < self._quiet_until:
            if asyncio.iscoroutine(call):
                call.close()
            return default
        try:
            return await asyncio.wait_for(call, self.timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._quiet_until = self.clock.now() + self.QUIET
            self.degraded += 1
            self._log.warning("fleet: Redis did not answer (%s); acting alone", _why(exc))
            return default

    async def _flush_once(self) -> None:
        while self._outbox:
            batch = [self._outbox.popleft() for _ in range(min(_BATCH, len(self._outbox)))]
            pipe = self.redis.pipeline(transaction=False)
            for name, args in batch:
                getattr(pipe, name)(*args)
            await self.bounded(pipe.execute(), None)

    async def _flusher(self) -> None:
        assert self._wake is not None
        while not self._closing:
            await self._wake.wait()
            self._wake.clear()
            await self._flush_once()
            await self.clock.sleep(_FLUSH_EVERY)  # what arrives meanwhile goes in one batch

    async def _heartbeat(self) -> None:
        key = self.key("replica", self.replica)
        open_key = self.key("open", self.replica)
        keep = max(_ALIVE_TTL * 4, int(self.policy.replay_linger))  # long enough to be swept
        while not self._closing:
            pipe = self.redis.pipeline(transaction=False)
            pipe.set(key, "1", ex=_ALIVE_TTL)
            pipe.sadd(self.key("replicas"), self.replica)
            pipe.expire(open_key, keep)
            await self.bounded(pipe.execute(), None)
            await self.clock.sleep(_HEARTBEAT)

    async def _sweeper(self) -> None:
        while not self._closing:
            await self.clock.sleep(_SWEEP_EVERY)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one bad sweep must not end the next ones
                self._log.warning("fleet: a sweep of dead replicas failed: %s", _why(exc))

    async def _subscribe(self) -> None:
        channel = self.key("channel")
        while not self._closing:
            pubsub = self._sub_client.pubsub()
            try:
                await asyncio.wait_for(pubsub.subscribe(channel), self.timeout * 4)
                self.subscribed.set()
                while not self._closing:
                    msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if msg is not None:
                        self._receive(msg.get("data"))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.subscribed.clear()
                self.degraded += 1
                self._log.warning("fleet: subscription lost (%s); retrying", _why(exc))
                await asyncio.sleep(1.0)
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(pubsub.aclose(), self.timeout)

    def _receive(self, data: Any) -> None:
        fwd = parse_forwarded(data, self.replica)
        if fwd is None:
            if not _own(data, self.replica):
                self.refused += 1
                LOG.debug("fleet: a pub/sub message was refused (malformed or not for us)")
            return
        if self._handler is None:
            return
        self.received += 1
        try:
            self._handler(fwd)
        except Exception as exc:  # one bad message must not end the subscription
            self._log.warning("fleet: a forwarded %s failed: %s", fwd.kind, _why(exc))


def _own(data: Any, me: str) -> bool:
    """Whether ``data`` is a well-formed message this replica published, or one addressed to
    another replica (neither is refused, both are ignored)."""
    obj = _message_object(data)
    if obj is None:
        return False
    to = obj.get("to")
    return obj.get("from") == me or (_short(to, _MAX_ID) and to not in ("*", me))


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)


def _number(text: str | None) -> int | None:
    if text is None or not text.isascii() or not text.isdecimal() or len(text) > 18:
        return None
    return int(text)


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:200] if str(exc) else type(exc).__name__
