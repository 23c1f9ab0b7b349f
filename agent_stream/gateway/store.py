"""The resume store: every reply's Messages, kept so a reader can start (or start again) anywhere.

A reply is a log of entries (JSON text): its Messages as the agent sent them, then one end entry
``{"end": {"status": ..., "error": ...}}``. Readers re-encode the log in their own wire, so the
store knows nothing of wires and one log serves every format. The gateway process that asks the
agent writes the log; any process sharing the store can read it (Redis), so a load balancer may
send a reconnecting client anywhere.

Bounds of the in-process store (:class:`MemoryStore`), all documented defaults:

- one reply's log: at most ``max_entries`` entries (50,000) and ``max_reply_bytes`` (16 MiB);
  an append past either raises :class:`StoreFull` (the gateway then ends the reply with an
  error rather than keep an unbounded log);
- all logs together: ``max_bytes`` (256 MiB); past it the oldest *finished* logs are evicted, and
  when nothing is left to evict a new reply is refused (:class:`StoreFull`, HTTP 503);
- a finished log is kept ``window`` seconds after its end, then dropped; an open one is dropped
  ``window`` seconds after the gateway gives it up (:meth:`ResumeStore.drop`).
"""

from __future__ import annotations

import heapq
import json
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from agent_stream.uagents._wakeup import Wakeup

__all__ = [
    "END_KEY",
    "MemoryStore",
    "ResumeStore",
    "StoreFull",
    "end_entry",
    "entries_of",
    "parse_end",
]

END_KEY = "end"
READ_BATCH = 512  # entries in one batch of a read (as one Redis read returns at most)


class StoreFull(RuntimeError):
    """A log (or the store) is at its bound."""

    @classmethod
    def reply_over(cls, reply_id: str, max_entries: int, max_reply_bytes: int) -> StoreFull:
        """The error of a reply whose log would go over its bounds.

        Args:
            reply_id: the reply's id.
            max_entries: the bound on its entries.
            max_reply_bytes: the bound on its bytes.
        """
        return cls(
            f"reply {reply_id} is over the resume buffer's bound "
            f"({max_entries} entries, {max_reply_bytes} bytes)"
        )


def end_entry(status: str, error: str | None = None) -> str:
    """The last entry of a log.

    Args:
        status: the reply's final status.
        error: its error text (None: none).
    """
    return json.dumps({END_KEY: {"status": status, "error": error}})


def parse_end(entry: str) -> dict[str, Any] | None:
    """The end entry's ``{"status", "error"}``, or None for a Message entry.

    Args:
        entry: a log entry.
    """
    if not entry.startswith('{"end"'):
        return None
    data = json.loads(entry)
    end = data.get(END_KEY)
    return end if isinstance(end, dict) else None


async def entries_of(batches: AsyncIterator[list[str]]) -> AsyncIterator[str]:
    """The entries of :meth:`ResumeStore.read_batches`, one by one (an empty batch: "").

    Args:
        batches: the batches.
    """
    async for batch in batches:
        if not batch:
            yield ""
        for entry in batch:
            yield entry


