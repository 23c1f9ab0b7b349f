"""Conversation memory: the turns of each chat session, per (sender, session), bounded.

A chat-protocol peer (ASI:One, Agentverse chat, another agent) asks each new question of a
conversation as a new ChatMessage in the same envelope session. The plugin keeps that session's
turns here and gives them to the responder as ``request.history``.

:class:`SessionStore` is the small interface a store implements (``load``, ``append``,
``forget``, ``close``); three come with the library:

- :class:`MemorySessionStore` (the default): in this process, gone with it;
- :class:`SqliteSessionStore` (``sqlite:PATH``): stdlib ``sqlite3`` in WAL mode, one
  transaction per append, so a turn is stored whole or not at all and survives ``kill -9``;
- :class:`RedisSessionStore` (``redis://...``): one JSON value per session written in a
  ``WATCH``/``MULTI`` transaction, idle expiry as the key's TTL.

Every store keeps to :class:`SessionLimits`: past a per-session cap the oldest turns go first
(with a warning), past the per-sender or total session caps the least recently used session is
forgotten, and a session idle longer than ``idle_expiry`` is forgotten.
:func:`open_store` builds one from its spec (``memory``, ``sqlite:PATH``, ``redis://...``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from agent_stream.conversation import Role, Turn
from agent_stream.uagents._ratelog import RateLimitedLog

__all__ = [
    "MemorySessionStore",
    "RedisSessionStore",
    "SessionKey",
    "SessionLimits",
    "SessionStore",
    "SqliteSessionStore",
    "open_store",
]

LOG = logging.getLogger("agent_stream.uagents")
SessionKey = tuple[str, str]  # (sender address, session id)
TURN_OVERHEAD = 160  # bytes a stored turn costs beyond its text (object, role, bookkeeping)
SESSION_OVERHEAD = 1024  # bytes a session costs beyond its turns (its key, entry, counters)


@dataclass(frozen=True)
class SessionLimits:
    """What conversation memory may hold (every store keeps to it).

    Attributes:
        max_turns: turns kept per session (the oldest go first).
        max_session_bytes: their text, UTF-8, per session (the oldest turns go first).
        max_sessions_per_sender: sessions kept per sender (the least recently used goes).
        max_sessions: sessions kept in all (the least recently used goes).
        idle_expiry: seconds after which an unused session is forgotten.
    """

    max_turns: int = 64
    max_session_bytes: int = 64 * 1024
    max_sessions_per_sender: int = 16
    max_sessions: int = 1024
    idle_expiry: float = 3600.0

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_session_bytes", "max_sessions_per_sender", "max_sessions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SessionLimits.{name} must be an integer >= 1, got {value!r}")
        if not 0 < self.idle_expiry < float("inf"):
            raise ValueError(
                f"SessionLimits.idle_expiry must be a positive number of seconds, "
                f"got {self.idle_expiry!r}"
            )

    def bound(self) -> int:
        """Bytes of turns a store may hold in all: what the memory store's size stays under."""
        per_session = self.max_session_bytes + self.max_turns * TURN_OVERHEAD + SESSION_OVERHEAD
        return self.max_sessions * per_session


class SessionStore(Protocol):
    """Where conversation turns are kept. Implement it for another database."""

    async def load(self, key: SessionKey) -> tuple[Turn, ...]:
        """The session's turns, oldest first (empty for an unknown or expired session).

        Args:
            key: the session: (peer address, session id).
        """
        ...

    async def append(self, key: SessionKey, turns: Sequence[Turn]) -> None:
        """Add ``turns`` to the session: all of them or, on failure, none.

        Args:
            key: the session: (peer address, session id).
            turns: the turns to add, oldest first.
        """
        ...

    async def forget(self, key: SessionKey) -> None:
        """Forget the session (its peer ended it).

        Args:
            key: the session: (peer address, session id).
        """
        ...

    async def close(self) -> None:
        """Release what the store holds open."""
        ...


def _trim(turns: list[Turn], limits: SessionLimits) -> int:
    """Drop the oldest turns until ``turns`` fits the per-session caps; how many went."""
    size = sum(t.size() for t in turns)
    dropped = 0
    while turns and (len(turns) > limits.max_turns or size > limits.max_session_bytes):
        size -= turns.pop(0).size()
        dropped += 1
    return dropped


