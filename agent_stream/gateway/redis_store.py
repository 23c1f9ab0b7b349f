"""The resume store on Redis Streams: several gateway processes resume each other's replies.

Keys (prefix ``agent-stream:gw:``): ``log:<reply>``, a stream with one entry per log entry
(field ``e``); ``meta:<reply>``, a hash (``meta`` JSON, the reply's owner among it, so every
process refuses another caller alike; ``readers`` count across processes);
``alias:<name>``, the reply id of an alias. Every key expires: ``lifetime`` seconds after it is
made (a bound on a process that dies mid-reply), and ``window`` seconds after the reply ends.
Readers follow a live log with ``XREAD BLOCK``; a stop asked of one process reaches the process
running the reply on the ``cancel`` channel (pub/sub). Bounds per reply as in :class:`MemoryStore`
(``max_entries``, ``max_reply_bytes``); Redis's own ``maxmemory`` bounds the whole.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator
from typing import Any

from agent_stream.gateway.store import READ_BATCH, ResumeStore, StoreFull, parse_end

__all__ = ["RedisStore"]

PREFIX = "agent-stream:gw:"


class RedisStore(ResumeStore):
    """:class:`~agent_stream.gateway.store.ResumeStore` on a Redis server (``redis://...``).

    Args:
        url: the server's URL (``redis://...``).
        window: seconds a log is kept after its reply ends.
        lifetime: seconds any key lives after it is made (a bound on a process that dies
            mid-reply).
        max_entries: entries in one reply's log.
        max_reply_bytes: bytes of one reply's log.
        block_ms: milliseconds a live read waits on the server for new entries at a time.

    Raises:
        ImportError: the redis package is not installed.
    """

    def __init__(
        self,
        url: str,
        *,
        window: float = 60.0,
        lifetime: float = 3600.0,
        max_entries: int = 50_000,
        max_reply_bytes: int = 16 << 20,
        block_ms: int = 1000,
    ) -> None:
        try:
            import redis.asyncio as aioredis
        except ImportError as exc:
            raise ImportError(
                "--resume-store redis:// needs the 'redis' package: pip install "
                "'agent-stream[gateway]'"
            ) from exc
        self.url = url
        self.window = window
        self.lifetime = lifetime
        self.max_entries = max_entries
        self.max_reply_bytes = max_reply_bytes
        self.block_ms = block_ms
        self.redis: Any = aioredis.from_url(url, decode_responses=True)
        self._sizes: dict[str, tuple[int, int]] = {}  # logs written here: (entries, bytes)

    def _log(self, rid: str) -> str:
        return f"{PREFIX}log:{rid}"

    def _meta(self, rid: str) -> str:
        return f"{PREFIX}meta:{rid}"

    async def create(self, reply_id: str, meta: dict[str, Any]) -> None:
        """Open a log with its metadata (agent, format, encoder options, ...).

        Args:
            reply_id: the reply's id.
            meta: the metadata, JSON-serialisable.
        """
        ttl = math.ceil(self.lifetime)
        async with self.redis.pipeline(transaction=True) as p:
            p.hset(self._meta(reply_id), mapping={"meta": json.dumps(meta), "readers": 0})
            p.expire(self._meta(reply_id), ttl)
            await p.execute()
        self._sizes[reply_id] = (0, 0)

    async def meta(self, reply_id: str) -> dict[str, Any] | None:
        """The reply's metadata (None: unknown or expired).

        Args:
            reply_id: the reply's id.
        """
        raw = await self.redis.hget(self._meta(reply_id), "meta")
        return json.loads(raw) if raw else None

    async def append(self, reply_id: str, entries: list[str]) -> None:
        """Add entries (Message JSON, or the end entry last).

        Args:
            reply_id: the reply's id.
            entries: the entries, in order.

        Raises:
            StoreFull: the log would go over its bounds.
        """
        count, size = self._sizes.get(reply_id, (0, 0))
        count += len(entries)
        size += sum(len(e) for e in entries)
        if count > self.max_entries or size > self.max_reply_bytes:
            raise StoreFull.reply_over(reply_id, self.max_entries, self.max_reply_bytes)
        self._sizes[reply_id] = (count, size)
        key = self._log(reply_id)
        async with self.redis.pipeline(transaction=False) as p:
            for e in entries:
                p.xadd(key, {"e": e})
            if count == len(entries):
                p.expire(key, math.ceil(self.lifetime))
            await p.execute()

    async def read_batches(
        self, reply_id: str, start: int = 0, *, idle: float | None = None
    ) -> AsyncIterator[list[str]]:
        """Entries from index ``start`` on, live until the end entry (included), in batches:
        what one read of the stream returned.

        Args:
            reply_id: the reply's id.
            start: the index of the first entry to read.
            idle: when given, an empty batch after each ``idle`` seconds without a new entry.

        Yields:
            Batches of entries, as they are appended.
        """
        key = self._log(reply_id)
        last = "0-0"
        i = 0
        block = self.block_ms if idle is None else max(1, min(self.block_ms, int(idle * 1000)))
        quiet_since = time.monotonic()
        while True:
            got = await self.redis.xread({key: last}, count=READ_BATCH, block=block)
            if not got:
                if not await self.redis.exists(self._meta(reply_id)):
                    return  # expired or dropped
                if idle is not None and time.monotonic() - quiet_since >= idle:
                    quiet_since = time.monotonic()
                    yield []
                continue
            quiet_since = time.monotonic()
            batch: list[str] = []
            ended = False
            for _, items in got:
                for entry_id, fields in items:
                    last = entry_id
                    e = fields.get("e", "")
                    if i >= start:
                        batch.append(e)
                    i += 1
                    if parse_end(e) is not None:
                        ended = True
                        break
                if ended:
                    break
            if batch:
                yield batch
            if ended:
                return

    async def ended(self, reply_id: str) -> bool:
        """Whether the log has its end entry (True for an unknown reply).

        Args:
            reply_id: the reply's id.
        """
        tail = await self.redis.xrevrange(self._log(reply_id), count=1)
        if not tail:
            return not await self.redis.exists(self._meta(reply_id))
        return parse_end(tail[0][1].get("e", "")) is not None

    async def alias(self, name: str, reply_id: str) -> None:
        """Let ``name`` (a run id, a chat id, a completion id) find the reply.

        Args:
            name: the alias.
            reply_id: the reply's id.
        """
        await self.redis.set(f"{PREFIX}alias:{name}", reply_id, ex=math.ceil(self.lifetime))

    async def resolve(self, name: str) -> str | None:
        """The reply id of a reply id or of an alias (None: unknown).

        Args:
            name: a reply id or an alias.
        """
        if await self.redis.exists(self._meta(name)):
            return name
        rid = await self.redis.get(f"{PREFIX}alias:{name}")
        if rid and await self.redis.exists(self._meta(rid)):
            return str(rid)
        return None

    async def readers(self, reply_id: str, change: int = 0) -> int:
        """Add ``change`` to the count of attached readers (in every process); the count.

        Args:
            reply_id: the reply's id.
            change: +1 a reader attached, -1 one left, 0 only ask.
        """
        key = self._meta(reply_id)
        if change == 0:
            n = await self.redis.hget(key, "readers")
            return max(0, int(n or 0))
        if not await self.redis.exists(key):
            return 0
        return max(0, int(await self.redis.hincrby(key, "readers", change)))

    async def drop(self, reply_id: str, after: float) -> None:
        """Forget the log ``after`` seconds from now.

        Args:
            reply_id: the reply's id.
            after: seconds to keep it.
        """
        ttl = max(1, math.ceil(after))
        async with self.redis.pipeline(transaction=False) as p:
            p.expire(self._log(reply_id), ttl)
            p.expire(self._meta(reply_id), ttl)
            await p.execute()
        self._sizes.pop(reply_id, None)

    async def request_cancel(self, reply_id: str) -> None:
        """Ask whichever gateway process runs the reply to stop it.

        Args:
            reply_id: the reply's id.
        """
        await self.redis.publish(f"{PREFIX}cancel", reply_id)

    async def cancel_requests(self) -> AsyncIterator[str]:
        """Reply ids other processes asked to stop (runs until cancelled)."""
        pubsub = self.redis.pubsub()
        await pubsub.subscribe(f"{PREFIX}cancel")
        try:
            async for m in pubsub.listen():
                if m.get("type") == "message":
                    yield str(m["data"])
        finally:
            await pubsub.unsubscribe()
            await pubsub.aclose()

    async def close(self) -> None:
        await self.redis.aclose()