class ResumeStore(Protocol):
    """Where reply logs live. One writer per reply; any number of readers, in any process.

    The stores subclass it: :meth:`read` is :meth:`read_batches` entry by entry, for them all.
    """

    async def create(self, reply_id: str, meta: dict[str, Any]) -> None:
        """Open a log with its metadata (agent, format, encoder options, ...).

        Args:
            reply_id: the reply's id.
            meta: the metadata, JSON-serialisable.

        Raises:
            StoreFull: the store cannot take another reply.
        """

    async def meta(self, reply_id: str) -> dict[str, Any] | None:
        """The reply's metadata (None: unknown or expired).

        Args:
            reply_id: the reply's id.
        """

    async def append(self, reply_id: str, entries: list[str]) -> None:
        """Add entries (Message JSON, or the end entry last).

        Args:
            reply_id: the reply's id.
            entries: the entries, in order.

        Raises:
            StoreFull: the log would go over its bounds.
        """

    def read(
        self, reply_id: str, start: int = 0, *, idle: float | None = None
    ) -> AsyncIterator[str]:
        """Entries from index ``start`` on, live until the end entry (included).

        Args:
            reply_id: the reply's id.
            start: the index of the first entry to read.
            idle: when given, an empty string after each ``idle`` seconds without a new entry
                (the reader's cue for a keepalive).

        Yields:
            The entries, as they are appended.
        """
        return entries_of(self.read_batches(reply_id, start, idle=idle))

    def read_batches(
        self, reply_id: str, start: int = 0, *, idle: float | None = None
    ) -> AsyncIterator[list[str]]:
        """:meth:`read`, as the entries come: each batch is all that was there to read at
        once (an empty batch after each ``idle`` seconds without a new entry), so a reader
        can write one batch to its client in one write.

        Args:
            reply_id: the reply's id.
            start: the index of the first entry to read.
            idle: when given, an empty batch after each ``idle`` seconds without a new entry.

        Yields:
            Batches of entries, in order; the end entry is the last one's last.
        """

    async def ended(self, reply_id: str) -> bool:
        """Whether the log has its end entry (True for an unknown reply).

        Args:
            reply_id: the reply's id.
        """

    async def alias(self, name: str, reply_id: str) -> None:
        """Let ``name`` (a run id, a chat id, a completion id) find the reply.

        Args:
            name: the alias.
            reply_id: the reply's id.
        """

    async def resolve(self, name: str) -> str | None:
        """The reply id of a reply id or of an alias (None: unknown).

        Args:
            name: a reply id or an alias.
        """

    async def readers(self, reply_id: str, change: int = 0) -> int:
        """Add ``change`` to the count of attached readers (in every process); the count.

        Args:
            reply_id: the reply's id.
            change: +1 a reader attached, -1 one left, 0 only ask.
        """

    async def drop(self, reply_id: str, after: float) -> None:
        """Forget the log ``after`` seconds from now.

        Args:
            reply_id: the reply's id.
            after: seconds to keep it.
        """

    async def close(self) -> None:
        """Release connections."""


class _Log:
    __slots__ = ("aliases", "bytes", "changed", "drop_at", "ended", "entries", "meta", "readers")

    def __init__(self, meta: dict[str, Any]) -> None:
        self.meta = meta
        self.entries: list[str] = []
        self.bytes = 0
        self.ended = False
        self.readers = 0
        self.drop_at: float | None = None
        self.changed = Wakeup()
        self.aliases: list[str] = []


