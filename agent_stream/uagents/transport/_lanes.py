"""Per-peer send lanes: a peer that is slow, hangs, refuses or answers errors delays only itself.

uagents (0.26.1) sends every envelope of an agent through one ``Dispenser``: one queue, one
envelope at a time, each HTTP post with aiohttp's default 300 s timeout. One peer whose
endpoint hangs holds up every other send of the agent (a 0.05 s reply was measured at 89 s).
``ctx.send(..., timeout=...)`` only stops *waiting*; the envelope still blocks the queue.

:class:`PeerDispenser` is one agent's dispenser (:func:`isolate`, called by
:func:`agent_stream.uagents._protection.protect`). Envelopes of the chat protocol
(ChatMessage, ChatAcknowledgement) go through per-destination lanes: each destination's
envelopes go in order, one post at a time, while other lanes run at the same time. A peer that
restores order itself (it reads agent_stream's tagged replies, ordered by ``seq``: the plugin
calls :func:`pipeline` for it) gets up to ``window`` (128) envelopes in flight at once, in any
number of posts, and there acknowledgements and what is sent inside :func:`urgent` (a question,
a reply's first text) go ahead of what is already queued: a thousand replies' text queued for
one gateway no longer delays the text someone is waiting for, nor an acknowledgement whose
lateness makes the peer send again. What is sent inside :func:`independent` (a question opening
a session of its own) goes beside the posts under way to any peer, within the same window: a
gateway's thousand questions no longer wait for one another. Posts go
over the agent's kept-alive connections (:mod:`._pool`), not one new connection per envelope.
Everything else the agent sends (its other protocols) goes the stock uagents way, with uagents'
own timeouts, unless ``every_protocol`` puts all sends in lanes. To an endpoint that never
answered, at most :data:`PROBE_POSTS` posts go at once until one answer says whether it takes
batches. Bounds (:class:`LaneLimits`, defaults):

- ``post_timeout`` 10 s: one HTTP post (connect, send, answer); then the envelope fails;
- ``max_timeouts`` 2 consecutive timed-out posts make the lane *stalled*: what is queued and
  what comes in the next ``stall_for`` (30 s) fails at once ("not answering");
  refused and 5xx posts fail within a fraction of a second and never stall a lane;
- ``max_queued`` 256 envelopes waiting per lane (beyond: fail at once), ``max_queued_pipelined``
  4096 for a peer that pipelines (a gateway sends for many conversations through one lane;
  each reply has at most one envelope waiting, so the replies cap bounds it too);
- ``max_lanes`` 4096 lanes (beyond: fail at once); ``max_posting`` 256 posts at once.

Every lane envelope's future gets a MsgStatus (delivered or failed), so ``ctx.send`` returns
promptly. When the agent stops, lanes get what is left of the agent's one stop deadline
(:mod:`agent_stream.uagents._shutdown`; at most ``drain_timeout``) to finish.

Given to an agent before it starts, the PeerDispenser is the one uagents runs (its stock
queue included). Given to a running agent, envelopes not meant for lanes go to the dispenser
the agent already runs, and the lanes are drained by a shutdown handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from uagents import Agent, Context
from uagents.communication import Dispenser, send_exchange_envelope
from uagents_core.contrib.protocols.chat import ChatAcknowledgement, ChatMessage
from uagents_core.models import Model
from uagents_core.types import DeliveryStatus, MsgStatus

from agent_stream.uagents import _compat
from agent_stream.uagents._clock import LOOP_CLOCK, Clock
from agent_stream.uagents._shutdown import StopDeadline, stop_deadline
from agent_stream.uagents.transport._pool import MAX_BATCH, MAX_BATCH_BYTES, EnvelopePoster

__all__ = [
    "CHAT_DIGESTS",
    "LaneLimits",
    "PeerDispenser",
    "independent",
    "isolate",
    "pipeline",
    "pipeline_from",
    "urgent",
]

LOG = logging.getLogger("agent_stream.uagents")


@dataclass(frozen=True)
class LaneLimits:
    """Bounds of :class:`PeerDispenser` (see the module doc).

    Attributes:
        post_timeout: seconds one HTTP post may take (connect, send, answer); then the
            envelope fails.
        max_timeouts: consecutive timed-out posts that make a lane stalled.
        stall_for: seconds a stalled lane fails what is queued and what comes in at once.
        max_queued: envelopes waiting per lane (beyond: they fail at once).
        max_lanes: lanes (destinations) at once (beyond: envelopes fail at once).
        max_posting: HTTP posts at once, all lanes together.
        drain_timeout: seconds the lanes get at most to finish when the agent stops (they get
            what is left of the agent's stop deadline, when it comes sooner).
        window: envelopes in flight at once to a peer that restores order (pipeline).
        max_queued_pipelined: envelopes waiting for such a peer (a gateway's many).
        keep_alive: keep connections open (False: a new connection per envelope, as uagents
            does).
        every_protocol: put every send in lanes, not only the chat protocol's.
    """

    post_timeout: float = 10.0
    max_timeouts: int = 2
    stall_for: float = 30.0
    max_queued: int = 256
    max_lanes: int = 4096
    max_posting: int = 256
    drain_timeout: float = 5.0
    window: int = 128
    max_queued_pipelined: int = 4096
    keep_alive: bool = True
    every_protocol: bool = False


#: Posts at once to an endpoint that never answered: until one answer says whether it takes
#: batches, a burst does not fill the window with posts of one envelope each (a cold gateway
#: asking a thousand questions made a thousand posts where sixteen batches would do).
PROBE_POSTS = 4

NOT_SENT = "not sent: the agent is stopping"  # what an envelope cancelled before its post gets

#: The schema digests whose envelopes go through lanes by default (the chat protocol's).
CHAT_DIGESTS = frozenset(Model.build_schema_digest(m) for m in (ChatMessage, ChatAcknowledgement))
_ACK_DIGEST = Model.build_schema_digest(ChatAcknowledgement)

_URGENT: contextvars.ContextVar[bool] = contextvars.ContextVar("agent_stream_urgent", default=False)


@contextlib.contextmanager
def urgent() -> Iterator[None]:
    """Envelopes sent inside this block go ahead of those already queued for a peer that
    restores order itself (a pipelined lane): someone waits on them (a question, a reply's
    first text). Acknowledgements always do (a late one makes the peer send again). To a
    plain peer, which cannot reorder, everything still goes in order."""
    token = _URGENT.set(True)
    try:
        yield
    finally:
        _URGENT.reset(token)


_INDEPENDENT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "agent_stream_independent", default=False
)


@contextlib.contextmanager
def independent() -> Iterator[None]:
    """Envelopes sent inside this block depend on nothing sent to that peer before them (a
    question that opens a session of its own): they do not wait for the posts before them,
    even to a peer that cannot reorder, so a gateway's thousand questions to one agent no longer
    go one post at a time. What is sent after one of them still waits for it."""
    token = _INDEPENDENT.set(True)
    try:
        yield
    finally:
        _INDEPENDENT.reset(token)


async def _within(aw: Awaitable[Any], timeout: float) -> Any:
    """``await aw``, or TimeoutError after ``timeout`` seconds. ``asyncio.wait_for`` runs a
    coroutine in a task of its own, so a post began a loop turn later: at a thousand replies a
    turn took a third of a second. ``asyncio.timeout`` (Python 3.11) runs it in this task."""
    timeout_cm = getattr(asyncio, "timeout", None)
    if timeout_cm is None:  # Python 3.10
        return await asyncio.wait_for(aw, timeout)
    async with timeout_cm(timeout):
        return await aw


class _Queued(NamedTuple):
    """An envelope waiting in a lane."""

    envelope: Any
    endpoints: list[str]
    future: asyncio.Future[Any]  # the sender's: gets the MsgStatus
    sync: bool
    independent: bool  # of what went before it (:func:`independent`)


class _Lane:
    __slots__ = (
        "arrived",
        "in_flight",
        "posting",
        "posts",
        "queue",
        "stalled_until",
        "target",
        "task",
        "timeouts",
        "urgent",
    )

    def __init__(self, target: str) -> None:
        self.target = target
        self.queue: deque[_Queued] = deque()
        self.urgent: deque[_Queued] = deque()  # posted first (pipelined lanes only)
        self.task: asyncio.Task[None] | None = None
        self.timeouts = 0
        self.stalled_until = 0.0
        self.posting = 0
        self.in_flight = 0  # envelopes in the posts under way
        self.posts: set[asyncio.Task[None]] = set()  # the posts under way
        self.arrived: asyncio.Future[None] | None = None  # set when an envelope comes


def _failed(env: Any, detail: str) -> MsgStatus:
    return MsgStatus(
        status=DeliveryStatus.FAILED,
        detail=detail,
        destination=env.target,
        endpoint="",
        session=env.session,
    )


def _settle(fut: asyncio.Future[Any], result: Any) -> None:
    if not fut.done():
        fut.set_result(result)


class PeerDispenser(Dispenser):  # type: ignore[misc]
    """An agent's dispenser with one lane per destination (see the module doc)."""

    def __init__(
        self,
        limits: LaneLimits | None = None,
        *,
        stock: Dispenser | None = None,
        clock: Clock = LOOP_CLOCK,
    ) -> None:
        """Make the dispenser; no lane runs until an envelope comes.

        Args:
            limits: the lanes' bounds (None: the defaults).
            stock: where envelopes not for lanes go (None: this dispenser's own uagents
                queue, which :meth:`run` serves the uagents way).
            clock: the runtime's clock (stalls are timed on it; a post's own timeout is
                network time, on the loop).
        """
        super().__init__()
        self.clock = clock
        self.limits = limits or LaneLimits()
        self._stock = stock
        self._lanes: dict[str, _Lane] = {}
        self._stalled: dict[str, float] = {}  # lanes that ended stalled: target -> until
        self._posting: asyncio.Semaphore | None = None
        self._pipelined: OrderedDict[str, None] = OrderedDict()
        #: Called with (destination, endpoint) when an envelope was accepted (HTTP 200).
        self.on_delivered: list[Callable[[str, str], None]] = []
        #: The agent's kept-alive connections (its lanes' posts).
        self.poster = EnvelopePoster(self.limits.max_posting)
        #: The agent's stop deadline, which the lanes' drain shares (:func:`isolate` gives the
        #: agent's own).
        self.stop = StopDeadline(clock=clock)

    @property
    def lanes(self) -> int:
        """Lanes with envelopes queued or being posted."""
        return len(self._lanes)

    def add_envelope(
        self,
        envelope: Any,
        endpoints: list[str],
        response_future: asyncio.Future[Any],
        sync: bool = False,
    ) -> None:
        """Queue ``envelope`` in its destination's lane (a chat envelope), else for the stock.

        Args:
            envelope: the signed envelope to post.
            endpoints: the destination's endpoints, tried in order.
            response_future: set with the delivery status once posted (or failed).
            sync: whether the sender waits for the destination's reply (passed to the stock
                dispenser).
        """
        if not self.limits.every_protocol and envelope.schema_digest not in CHAT_DIGESTS:
            if self._stock is not None:
                self._stock.add_envelope(envelope, endpoints, response_future, sync)
            else:
                super().add_envelope(envelope, endpoints, response_future, sync)
            return
        target = str(envelope.target)
        now = self.clock.now()
        lane = self._lanes.get(target)
        if lane is None:
            until = self._stalled.get(target, 0.0)
            if until > now:
                _settle(
                    response_future,
                    _failed(
                        envelope, f"peer not answering; not tried again for {until - now:.0f} s"
                    ),
                )
                return
            self._stalled.pop(target, None)
            if len(self._lanes) >= self.limits.max_lanes:
                _settle(response_future, _failed(envelope, "too many peers being sent to"))
                return
            lane = self._lanes[target] = _Lane(target)
        if lane.stalled_until > now:
            _settle(response_future, _failed(envelope, "peer not answering"))
            return
        limit = (
            self.limits.max_queued_pipelined
            if target in self._pipelined
            else self.limits.max_queued
        )
        if len(lane.queue) + len(lane.urgent) >= limit:
            _settle(response_future, _failed(envelope, "too many envelopes queued for peer"))
            return
        item = _Queued(envelope, endpoints, response_future, sync, _INDEPENDENT.get())
        if target in self._pipelined and (_URGENT.get() or envelope.schema_digest == _ACK_DIGEST):
            lane.urgent.append(item)
        else:
            lane.queue.append(item)
        if lane.task is None:
            lane.task = asyncio.get_running_loop().create_task(self._drain(lane))
        elif lane.arrived is not None and not lane.arrived.done():
            self._post_now(lane)
            lane.arrived.set_result(None)  # the window may have room for it (or: a new post)

    def pipeline(self, peer: str) -> None:
        """Let up to ``window`` envelopes to ``peer`` be in flight at once: for a peer that
        restores order itself (an agent_stream peer reading tagged replies by ``seq``).

        Args:
            peer: the destination's address.
        """
        self._pipelined[peer] = None
        self._pipelined.move_to_end(peer)
        while len(self._pipelined) > self.limits.max_lanes:
            self._pipelined.popitem(last=False)

    def pipelined(self, peer: str) -> bool:
        """Whether envelopes to ``peer`` may be in flight together.

        Args:
            peer: the destination's address.
        """
        return peer in self._pipelined

    def _room(self, lane: _Lane, posting: bool) -> tuple[int, bool]:
        """(envelopes the lane's next post may carry, whether they must all be independent).

        A pipelined lane keeps at most ``window`` envelopes in flight, batched or not. A
        one-at-a-time lane posts after the last post is answered (the post may carry a whole
        batch, still in order), except independent envelopes, which go beside the posts under
        way, within the same window."""
        window = max(1, self.limits.window)
        head = (lane.urgent or lane.queue)[0]
        if lane.posting >= PROBE_POSTS and self._unheard(head.endpoints):
            return 0, False  # first learn from an answer whether the endpoint takes batches
        if lane.target in self._pipelined:
            return window - lane.in_flight, False
        if head.independent:
            return min(MAX_BATCH, window - lane.in_flight), True
        return (0 if posting else MAX_BATCH), False

    def _unheard(self, endpoints: list[str]) -> bool:
        """Whether the posts to ``endpoints`` could be batches but the first endpoint never
        answered, so it is not known yet whether it takes them."""
        return bool(self.limits.keep_alive and endpoints and not self.poster.heard(endpoints[0]))

    def _post_now(self, lane: _Lane) -> None:
        """What the lane's task would post next, posted from here (the sender's turn of the
        loop) when the window and the agent's posts have room: the lane's task, waiting for an
        envelope to come, would begin it two turns later (two thirds of a second at a thousand
        replies). Only while that task waits, so it never runs beside this."""
        if self._posting is None or self._posting.locked():
            return
        room, only_independent = self._room(lane, bool(lane.posts))
        if room <= 0:
            return
        batch = self._take(lane, room, only_independent)
        if batch:
            self._start(lane, batch, acquire=True)

    def _start(self, lane: _Lane, batch: list[_Queued], *, acquire: bool = False) -> None:
        # in flight from now, not from when the post's task first runs: the next look at the
        # window must see the room this batch took (counted later, a window of 128 let 128
        # posts of 64 envelopes go at once)
        lane.posting += 1
        lane.in_flight += len(batch)
        lane.posts.add(asyncio.get_running_loop().create_task(self._one(lane, batch, acquire)))

    async def _drain(self, lane: _Lane) -> None:
        if self._posting is None:
            self._posting = asyncio.Semaphore(self.limits.max_posting)
        posts = lane.posts
        try:
            while lane.urgent or lane.queue or posts:
                while lane.urgent or lane.queue:
                    # What the window has no room for waits here, where urgent envelopes go
                    # first (in the peer's inbox everything is first come, first served).
                    room, only_independent = self._room(lane, bool(posts))
                    if room <= 0:
                        break
                    batch = self._take(lane, room, only_independent)
                    if not batch:
                        continue
                    try:
                        await self._posting.acquire()
                    except asyncio.CancelledError:  # taken, not posted: its senders are told
                        for item in batch:
                            _settle(item.future, _failed(item.envelope, NOT_SENT))
                        raise
                    self._start(lane, batch)
                if posts:
                    # until a post is answered or another envelope comes (one that may go
                    # beside the posts under way)
                    # (asyncio.wait's set building and coroutine checks, an abc isinstance per
                    # post, cost a crowd of replies a few % of an agent's CPU: the posts wake
                    # ``arrived`` instead)
                    arrived = lane.arrived = asyncio.get_running_loop().create_future()
                    waited = list(posts)

                    def wake(_: object, arrived: asyncio.Future[None] = arrived) -> None:
                        if not arrived.done():
                            arrived.set_result(None)

                    for p in waited:
                        p.add_done_callback(wake)
                    try:
                        await arrived
                    finally:
                        lane.arrived = None
                        arrived.cancel()
                        for p in waited:
                            p.remove_done_callback(wake)
                    posts.difference_update([p for p in posts if p.done()])
        finally:
            for t in posts:  # cancelled mid-post: each sender still gets an answer
                t.cancel()
            if posts:
                await asyncio.gather(*posts, return_exceptions=True)
            if self._lanes.get(lane.target) is lane:
                del self._lanes[lane.target]
            if lane.stalled_until > self.clock.now():
                self._stalled[lane.target] = lane.stalled_until
                if len(self._stalled) > self.limits.max_lanes:
                    now = self.clock.now()
                    self._stalled = {t: u for t, u in self._stalled.items() if u > now}
            for env, _, fut, _, _ in (*lane.urgent, *lane.queue):  # cancelled: none waits
                _settle(fut, _failed(env, NOT_SENT))

    def _take(self, lane: _Lane, room: int, only_independent: bool = False) -> list[_Queued]:
        """The next post's envelopes: the next one waiting and, when its endpoint takes
        batches, those waiting behind it for the same endpoints (urgent ones first; in order;
        up to ``room``, the endpoint's batch size and :data:`~.pool.MAX_BATCH_BYTES`; with
        ``only_independent``, up to the first that is not). An idle lane's envelope goes
        alone at once: only a lane that is behind makes batches."""
        batch: list[_Queued] = []
        limit = 1
        size = 0
        while (lane.urgent or lane.queue) and len(batch) < limit:
            source = lane.urgent or lane.queue
            env, endpoints, fut, sync, _ = item = source[0]
            if fut.done():  # the sender stopped waiting
                source.popleft()
                continue
            if lane.stalled_until > self.clock.now():
                source.popleft()
                _settle(fut, _failed(env, "peer not answering"))
                continue
            if only_independent and not item.independent:
                break  # it waits for the posts under way
            payload = len(getattr(env, "payload", None) or "")
            if batch:
                if sync or endpoints != batch[0].endpoints or size + payload > MAX_BATCH_BYTES:
                    break
            elif not sync and self.limits.keep_alive and endpoints:
                limit = min(room, self.poster.batch_limit(endpoints[0]))
            source.popleft()
            batch.append(item)
            size += payload
        return batch

    async def _one(self, lane: _Lane, batch: list[_Queued], acquire: bool = False) -> None:
        assert self._posting is not None
        if acquire:  # started by _post_now: the slot is taken here
            try:
                await self._posting.acquire()
            except asyncio.CancelledError:
                lane.posting -= 1
                lane.in_flight -= len(batch)
                for item in batch:
                    _settle(item.future, _failed(item.envelope, NOT_SENT))
                raise
        try:
            results = await self._post(lane, batch)
            lane.posting -= 1
            lane.in_flight -= len(batch)
            for result in results:
                if getattr(result, "status", None) == DeliveryStatus.DELIVERED and getattr(
                    result, "endpoint", None
                ):
                    for hook in self.on_delivered:
                        hook(lane.target, result.endpoint)
                    break  # one answer of the peer is enough to note
            if (
                not lane.queue
                and not lane.urgent
                and not lane.posting
                and lane.stalled_until <= self.clock.now()
                and self._lanes.get(lane.target) is lane
            ):
                del self._lanes[lane.target]  # idle: gone before its sender hears back
            for (_, _, fut, _, _), result in zip(batch, results, strict=True):
                _settle(fut, result)
        finally:
            self._posting.release()
            for env, _, fut, _, _ in batch:
                _settle(fut, _failed(env, NOT_SENT))

    async def _post(self, lane: _Lane, batch: list[_Queued]) -> list[Any]:
        timeout = self.limits.post_timeout
        env, endpoints, _, sync, _ = batch[0]
        try:
            if len(batch) > 1:
                sending = self.poster.post_many([b.envelope for b in batch], endpoints)
            elif self.limits.keep_alive:
                sending = self.poster.post(env, endpoints, sync)
            else:
                sending = send_exchange_envelope(envelope=env, endpoints=endpoints, sync=sync)
            result = await _within(sending, timeout)
        except asyncio.TimeoutError:
            lane.timeouts += 1
            if lane.timeouts >= self.limits.max_timeouts:
                lane.stalled_until = self.clock.now() + self.limits.stall_for
                LOG.warning(
                    "%s does not answer (%d posts timed out after %g s); sends to it fail for %g s",
                    lane.target[:24],
                    lane.timeouts,
                    timeout,
                    self.limits.stall_for,
                )
            return [_failed(b.envelope, f"no answer within {timeout:g} s") for b in batch]
        except Exception as exc:  # never let a transport error escape
            return [_failed(b.envelope, f"{type(exc).__name__}: {exc}") for b in batch]
        lane.timeouts = 0
        return result if len(batch) > 1 else [result]

    async def run(self) -> None:
        """The agent's dispenser task: the stock queue served the uagents way; when cancelled
        (the agent stops), the stock queue and then the lanes get what is left of the stop
        deadline to finish."""
        stock = asyncio.ensure_future(super().run())
        with contextlib.suppress(asyncio.CancelledError):  # the agent stops
            await asyncio.shield(stock)
        if not stock.done():
            # Cancelled, uagents' dispenser sends what its queue holds, each post with its own
            # timeouts (minutes to a peer that hangs): until the deadline only.
            stock.cancel()
            await asyncio.wait({stock}, timeout=self.stop.left())
            stock.cancel()
            await asyncio.gather(stock, return_exceptions=True)
        await self.drain(self.stop.left(self.limits.drain_timeout))

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for every lane to finish; cancel what is left; close
        the kept connections.

        Args:
            timeout: seconds the lanes get.
        """
        tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
        if not tasks:
            await self.poster.close()
            return
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for t in pending:
            t.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*pending, return_exceptions=True)
        await self.poster.close()


def isolate(
    agent: Any, limits: LaneLimits | None = None, clock: Clock = LOOP_CLOCK
) -> PeerDispenser:
    """Give ``agent`` a :class:`PeerDispenser` (idempotent); returns it.

    Before the agent starts, it becomes the dispenser uagents runs. On a running agent,
    contexts built from then on use it: envelopes not for lanes go to the dispenser the agent
    runs, and a shutdown handler drains the lanes.

    Args:
        agent: the uagents agent.
        limits: the lanes' bounds (None: the defaults; ignored when it has one already).
        clock: the runtime's clock.
    """
    current = _compat.dispenser_of(agent)
    if isinstance(current, PeerDispenser):
        return current
    dispenser = PeerDispenser(
        limits, stock=current if _compat.started(agent) else None, clock=clock
    )
    dispenser.stop = stop_deadline(agent, clock)
    _compat.set_dispenser(agent, dispenser)
    if not _compat.started(agent):
        return dispenser

    async def _drain_lanes(_ctx: Context) -> None:
        await dispenser.drain(dispenser.stop.left(dispenser.limits.drain_timeout))

    agent.on_event("shutdown")(_drain_lanes)
    return dispenser


def pipeline(agent: Any, peer: str) -> None:
    """Let ``agent``'s lane to ``peer`` pipeline (see :meth:`PeerDispenser.pipeline`); nothing
    for an agent without lanes.

    Args:
        agent: the sending ``uagents.Agent``.
        peer: the destination address, a peer that restores order by ``seq``.
    """
    dispenser = _compat.dispenser_of(agent)
    if isinstance(dispenser, PeerDispenser):
        dispenser.pipeline(peer)


def pipeline_from(ctx: Any, peer: str) -> None:
    """:func:`pipeline` for the agent whose context ``ctx`` is (nothing for a Bureau's agent
    or one without lanes).

    Args:
        ctx: a handler's context.
        peer: the destination address, a peer that restores order by ``seq``.
    """
    address = getattr(getattr(ctx, "agent", None), "address", None)
    for sink in _compat.sinks_for(address) if isinstance(address, str) else ():
        if isinstance(sink, Agent):
            pipeline(sink, peer)
            return