class _Warn:
    def __init__(self) -> None:
        self._log = RateLimitedLog(LOG, 5, 10.0)

    def trimmed(self, key: SessionKey, dropped: int, limits: SessionLimits) -> None:
        self._log.warning(
            "session %s of %s: %d oldest turns forgotten (at most %d turns, %d bytes per session)",
            key[1][:36],
            key[0][:24],
            dropped,
            limits.max_turns,
            limits.max_session_bytes,
        )

    def evicted(self, key: SessionKey, why: str) -> None:
        self._log.warning("session %s of %s forgotten: %s", key[1][:36], key[0][:24], why)


def _turns_to_json(turns: Sequence[Turn]) -> str:
    return json.dumps([[t.role, t.text] for t in turns], ensure_ascii=False)


def _turns_from_json(raw: str | bytes) -> list[Turn]:
    return [Turn(cast(Role, role), text) for role, text in json.loads(raw)]


class _Session:
    __slots__ = ("size", "turns", "used")

    def __init__(self, used: float) -> None:
        self.turns: list[Turn] = []
        self.size = 0
        self.used = used


class MemorySessionStore:
    """Sessions in this process's memory (the default store), within :class:`SessionLimits`.

    Args:
        limits: the sessions' bounds (None: the defaults).
        clock: the time in seconds, for idle expiry (a test passes its own).
    """

    def __init__(
        self, limits: SessionLimits | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits or SessionLimits()
        self._clock = clock
        self._sessions: OrderedDict[SessionKey, _Session] = OrderedDict()  # LRU first
        self._per_sender: dict[str, int] = {}
        self._warn = _Warn()

    @property
    def sessions(self) -> int:
        """Sessions held now."""
        return len(self._sessions)

    async def load(self, key: SessionKey) -> tuple[Turn, ...]:
        """The session's turns, oldest first (empty for an unknown or expired session).

        Args:
            key: the session: (peer address, session id).
        """
        self._expire(self._clock())
        session = self._sessions.get(key)
        return tuple(session.turns) if session is not None else ()

    async def append(self, key: SessionKey, turns: Sequence[Turn]) -> None:
        """Add ``turns`` to the session, within the limits (the oldest turns, least recently used
        sessions go).

        Args:
            key: the session: (peer address, session id).
            turns: the turns to add, oldest first.
        """
        now = self._clock()
        self._expire(now)
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = _Session(now)
            self._per_sender[key[0]] = self._per_sender.get(key[0], 0) + 1
            self._evict(key)
        self._sessions.move_to_end(key)
        session.used = now
        session.turns.extend(turns)
        dropped = _trim(session.turns, self.limits)
        if dropped:
            self._warn.trimmed(key, dropped, self.limits)
        session.size = sum(t.size() for t in session.turns)

    async def forget(self, key: SessionKey) -> None:
        """Forget the session (its peer ended it).

        Args:
            key: the session: (peer address, session id).
        """
        if self._sessions.pop(key, None) is not None:
            self._release(key[0])

    async def close(self) -> None:
        self._sessions.clear()
        self._per_sender.clear()

    def _evict(self, new: SessionKey) -> None:
        limits = self.limits
        if self._per_sender[new[0]] > limits.max_sessions_per_sender:
            oldest = next(k for k in self._sessions if k[0] == new[0])
            self._sessions.pop(oldest)
            self._release(oldest[0])
            self._warn.evicted(
                oldest, f"over {limits.max_sessions_per_sender} sessions of one sender"
            )
        while len(self._sessions) > limits.max_sessions:
            oldest, _ = self._sessions.popitem(last=False)
            self._release(oldest[0])
            self._warn.evicted(oldest, f"over {limits.max_sessions} sessions in all")

    def _expire(self, now: float) -> None:
        idle = self.limits.idle_expiry
        while self._sessions:
            key, session = next(iter(self._sessions.items()))
            if now - session.used < idle:
                return
            self._sessions.popitem(last=False)
            self._release(key[0])

    def _release(self, sender: str) -> None:
        left = self._per_sender.get(sender, 1) - 1
        if left > 0:
            self._per_sender[sender] = left
        else:
            self._per_sender.pop(sender, None)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    sender TEXT NOT NULL, session TEXT NOT NULL, used REAL NOT NULL, turns TEXT NOT NULL,
    PRIMARY KEY (sender, session));
CREATE INDEX IF NOT EXISTS sessions_used ON sessions (used);
CREATE INDEX IF NOT EXISTS sessions_sender ON sessions (sender, used);
"""


def _private_file(path: Path) -> None:
    """Create ``path`` readable by its owner only (0600, whatever the umask), or make an
    existing one and its ``-wal`` / ``-shm`` so: it holds senders' addresses, sessions and turns.
    SQLite gives the ``-wal`` and ``-shm`` files it creates the database file's mode."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            if file.stat().st_mode & 0o077:
                os.chmod(file, 0o600)