class MemoryStore(ResumeStore):
    """The in-process store (the default): bounded, see the module docstring.

    Args:
        max_entries: entries in one reply's log.
        max_reply_bytes: bytes of one reply's log.
        max_bytes: bytes of all logs together (past it the oldest finished logs are evicted).
    """

    def __init__(
        self,
        *,
        max_entries: int = 50_000,
        max_reply_bytes: int = 16 << 20,
        max_bytes: int = 256 << 20,
    ) -> None:
        self.max_entries = max_entries
        self.max_reply_bytes = max_reply_bytes
        self.max_bytes = max_bytes
        self._logs: dict[str, _Log] = {}
        self._aliases: dict[str, str] = {}
        self._bytes = 0
        self._drops: list[tuple[float, str]] = []  # (drop_at, reply_id), soonest first

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        self._expire()
        return len(self._logs)

    async def create(self, reply_id: str, meta: dict[str, Any]) -> None:
        """Open a log with its metadata (agent, format, encoder options, ...).

        Args:
            reply_id: the reply's id.
            meta: the metadata, JSON-serialisable.

        Raises:
            StoreFull: all logs together are at ``max_bytes`` and none can be evicted.
        """
        self._expire()
        if self._bytes >= self.max_bytes:
            self._evict(self._bytes - self.max_bytes + 1)
        if self._bytes >= self.max_bytes:
            raise StoreFull("the resume store is full")
        self._logs[reply_id] = _Log(dict(meta))

    async def meta(self, reply_id: str) -> dict[str, Any] | None:
        """The reply's metadata (None: unknown or expired).

        Args:
            reply_id: the reply's id.
        """
        log = self._get(reply_id)
        return dict(log.meta) if log is not None else None

    async def append(self, reply_id: str, entries: list[str]) -> None:
        """Add entries (Message JSON, or the end entry last).

        Args:
            reply_id: the reply's id.
            entries: the entries, in order.

        Raises:
            StoreFull: the log would go over its bounds.
        """
        log = self._logs.get(reply_id)
        if log is None or log.ended:
            return
        size = sum(len(e) for e in entries)
        if (
            len(log.entries) + len(entries) > self.max_entries
            or log.bytes + size > self.max_reply_bytes
        ):
            raise StoreFull.reply_over(reply_id, self.max_entries, self.max_reply_bytes)
        log.entries.extend(entries)
        log.bytes += size
        self._bytes += size
        if entries and parse_end(entries[-1]) is not None:
            log.ended = True
        log.changed.set()
        log.changed = Wakeup()
        if self._bytes > self.max_bytes:
            self._evict(self._bytes - self.max_bytes)

    async def read_batches(
        self, reply_id: str, start: int = 0, *, idle: float | None = None
    ) -> AsyncIterator[list[str]]:
        """Entries from index ``start`` on, live until the end entry (included), in batches:
        all that was appended since the last one.

        Args:
            reply_id: the reply's id.
            start: the index of the first entry to read.
            idle: when given, an empty batch after each ``idle`` seconds without a new entry.

        Yields:
            Batches of entries, as they are appended.
        """
        log = self._get(reply_id)
        if log is None:
            return
        i = max(0, start)
        while True:
            while i < len(log.entries):  # a long log (a resume) in bounded batches
                batch = log.entries[i : i + READ_BATCH]
                i += len(batch)
                yield batch
            if log.ended or self._logs.get(reply_id) is not log:
                return
            # the reader's own task sleeps (no task per wait): an entry appended reaches the
            # client in the loop's next turn, not after a hop through other tasks
            if not await log.changed.wait(idle) and i == len(log.entries):
                yield []

    async def ended(self, reply_id: str) -> bool:
        """Whether the log has its end entry (True for an unknown reply).

        Args:
            reply_id: the reply's id.
        """
        log = self._get(reply_id)
        return log is None or log.ended

    async def alias(self, name: str, reply_id: str) -> None:
        """Let ``name`` (a run id, a chat id, a completion id) find the reply.

        Args:
            name: the alias.
            reply_id: the reply's id.
        """
        log = self._logs.get(reply_id)
        if log is not None:
            self._aliases[name] = reply_id
            log.aliases.append(name)

    async def resolve(self, name: str) -> str | None:
        """The reply id of a reply id or of an alias (None: unknown).

        Args:
            name: a reply id or an alias.
        """
        self._expire()
        if name in self._logs:
            return name
        rid = self._aliases.get(name)
        return rid if rid is not None and rid in self._logs else None

    async def readers(self, reply_id: str, change: int = 0) -> int:
        """Add ``change`` to the count of attached readers (in every process); the count.

        Args:
            reply_id: the reply's id.
            change: +1 a reader attached, -1 one left, 0 only ask.
        """
        log = self._logs.get(reply_id)
        if log is None:
            return 0
        log.readers = max(0, log.readers + change)
        return log.readers

    async def drop(self, reply_id: str, after: float) -> None:
        """Forget the log ``after`` seconds from now.

        Args:
            reply_id: the reply's id.
            after: seconds to keep it.
        """
        log = self._logs.get(reply_id)
        if log is not None:
            log.drop_at = time.monotonic() + after
            heapq.heappush(self._drops, (log.drop_at, reply_id))

    async def close(self) -> None:
        for log in self._logs.values():
            log.ended = True
            log.changed.set()

    # -- internals --------------------------------------------------------------------------------
    def _get(self, reply_id: str) -> _Log | None:
        self._expire()
        return self._logs.get(reply_id)

    def _expire(self) -> None:
        """Forget the logs whose drop time passed: the soonest first, from a heap (every read
        of every reply asks, so a scan of all logs each time would cost the gateway its
        replies squared)."""
        now = time.monotonic()
        drops = self._drops
        while drops and drops[0][0] <= now:
            _, rid = heapq.heappop(drops)
            log = self._logs.get(rid)
            if log is not None and log.drop_at is not None and log.drop_at <= now:
                self._remove(rid)
        if len(drops) > 2 * len(self._logs) + 64:  # stale entries (dropped again, removed)
            self._drops = [(t, r) for t, r in drops if r in self._logs]
            heapq.heapify(self._drops)

    def _evict(self, need: int) -> None:
        for rid in [r for r, log in self._logs.items() if log.ended]:
            if need <= 0:
                return
            need -= self._logs[rid].bytes
            self._remove(rid)

    def _remove(self, reply_id: str) -> None:
        log = self._logs.pop(reply_id)
        self._bytes -= log.bytes
        for a in log.aliases:
            if self._aliases.get(a) == reply_id:
                del self._aliases[a]
        log.changed.set()
