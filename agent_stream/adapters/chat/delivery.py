"""Delivery over a lossy transport, decided without I/O: every function here is told the time.

- :class:`Redelivery`: what a sender resends and when. Each ChatMessage is sent until it is
  acknowledged or its budget runs out (``tries`` sends within ``within`` seconds, exponential
  backoff with jitter). A failed delivery is retried whatever the peer; silence (delivered, never
  acknowledged) is read as loss only from a peer known to acknowledge.
- :class:`ReplayBuffer` / :class:`ReplayStore`: what a responder can send again on a repair
  request, per reply, bounded by count and bytes, kept ``replay_linger`` seconds after the reply.
- :class:`GapRepair`: when a receiver asks for a missing range (``repair_after`` seconds after
  a gap opened, then every ``repair_every`` seconds while it stays open).
- :class:`Keepalive` and :class:`IdleWatch`: a responder's keepalive timing, an asker's ``lost``.

:class:`DeliveryPolicy` holds the documented defaults.
"""

from __future__ import annotations

import random
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from agent_stream.adapters.chat.ack_clock import PeerAckClock

__all__ = [
    "DeliveryPolicy",
    "Gap",
    "GapRepair",
    "IdleWatch",
    "Keepalive",
    "Redelivery",
    "ReplayBuffer",
    "ReplayStore",
]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
MiB = 2**20


@dataclass(frozen=True)
class DeliveryPolicy:
    """Redelivery, replay, repair and liveness settings (seconds, counts, bytes).

    A ChatMessage is sent at most ``tries`` times, the last no later than ``within`` seconds
    after the first. After a failed delivery the next try waits ``retry_delay`` seconds, doubled
    (``backoff``) each time up to ``max_delay``; a delivered one not acknowledged within
    ``ack_timeout`` (doubled likewise) counts as lost. Every wait is spread by +-``jitter``.

    Attributes:
        tries: times a ChatMessage is sent at most.
        within: seconds after the first try by which the last try is made.
        retry_delay: seconds before the next try after a failed delivery.
        ack_timeout: seconds a delivered ChatMessage may go unacknowledged before it counts
            as lost.
        backoff: what each wait is multiplied by after each failure.
        max_delay: the longest wait between tries, in seconds.
        jitter: the fraction by which every wait is spread (+-).
    """

    tries: int = 5
    within: float = 20.0
    retry_delay: float = 0.5
    ack_timeout: float = 1.0
    backoff: float = 2.0
    max_delay: float = 8.0
    jitter: float = 0.2
    replay_count: int = 1024  # ChatMessages kept per reply for repair requests
    replay_bytes: int = 4 * MiB  # and their estimated size
    replay_linger: float = 60.0  # seconds a reply's buffer is kept after it ends
    replay_total_bytes: int = 64 * MiB  # all buffers together (oldest reply dropped first)
    repair_after: float = 0.3  # a gap open this long is asked for
    repair_every: float = 1.0  # and asked for again this often while it stays open
    keepalive: float = 5.0  # a responder silent this long while a reply is open sends one
    idle_timeout: float = 15.0  # an asker hearing nothing this long ends the reply as lost

    def __post_init__(self) -> None:
        if self.tries < 1:
            raise ValueError(f"tries must be >= 1, got {self.tries}")
        for name in (
            "within",
            "retry_delay",
            "ack_timeout",
            "max_delay",
            "keepalive",
            "idle_timeout",
            "repair_after",
            "repair_every",
            "replay_linger",
        ):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")
        if self.backoff < 1 or not 0 <= self.jitter < 1:
            raise ValueError("backoff must be >= 1 and jitter in [0, 1)")

    def wait(self, base: float, tries: int, rng: random.Random) -> float:
        """The wait after a send: backoff, cap, jitter.

        Args:
            base: the first wait, in seconds.
            tries: how many sends were made (1: the first).
            rng: the random numbers for the jitter.
        """
        delay = min(self.max_delay, base * self.backoff ** max(0, tries - 1))
        return delay * (1.0 + self.jitter * (2.0 * rng.random() - 1.0))


class _Entry(Generic[T]):
    __slots__ = ("due", "first", "item", "limit", "risky", "tries", "until")

    def __init__(self, item: T, now: float, tries: int, within: float) -> None:
        self.item = item
        self.first = now
        self.tries = 0
        self.limit = tries  # sends allowed (a second budget adds to it once)
        self.until = now + within  # the last send no later than this
        self.due: float | None = None  # when to resend (None: nothing to do unless acks start)
        self.risky = False  # a try failed or timed out: the message may be lost