class SqliteSessionStore:
    """Sessions in an SQLite file (WAL).

    They outlive the agent's process; a turn is stored whole or not at all. Calls run in a
    worker thread, one at a time.

    Args:
        path: the database file (created when missing).
        limits: the sessions' bounds (None: the defaults).
        clock: the wall-clock time in seconds, for idle expiry (a test passes its own).
    """

    def __init__(
        self,
        path: str | Path,
        limits: SessionLimits | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limits = limits or SessionLimits()
        self.path = Path(path)
        self._clock = clock
        self._lock = asyncio.Lock()
        self._warn = _Warn()
        _private_file(self.path)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    async def _run(self, fn: Callable[[], Any]) -> Any:
        async with self._lock:
            return await asyncio.to_thread(fn)

    async def load(self, key: SessionKey) -> tuple[Turn, ...]:
        """The session's turns, oldest first (empty for an unknown or expired session).

        Args:
            key: the session: (peer address, session id).
        """

        def work() -> tuple[Turn, ...]:
            row = self._db.execute(
                "SELECT used, turns FROM sessions WHERE sender=? AND session=?", key
            ).fetchone()
            if row is None or self._clock() - row[0] >= self.limits.idle_expiry:
                return ()
            return tuple(_turns_from_json(row[1]))

        return cast(tuple[Turn, ...], await self._run(work))

    async def append(self, key: SessionKey, turns: Sequence[Turn]) -> None:
        """Add ``turns`` to the session, within the limits (oldest turns and sessions go first).

        Args:
            key: the session: (peer address, session id).
            turns: the turns to add, oldest first.
        """
        limits = self.limits

        def work() -> tuple[int, list[SessionKey]]:
            now = self._clock()
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM sessions WHERE used < ?", (now - limits.idle_expiry,))
                row = db.execute(
                    "SELECT turns FROM sessions WHERE sender=? AND session=?", key
                ).fetchone()
                kept = _turns_from_json(row[0]) if row is not None else []
                kept.extend(turns)
                dropped = _trim(kept, limits)
                db.execute(
                    "INSERT OR REPLACE INTO sessions (sender, session, used, turns) "
                    "VALUES (?, ?, ?, ?)",
                    (*key, now, _turns_to_json(kept)),
                )
                evicted = self._evict(db, key)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return dropped, evicted

        dropped, evicted = await self._run(work)
        if dropped:
            self._warn.trimmed(key, dropped, limits)
        for old in evicted:
            self._warn.evicted(old, "over the session caps")

    def _evict(self, db: sqlite3.Connection, key: SessionKey) -> list[SessionKey]:
        limits = self.limits
        gone: list[SessionKey] = []
        rows = db.execute(
            "SELECT sender, session FROM sessions WHERE sender=? ORDER BY used "
            "DESC LIMIT -1 OFFSET ?",
            (key[0], limits.max_sessions_per_sender),
        )
        gone.extend((r[0], r[1]) for r in rows.fetchall())
        rows = db.execute(
            "SELECT sender, session FROM sessions ORDER BY used DESC LIMIT -1 OFFSET ?",
            (limits.max_sessions,),
        )
        gone.extend((r[0], r[1]) for r in rows.fetchall() if (r[0], r[1]) not in gone)
        db.executemany("DELETE FROM sessions WHERE sender=? AND session=?", gone)
        return gone

    async def forget(self, key: SessionKey) -> None:
        """Forget the session (its peer ended it).

        Args:
            key: the session: (peer address, session id).
        """
        await self._run(
            lambda: self._db.execute("DELETE FROM sessions WHERE sender=? AND session=?", key)
        )

    async def close(self) -> None:
        await self._run(self._db.close)


class RedisSessionStore:
    """Sessions in Redis (the server the gateway's resume store may share).

    One JSON value per session, written in a WATCH/MULTI transaction; idle expiry is the key's
    TTL.

    Args:
        url: the server's URL (``redis://...`` or ``rediss://...``).
        limits: the sessions' bounds (None: the defaults).
        prefix: the prefix of this store's keys.

    Raises:
        ImportError: the redis package is not installed.
    """

    def __init__(
        self,
        url: str,
        limits: SessionLimits | None = None,
        *,
        prefix: str = "agent_stream:sessions",
    ) -> None:
        try:
            import redis.asyncio as aioredis
        except ImportError:  # pragma: no cover - the gateway extra brings it
            raise ImportError(
                "--sessions redis://... needs the redis package: "
                "pip install 'agent-stream[gateway]'"
            ) from None
        self.limits = limits or SessionLimits()
        self._redis = aioredis.from_url(url)
        self._prefix = prefix
        self._warn = _Warn()

    def _key(self, key: SessionKey) -> str:
        return f"{self._prefix}:s:{key[0]}:{key[1]}"

    def _index(self, sender: str | None = None) -> str:
        return f"{self._prefix}:by:{sender}" if sender else f"{self._prefix}:all"

    async def load(self, key: SessionKey) -> tuple[Turn, ...]:
        """The session's turns, oldest first (empty for an unknown or expired session).

        Args:
            key: the session: (peer address, session id).
        """
        raw = await self._redis.get(self._key(key))
        return tuple(_turns_from_json(raw)) if raw is not None else ()

    async def append(self, key: SessionKey, turns: Sequence[Turn]) -> None:
        """Add ``turns`` to the session, within the limits (oldest turns and sessions go first).

        Args:
            key: the session: (peer address, session id).
            turns: the turns to add, oldest first.
        """
        from redis.exceptions import WatchError

        limits = self.limits
        name = self._key(key)
        ttl = max(1, int(limits.idle_expiry))
        member = json.dumps(list(key))
        for _ in range(16):  # a concurrent write to the same session: read it again
            async with self._redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(name)
                    raw = await pipe.get(name)
                    kept = _turns_from_json(raw) if raw is not None else []
                    kept.extend(turns)
                    dropped = _trim(kept, limits)
                    now = time.time()
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.set(name, _turns_to_json(kept), ex=ttl)
                    pipe.zadd(self._index(key[0]), {member: now})
                    pipe.zadd(self._index(), {member: now})
                    pipe.expire(self._index(key[0]), ttl)
                    await pipe.execute()
                    break
                except WatchError:
                    continue
        else:
            raise RuntimeError(f"session {key[1]!r}: could not store the turn (contention)")
        if dropped:
            self._warn.trimmed(key, dropped, limits)
        await self._evict(key[0])

    async def _evict(self, sender: str) -> None:
        limits = self.limits
        cutoff = time.time() - limits.idle_expiry
        for index in (self._index(sender), self._index()):
            await self._redis.zremrangebyscore(index, "-inf", cutoff)
        over_sender = await self._redis.zrange(
            self._index(sender), 0, -limits.max_sessions_per_sender - 1
        )
        over_all = await self._redis.zrange(self._index(), 0, -limits.max_sessions - 1)
        for member in {*over_sender, *over_all}:
            old = tuple(json.loads(member))
            await self._forget_member(cast(SessionKey, old), member)
            self._warn.evicted(cast(SessionKey, old), "over the session caps")

    async def _forget_member(self, key: SessionKey, member: Any) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(key))
            pipe.zrem(self._index(key[0]), member)
            pipe.zrem(self._index(), member)
            await pipe.execute()

    async def forget(self, key: SessionKey) -> None:
        """Forget the session (its peer ended it).

        Args:
            key: the session: (peer address, session id).
        """
        await self._forget_member(key, json.dumps(list(key)))

    async def close(self) -> None:
        await self._redis.aclose()


def open_store(spec: str, limits: SessionLimits | None = None) -> SessionStore:
    """A store from its spec: ``memory``, ``sqlite:PATH`` or ``redis://...`` (``rediss://``).

    Args:
        spec: the store's spec, as ``--sessions`` takes it.
        limits: the sessions' bounds (None: the defaults).

    Returns:
        The store.

    Raises:
        ValueError: ``spec`` is none of the forms, or its sqlite file's directory is missing.
    """
    if spec == "memory":
        return MemorySessionStore(limits)
    if spec.startswith("sqlite:"):
        path = spec[len("sqlite:") :]
        if not path:
            raise ValueError("--sessions sqlite:PATH needs a file path")
        parent = Path(path).expanduser().resolve().parent
        if not parent.is_dir():
            raise ValueError(f"--sessions {spec}: directory {parent} does not exist")
        try:
            return SqliteSessionStore(Path(path).expanduser(), limits)
        except sqlite3.Error as exc:
            raise ValueError(f"--sessions {spec}: {exc}") from None
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisSessionStore(spec, limits)
    raise ValueError(
        f"unknown session store {spec!r}: expected memory, sqlite:PATH or redis://HOST:PORT/DB"
    )
