"""Per-peer quotas for a StreamingChat's replies: which :class:`PeerQuota` a peer gets, and the
pace shared by every reply to it.

A peer gets ``PeerQuotas.agentverse`` when it is reached through Agentverse: listed in
``agentverse_peers``, or (``detect``) one of the endpoints its address resolves to is
Agentverse's mailbox or proxy (:func:`~agent_stream.adapters.chat.quota.is_agentverse_endpoint`);
otherwise ``PeerQuotas.default``. What a peer resolved to is kept ``ttl`` seconds (a reply
resolves its peer once, before its first send, while its responder already runs).

:class:`PeerPace` spaces one peer's sends: each starts at least ``1 / messages_per_second``
seconds after the previous one ended, in the order they asked (an ``asyncio.Lock`` is FIFO).
Everything is bounded (``max_peers``; idle entries go first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from agent_stream.adapters.chat.quota import AGENTVERSE_QUOTA, PeerQuota, is_agentverse_endpoint
from agent_stream.uagents._clock import LOOP_CLOCK, Clock

__all__ = ["PeerPace", "PeerQuotas", "PeerTerms", "QuotaBook"]

LOG = logging.getLogger("agent_stream.uagents")

Resolve = Callable[[str], Awaitable[list[str]]]


@dataclass(frozen=True)
class PeerQuotas:
    """What the replies to a peer may send it (see :class:`PeerQuota`).

    Attributes:
        default: every peer's quota (the default limits nothing).
        agentverse: the quota of a peer reached through Agentverse (mailbox or proxy): one
            ChatMessage a second, envelopes under 256 KiB, acknowledgements awaited 3 s.
        agentverse_peers: addresses treated as reached through Agentverse, whatever their
            endpoint.
        detect: a peer whose address resolves to an Agentverse endpoint (an ``agentverse.ai``
            host, or uagents' ``/v2/agents/mailbox/submit`` or ``.../proxy/submit`` path) gets
            ``agentverse``.
        ttl: seconds a peer's resolved quota is kept.
        max_peers: peers whose quota and pace are kept at once.
    """

    default: PeerQuota = field(default_factory=PeerQuota)
    agentverse: PeerQuota = AGENTVERSE_QUOTA
    agentverse_peers: frozenset[str] = frozenset()
    detect: bool = True
    ttl: float = 300.0
    max_peers: int = 4096

    def __post_init__(self) -> None:
        for name in ("default", "agentverse"):
            if not isinstance(getattr(self, name), PeerQuota):
                raise ValueError(f"{name} must be a PeerQuota, got {getattr(self, name)!r}")
        if isinstance(self.agentverse_peers, str) or not all(
            isinstance(a, str) and a for a in self.agentverse_peers
        ):
            raise ValueError("agentverse_peers must be a set of agent addresses")
        object.__setattr__(self, "agentverse_peers", frozenset(self.agentverse_peers))
        if not self.ttl > 0:
            raise ValueError(f"ttl must be > 0, got {self.ttl!r}")
        if isinstance(self.max_peers, bool) or not isinstance(self.max_peers, int):
            raise ValueError(f"max_peers must be an integer >= 1, got {self.max_peers!r}")
        if self.max_peers < 1:
            raise ValueError(f"max_peers must be an integer >= 1, got {self.max_peers!r}")

    @property
    def needs_lookup(self) -> bool:
        """Whether some peer may get a quota that limits something."""
        return self.default.limited or (
            self.agentverse.limited and (self.detect or bool(self.agentverse_peers))
        )


class PeerPace:
    """One peer's send slots: a send at most every ``1 / rate`` seconds, counted from the end
    of the previous one.

    Args:
        rate: sends per second.
        clock: the runtime's clock.
    """

    def __init__(self, rate: float, clock: Clock = LOOP_CLOCK) -> None:
        self.interval = 1.0 / rate
        self.clock = clock
        self._lock = asyncio.Lock()
        self._next = 0.0  # the clock's time the next send may start

    @property
    def busy(self) -> bool:
        """A send holds the slot, or the next may not start yet."""
        return self._lock.locked() or self._next > self.clock.now()

    def delay(self) -> float:
        """Seconds until a send could start (a send in progress: one interval)."""
        if self._lock.locked():
            return self.interval
        return max(0.0, self._next - self.clock.now())

    async def ready(self) -> None:
        """Wait until a send could start (what queues meanwhile may join it)."""
        for _ in range(10_000):
            wait = self.delay()
            if wait <= 0:
                return
            await self.clock.sleep(wait)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold the peer's slot for one send (waits for it, in turn)."""
        async with self._lock:
            wait = self._next - self.clock.now()
            if wait > 0:
                await self.clock.sleep(wait)
            try:
                yield
            finally:
                self._next = self.clock.now() + self.interval


@dataclass(frozen=True)
class PeerTerms:
    """What one reply follows: its peer's quota, the peer's shared pace (None: no ceiling), and
    whether the peer is reached through Agentverse."""

    quota: PeerQuota
    pace: PeerPace | None
    agentverse: bool


class QuotaBook:
    """Each peer's quota and pace (bounded; see the module doc).

    Args:
        quotas: the settings.
        clock: the runtime's clock.
    """

    def __init__(self, quotas: PeerQuotas, clock: Clock = LOOP_CLOCK) -> None:
        self.quotas = quotas
        self.clock = clock
        self._via: OrderedDict[str, tuple[bool, float]] = (
            OrderedDict()
        )  # peer -> (agentverse, until)
        self._paces: OrderedDict[tuple[str, float], PeerPace] = OrderedDict()

    async def terms_for(self, peer: str, resolve: Resolve) -> PeerTerms:
        """The terms of a reply to ``peer``.

        Args:
            peer: the asker's address.
            resolve: the endpoints ``peer`` resolves to (never raising).
        """
        via = await self._agentverse(peer, resolve)
        quota = self.quotas.agentverse if via else self.quotas.default
        rate = quota.messages_per_second
        return PeerTerms(quota, None if rate is None else self._pace(peer, rate), via)

    async def _agentverse(self, peer: str, resolve: Resolve) -> bool:
        q = self.quotas
        if peer in q.agentverse_peers:
            return True
        if not q.detect or not q.agentverse.limited:
            return False
        now = self.clock.now()
        known = self._via.get(peer)
        if known is not None and known[1] > now:
            return known[0]
        try:
            endpoints = await resolve(peer)
        except Exception as exc:  # a resolver failing: the peer gets the default quota
            LOG.debug("resolving %s for its quota failed: %s", peer[:80], exc)
            endpoints = []
        via = any(is_agentverse_endpoint(url) for url in endpoints[:16])
        self._via.pop(peer, None)
        self._via[peer] = (via, now + q.ttl)
        while len(self._via) > q.max_peers:
            self._via.popitem(last=False)
        if via:
            LOG.debug(
                "%s is reached through Agentverse: its replies follow %s", peer[:80], q.agentverse
            )
        return via

    def _pace(self, peer: str, rate: float) -> PeerPace:
        key = (peer, rate)
        pace = self._paces.pop(key, None)
        if pace is None:
            pace = PeerPace(rate, self.clock)
        self._paces[key] = pace
        if len(self._paces) > self.quotas.max_peers:
            for old_key, old in list(self._paces.items()):
                if len(self._paces) <= self.quotas.max_peers:
                    break
                if not old.busy:
                    del self._paces[old_key]
        return pace