class Redelivery(Generic[K, T]):
    """A sender's unacknowledged ChatMessages, and when each is to be sent again.

    The owner calls :meth:`sent` after every send (first or again) with whether the transport
    delivered it, :meth:`acknowledged` for every acknowledgement, and sends what :meth:`due`
    returns. Figures: ``resends``, ``given_up`` (budget ran out), ``left_to_repair`` (budget ran
    out, but a ``repairable`` peer acknowledged something after it was first sent: it is alive,
    and asks for the gap from the replay buffer), ``extended`` (budget ran out, and a peer that
    cannot ask for gaps acknowledged something after it was first sent, or, ``in_order``, was
    heard from at all: alive, so the message gets a second budget, once), :meth:`at_risk`
    (seconds during which some message had failed or gone unacknowledged past its timeout and
    was not yet acknowledged).

    Args:
        policy: timeouts, backoff and budget (None: the defaults of DeliveryPolicy).
        peer_acks: the peer is known to acknowledge (else it is learnt from the first
            acknowledgement).
        rng: the random numbers for the jitter (None: a fresh ``random.Random``).
        repairable: the peer restores order and asks for gaps (a tagged asker): a message
            whose budget ran out after the peer acknowledged later ones is left to its repair.
        timer: the peer's acknowledgement times (None: ``ack_timeout`` alone). It learns from
            what was acknowledged after one send, and a wait for an acknowledgement is as long
            as the peer has lately needed, kept between ``ack_timeout`` and ``max_delay``. Any
            wait is then cut to an even share of what is left of ``within`` for the tries left:
            every message gets its ``tries`` sends, however slow the peer.
        in_order: the owner sends one message at a time, each once the one before it was
            acknowledged (a plain peer). Nothing can be acknowledged after such a message was
            first sent but the message itself, so the sign of life that counts for its second
            budget is the last one before it: the acknowledgement that let it go or, for the
            first, the peer's question (:meth:`heard`). Without it, a reply's message whose five
            acknowledgements were lost (10% loss each way: one message in ~600) ended the reply
            for an asker that was there and had read it.
    """

    def __init__(
        self,
        policy: DeliveryPolicy | None = None,
        *,
        peer_acks: bool = False,
        rng: random.Random | None = None,
        timer: PeerAckClock | None = None,
        repairable: bool = False,
        in_order: bool = False,
    ) -> None:
        self.policy = policy or DeliveryPolicy()
        self.peer_acks = peer_acks
        self.timer = timer
        self.repairable = repairable
        self.in_order = in_order
        self._heard = False  # the peer was heard from (an acknowledgement, or its question)
        self._rng = rng or random.Random()
        self._entries: dict[K, _Entry[T]] = {}
        self.resends = 0
        self.given_up = 0
        self.left_to_repair = 0
        self.extended = 0  # messages given a second budget (their peer was alive)
        self.acks = 0
        self._last_ack: float | None = None
        self._risky = 0
        self._risk_since: float | None = None
        self._risk_total = 0.0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    @property
    def pending(self) -> bool:
        """Something is waiting to be resent (or acknowledged by a peer that acknowledges)."""
        return any(e.due is not None for e in self._entries.values())

    def sent(self, key: K, item: T, delivered: bool, now: float) -> None:
        """A send happened (first or again).

        Args:
            key: what identifies the ChatMessage.
            item: the ChatMessage, kept to send it again.
            delivered: the transport took it.
            now: the current time, in seconds on a monotonic clock.
        """
        p = self.policy
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(item, now, p.tries, p.within)
        elif entry.tries:
            self.resends += 1
        entry.tries += 1
        if not delivered:
            self._mark_risky(entry, now)
            entry.due = now + p.wait(p.retry_delay, entry.tries, self._rng)
        elif self.peer_acks:
            entry.due = now + p.wait(self._ack_wait(), entry.tries, self._rng)
        else:
            entry.due = None  # sent once, as to a peer that never acknowledges
        if entry.due is None:
            return
        # The tries left fit in what is left of the budget, the last share waiting for the last
        # try's ack (with none left: the ack is waited for until the budget ends, then given
        # up). A slow peer's long waits (up to max_delay) left a message three sends, not five.
        left = max(0, entry.limit - entry.tries)
        entry.due = min(entry.due, now + max(0.0, entry.until - now) / (left + 1))

    def acknowledged(self, key: K, now: float) -> bool:
        """An acknowledgement arrived; True when it was waiting for one.

        The first acknowledgement from a peer makes it one known to acknowledge: whatever is
        still unacknowledged is resent if its acknowledgement does not come in time.

        Args:
            key: what identifies the acknowledged ChatMessage.
            now: the current time, in seconds on a monotonic clock.
        """
        self.acks += 1
        self._last_ack = now
        self._heard = True
        if not self.peer_acks:
            self.peer_acks = True
            wait = self._ack_wait()
            for entry in self._entries.values():
                if entry.due is None:
                    entry.due = max(now, entry.first + wait)
        if key not in self._entries:
            return False
        entry = self._entries.pop(key)
        if self.timer is not None and entry.tries == 1 and not entry.risky:
            self.timer.sample(now - entry.first)  # Karn: only what was sent once
        self._unmark(entry, now)
        return True

    def heard(self) -> None:
        """The peer was heard from otherwise than by an acknowledgement (its question came): for
        an ``in_order`` owner, a sign of life for the message sent next."""
        self._heard = True

    def _ack_wait(self) -> float:
        """Seconds a delivered message waits for its acknowledgement before a resend."""
        p = self.policy
        if self.timer is None:
            return p.ack_timeout
        return max(p.ack_timeout, min(p.max_delay, self.timer.patience()))

    def due(self, now: float) -> list[tuple[K, T]]:
        """What to send again now, oldest first.

        Entries whose budget is spent are dropped: counted in ``left_to_repair`` when a
        ``repairable`` peer acknowledged anything after the entry was first sent, else in
        ``given_up``.

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        out: list[tuple[K, T]] = []
        p = self.policy
        for key, entry in list(self._entries.items()):
            if entry.due is None or entry.due > now:
                continue
            self._mark_risky(entry, now)
            if entry.tries >= entry.limit or now >= entry.until:
                alive = self._last_ack is not None and self._last_ack > entry.first
                if not self.repairable and self.in_order:
                    # sent one at a time: what let this message go is the latest sign of life
                    alive = alive or self._heard
                if alive and not self.repairable and entry.limit == p.tries:
                    # The peer acknowledged later messages: it is alive, and this one's sends
                    # or acknowledgements were lost by chance (five in a row at 15 % loss each
                    # way: one message in 600). A peer that cannot ask for the gap gets a
                    # second budget, once, before the reply is given up.
                    entry.limit += p.tries
                    entry.until = now + p.within
                    self.extended += 1
                else:
                    self._unmark(entry, now)
                    del self._entries[key]
                    if self.repairable and alive:
                        self.left_to_repair += 1
                    else:
                        self.given_up += 1
                    continue
            entry.due = None  # until sent() says how this try went
            out.append((key, entry.item))
        return out

    @property
    def next_deadline(self) -> float | None:
        """When :meth:`due` has something (None: nothing scheduled)."""
        dues = [e.due for e in self._entries.values() if e.due is not None]
        return min(dues) if dues else None

    def forget(self) -> None:
        """Drop everything (the reply is abandoned)."""
        self._entries.clear()
        self._risky = 0

    def at_risk(self, now: float) -> float:
        """Seconds so far during which some message was possibly lost.

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        extra = now - self._risk_since if self._risk_since is not None else 0.0
        return self._risk_total + extra

    def _mark_risky(self, entry: _Entry[T], now: float) -> None:
        if not entry.risky:
            entry.risky = True
            self._risky += 1
            if self._risk_since is None:
                self._risk_since = now

    def _unmark(self, entry: _Entry[T], now: float) -> None:
        if entry.risky:
            entry.risky = False
            self._risky -= 1
            if self._risky == 0 and self._risk_since is not None:
                self._risk_total += now - self._risk_since
                self._risk_since = None


class ReplayBuffer(Generic[T]):
    """One reply's sent ChatMessages by sequence range, the newest within both caps.

    Older ones are dropped: a repair of them is no longer possible.

    Args:
        max_count: the most ChatMessages kept.
        max_bytes: the most bytes they may take.
    """

    def __init__(self, max_count: int, max_bytes: int) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._items: OrderedDict[int, tuple[int, T, int]] = OrderedDict()  # first: (last, ..)
        self.bytes = 0
        self.ended_at: float | None = None
        self.dropped = 0
        self.tally: _Tally | None = None  # its store's total, kept in step

    def _grow(self, n: int) -> None:
        self.bytes += n
        if self.tally is not None:
            self.tally.bytes += n

    def __len__(self) -> int:
        return len(self._items)

    def add(self, first: int, last: int, item: T, size: int) -> None:
        """Keep a sent ChatMessage.

        Args:
            first: the first sequence number it covers.
            last: the last one.
            item: the ChatMessage.
            size: its size, in bytes.
        """
        old = self._items.pop(first, None)
        if old is not None:
            self._grow(-old[2])
        self._items[first] = (last, item, size)
        self._grow(size)
        while len(self._items) > 1 and (
            len(self._items) > self.max_count or self.bytes > self.max_bytes
        ):
            _, (_, _, s) = self._items.popitem(last=False)
            self._grow(-s)
            self.dropped += 1

    def covering(self, lo: int, hi: int | None = None) -> list[T]:
        """The kept items overlapping a range of sequence numbers, in order.

        Args:
            lo: the range's first sequence number.
            hi: its last (None: to the end).
        """
        top = hi if hi is not None else float("inf")
        return [
            item for first, (last, item, _) in self._items.items() if last >= lo and first <= top
        ]

    def holds(self, seq: int) -> bool:
        """Whether a sequence number can be sent again.

        Args:
            seq: the sequence number.
        """
        return any(first <= seq <= last for first, (last, _, _) in self._items.items())


class _Tally:
    """The bytes a store's buffers hold together."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


class ReplayStore(Generic[K, T]):
    """Replay buffers of many replies.

    Each is kept ``replay_linger`` seconds after its reply ends, all together within
    ``replay_total_bytes`` (the oldest reply's buffer dropped first). Pruning costs what it
    drops, not what is kept: a thousand replies starting at once used to scan every buffer each.

    Args:
        policy: the caps and the linger (None: the defaults of DeliveryPolicy).
    """

    def __init__(self, policy: DeliveryPolicy | None = None) -> None:
        self.policy = policy or DeliveryPolicy()
        self._buffers: OrderedDict[K, ReplayBuffer[T]] = OrderedDict()
        self._tally = _Tally()
        # the buffers in the order their replies ended (one entry per reply ended within the
        # linger: those of buffers dropped for size meanwhile are skipped when they expire)
        self._ended: deque[tuple[float, K, ReplayBuffer[T]]] = deque()

    def __len__(self) -> int:
        return len(self._buffers)

    @property
    def bytes(self) -> int:
        """The bytes all kept buffers hold."""
        return self._tally.bytes

    def open(self, key: K) -> ReplayBuffer[T]:
        """A fresh buffer for a reply.

        Args:
            key: the reply's key.
        """
        p = self.policy
        old = self._buffers.pop(key, None)
        if old is not None:
            self._detach(old)
        buf: ReplayBuffer[T] = ReplayBuffer(p.replay_count, p.replay_bytes)
        buf.tally = self._tally
        self._buffers[key] = buf
        return buf

    def _detach(self, buf: ReplayBuffer[T]) -> None:
        if buf.tally is self._tally:
            self._tally.bytes -= buf.bytes
            buf.tally = None

    def get(self, key: K, now: float) -> ReplayBuffer[T] | None:
        """A reply's buffer, unless it expired (None then, or when there is none).

        Args:
            key: the reply's key.
            now: the current time, in seconds on a monotonic clock.
        """
        self.prune(now)
        return self._buffers.get(key)

    def end(self, key: K, now: float) -> None:
        """A reply ended: its buffer is kept ``replay_linger`` seconds more.

        Args:
            key: the reply's key.
            now: the current time, in seconds on a monotonic clock.
        """
        buf = self._buffers.get(key)
        if buf is not None and buf.ended_at is None:
            buf.ended_at = now
            if self._ended and now < self._ended[-1][0]:  # an earlier time than the last: keep
                now = self._ended[-1][0]  # the queue in order (it lingers that much longer)
            self._ended.append((now, key, buf))

    def prune(self, now: float) -> None:
        """Drop expired buffers, then the oldest while over the total size.

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        linger = self.policy.replay_linger
        ended = self._ended
        while ended and now - ended[0][0] >= linger:
            _, key, buf = ended.popleft()
            if self._buffers.get(key) is buf:
                del self._buffers[key]
                self._detach(buf)
        while len(self._buffers) > 1 and self._tally.bytes > self.policy.replay_total_bytes:
            _, buf = self._buffers.popitem(last=False)
            self._detach(buf)


@dataclass(frozen=True)
class Gap:
    """A range of sequence numbers a receiver misses in a conversation.

    Attributes:
        sender: the sender of the conversation.
        conversation: the conversation's id.
        lo: the first missing sequence number.
        hi: the last (None: the missing tail, its end unknown).
        since: when the gap opened, in seconds on the receiver's monotonic clock.
        skipped: how many gaps of the conversation were given up so far.
    """

    sender: str
    conversation: str
    lo: int
    hi: int | None
    since: float
    skipped: int = 0


class GapRepair:
    """When a receiver asks for its gaps.

    Each ``repair_after`` seconds after it opened, then every ``repair_every`` seconds while it
    stays open. Counts ``requested`` and ``repaired`` (gaps asked for that filled without
    being given up).

    Args:
        policy: the repair timings (None: the defaults of DeliveryPolicy).
    """

    def __init__(self, policy: DeliveryPolicy | None = None) -> None:
        self.policy = policy or DeliveryPolicy()
        self._asked: dict[tuple[str, str, int], tuple[float, int]] = {}  # key: (when, skipped)
        self.requested = 0
        self.repaired = 0

    def due(
        self, gaps: Iterable[Gap], now: float, skipped: dict[tuple[str, str], int] | None = None
    ) -> list[Gap]:
        """The gaps to ask for now.

        Args:
            gaps: the receiver's open gaps.
            now: the current time, in seconds on a monotonic clock.
            skipped: gaps given up so far per (sender, conversation), for conversations
                with no gap open now (None: none).
        """
        p = self.policy
        out: list[Gap] = []
        open_keys: dict[tuple[str, str, int], Gap] = {}
        for gap in gaps:
            key = (gap.sender, gap.conversation, gap.lo)
            open_keys[key] = gap
            last = self._asked.get(key)
            # the same sums as next_deadline: due exactly when it says
            if last is None:
                if now >= gap.since + p.repair_after:
                    out.append(gap)
            elif now >= last[0] + p.repair_every:
                out.append(gap)
        counts = dict(skipped or {})
        counts.update({(g.sender, g.conversation): g.skipped for g in open_keys.values()})
        self._close(open_keys, counts)
        for gap in out:
            self._asked[(gap.sender, gap.conversation, gap.lo)] = (now, gap.skipped)
            self.requested += 1
        return out

    def closed(self, skipped: dict[tuple[str, str], int]) -> None:
        """No gap is open any more.

        Args:
            skipped: gaps given up per (sender, conversation).
        """
        self._close({}, skipped)

    def _close(
        self, open_keys: dict[tuple[str, str, int], Gap], gaps_skipped: dict[tuple[str, str], int]
    ) -> None:
        for key in [k for k in self._asked if k not in open_keys]:
            _, skipped_then = self._asked.pop(key)
            if gaps_skipped.get((key[0], key[1]), skipped_then) == skipped_then:
                self.repaired += 1

    def next_deadline(self, gaps: Iterable[Gap]) -> float | None:
        """When :meth:`due` has something (None: no gap).

        Args:
            gaps: the receiver's open gaps.
        """
        p = self.policy
        best: float | None = None
        for gap in gaps:
            last = self._asked.get((gap.sender, gap.conversation, gap.lo))
            d = gap.since + p.repair_after if last is None else last[0] + p.repair_every
            if best is None or d < best:
                best = d
        return best


class Keepalive:
    """A responder's keepalive timing: one is due ``interval`` seconds after the last send.

    Args:
        interval: seconds of silence before a keepalive.
        now: the current time, in seconds on a monotonic clock (the start).
    """

    def __init__(self, interval: float, now: float) -> None:
        self.interval = interval
        self.last = now
        self.sent = 0

    def note_sent(self, now: float) -> None:
        """Something was sent to the peer.

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        self.last = now

    @property
    def next_deadline(self) -> float:
        """When a keepalive is due unless something else is sent first."""
        return self.last + self.interval

    def due(self, now: float) -> bool:
        """Whether to send a keepalive now (counts it and restarts the interval).

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        if now < self.next_deadline:
            return False
        self.sent += 1
        self.last = now
        return True


class IdleWatch:
    """An asker's liveness: the reply is lost when nothing arrived for ``idle_timeout``.

    Args:
        idle_timeout: seconds of silence after which the reply is lost.
        now: the current time, in seconds on a monotonic clock (the start).
    """

    def __init__(self, idle_timeout: float, now: float) -> None:
        self.idle_timeout = idle_timeout
        self.last = now

    def note(self, now: float) -> None:
        """Something arrived from the peer.

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        self.last = max(self.last, now)

    @property
    def deadline(self) -> float:
        """When the reply is lost unless something arrives first."""
        return self.last + self.idle_timeout

    def lost(self, now: float) -> bool:
        """Whether the peer has been silent for ``idle_timeout``.

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        return now >= self.deadline
