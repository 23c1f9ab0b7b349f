"""One reply's pump: the writer's Messages -> ChatEncoder -> a send queue -> one send at a time.

:class:`Outgoing` streams one reply to one peer. Everything it needs from outside is passed in:

- ``respond(out)``: writes the reply into a :class:`~agent_stream.writer.StreamWriter`;
- ``send(chat) -> (delivered?, detail)``: delivers one ChatMessage to the peer (never raises);
- ``encoder``: the reply's :class:`~agent_stream.adapters.chat.ChatEncoder`;
- ``serial``: a lock held for the whole reply (a plain peer gets one reply at a time), or None;
- ``in_flight``: the registry ``{msg_id: Outgoing}`` acknowledgements are routed through (the
  owner calls :meth:`Outgoing.acknowledged`);
- ``on_finished(outgoing)``: called once when the reply is over;
- ``limits``: :class:`PumpLimits`;
- ``open_replies()``: how many replies the agent streams right now (its load), or None;
- ``terms()``: the peer's quota and pace (:mod:`._quotas`), awaited before the first send, or None.

A sender task sends the queued ChatMessages in order, each awaited (what queued up behind a slow
send goes as one, :func:`~agent_stream.adapters.chat.coalesce`), resends what is not
acknowledged as :class:`~agent_stream.adapters.chat.delivery.Redelivery` decides (``delivery``,
``peer_acks``), keeps what it sent in ``replay`` and sends keepalives (``keepalive``); the reply
is over once everything is acknowledged or its budget ran out. A timer task releases what the
encoder holds at its ``next_deadline``.

Load-shaped batching: every ChatMessage is a signed envelope and an acknowledgement back, so an
agent streaming many replies at once spends its CPU per ChatMessage, not per token. With R replies
open, what a reply's encoder releases after a send waits up to ``R / agent_rate`` seconds (at most
``max_hold``) from when the first of it came, and goes as one: so at most one ChatMessage every
hold, and nothing held longer than one. A hold ends early when ``hold_chars`` characters of text
wait (the chunker's default ``max_chars``) or the reply ends. A reply's first ChatMessage and its
first text are never held (the asker's sign of life and time to first text): the tool calls and
progress that come before the first text go with it unless it is a hold away (a thousand replies
no longer send them as an envelope of their own just before their first texts). With few replies
open the hold is below ``min_hold`` and nothing waits: text goes as the chunker releases it (at
most its ``max_delay`` late).

Per-peer quota (``terms``): every send to the peer (first, again, keepalive, repair) takes the
peer's pace slot, shared by all replies to it; the next ChatMessage is built only once a slot is
free, so what queued meanwhile goes as one (fewer, larger ChatMessages, the same text), as long as
it stays under the quota's ``max_envelope_bytes``; and a ChatMessage waits at least the quota's
``ack_timeout`` for its acknowledgement.

Every stream ends whatever happens: the responder raising (an ``error`` message, then the ends
with status error), cancellation, the peer unreachable. When the agent stops
(:meth:`Outgoing.stop`), the reply's ends are posted once, no acknowledgement is awaited (the
agent's server no longer takes them), and what is not posted by the agent's stop deadline is
given up.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat import ChatEncoder, coalesce
from agent_stream.adapters.chat.ack_clock import PeerAckClock
from agent_stream.adapters.chat.delivery import DeliveryPolicy, Keepalive, Redelivery, ReplayBuffer
from agent_stream.adapters.chat.quota import envelope_bytes
from agent_stream.adapters.chat.wire import OP_KEEPALIVE, content_class, control, seq_span
from agent_stream.message import error as error_message
from agent_stream.uagents._chat_json import chat_json
from agent_stream.uagents._clock import LOOP_CLOCK, Clock
from agent_stream.uagents._wakeup import Wakeup
from agent_stream.uagents.responder._quotas import PeerPace, PeerTerms
from agent_stream.uagents.transport._lanes import urgent
from agent_stream.writer import StreamWriter

__all__ = ["Outgoing", "PumpLimits", "Refused", "describe"]

LOG = logging.getLogger("agent_stream.uagents")

Send = Callable[[ChatMessage], Awaitable[tuple[bool, str]]]
Respond = Callable[[StreamWriter], Awaitable[None]]


def describe(exc: BaseException) -> str:
    """``Type: message`` (or the type alone when the message is empty).

    Args:
        exc: the exception.
    """
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Refused(Exception):
    """Raised by a responder that will not answer.

    The reply is an ``error`` message with this text and ``code``, then the streams end with
    status error (nothing is logged as a failure).

    Args:
        text: what the asker is told.
        code: the error's code.
    """

    def __init__(self, text: str, code: str = "refused") -> None:
        super().__init__(text)
        self.code = code


@dataclass(frozen=True)
class PumpLimits:
    """How one reply is sent: its send queue, coalescing and acknowledgements.

    Attributes:
        max_buffered: ChatMessages queued before the responder waits.
        max_coalesce: at most this many queued ChatMessages sent as one, and only while their
            content items stay within ``max_coalesce_items`` (the inbox guard refuses
            ChatMessages of over 1,024).
        max_coalesce_items: content items of one coalesced ChatMessage.
        max_in_flight: ChatMessages unacknowledged at a time (None: no limit).
        ack_timeout: seconds without an acknowledgement before that limit is given up.
        drain_timeout: seconds to send a cancelled reply's ends.
        max_failures: consecutive failed deliveries, none ever delivered, after which the reply
            is abandoned (a reached peer is abandoned when one ChatMessage's redelivery budget
            runs out).
        agent_rate: load-shaped batching (module doc): ChatMessages per second all the agent's
            open replies together aim at (0: no batching for load).
        max_hold: the longest a reply's next ChatMessage waits for more text, in seconds.
        min_hold: a hold shorter than this is not applied (few replies open).
        hold_chars: text waiting (characters) that ends a hold early.
    """

    max_buffered: int = 256
    max_coalesce: int = 32
    max_coalesce_items: int = 256
    max_in_flight: int | None = None
    ack_timeout: float = 5.0
    drain_timeout: float = 5.0
    max_failures: int = 5  # a policy's tries: at 3, a 10% 503 rate lost ~1 reply in 1,000
    agent_rate: float = 250.0
    max_hold: float = 4.0
    min_hold: float = 0.05
    hold_chars: int = 400


class Outgoing:
    """One reply being streamed to one peer: encoder, send queue, sender and timer tasks.

    Args:
        peer: the asker's address.
        conversation: the question's msg_id.
        encoder: the reply's ChatEncoder.
        respond: writes the reply into a StreamWriter.
        send: delivers one ChatMessage to the peer, ``-> (delivered?, detail)``, never raising.
        limits: the pump's limits.
        serial: a lock held for the whole reply (a plain peer gets one reply at a time), or
            None.
        in_flight: the registry ``{msg_id: Outgoing}`` acknowledgements are routed through
            (None: a registry of its own).
        on_finished: called once when the reply is over.
        delivery: the delivery policy (resends, keepalives; None: the defaults).
        peer_acks: the peer is known to acknowledge (unacknowledged ChatMessages are resent).
        replay: keeps what was sent, as its JSON (:func:`.chat_json`), for repair requests
            (None: no repair).
        keepalive: send keepalives when nothing else went for a while.
        on_produced: called once the responder is done (delivery may go on a while).
        tap: sees every Message the responder writes (e.g. to keep the answer).
        open_replies: how many replies the agent streams right now, for load-shaped batching
            (None: no batching for load).
        ack_timer: how long the peer has lately taken to acknowledge (None: the policy's
            ``ack_timeout`` alone).
        pipelined: the peer restores order by ``seq`` (a tagged asker): up to and with the
            first text, the reply's sends do not wait for one another.
        clock: the runtime's clock (:mod:`agent_stream.uagents._clock`).
        terms: the peer's quota and pace, awaited once before the first send (None: no quota).
    """

    def __init__(
        self,
        peer: str,
        conversation: str,
        encoder: ChatEncoder,
        *,
        respond: Respond,
        send: Send,
        limits: PumpLimits,
        serial: asyncio.Lock | None = None,
        in_flight: dict[str, Outgoing] | None = None,
        on_finished: Callable[[Outgoing], None] | None = None,
        delivery: DeliveryPolicy | None = None,
        peer_acks: bool = False,
        replay: ReplayBuffer[str] | None = None,
        keepalive: bool = False,
        on_produced: Callable[[Outgoing], None] | None = None,
        tap: Callable[[Any], None] | None = None,
        open_replies: Callable[[], int] | None = None,
        ack_timer: PeerAckClock | None = None,
        pipelined: bool = False,
        clock: Clock = LOOP_CLOCK,
        terms: Callable[[], Awaitable[PeerTerms]] | None = None,
    ) -> None:
        self.clock = clock
        self.peer = peer
        self._terms = terms
        self._pace: PeerPace | None = None  # the peer's send slots (its quota's ceiling)
        self._max_envelope: int | None = None  # coalescing stays under it
        self._warned_size = False
        self.pipelined = pipelined
        self._early: set[asyncio.Task[bool]] = set()  # sends before the first text, in flight
        self._failures = 0  # consecutive failed deliveries
        self.conversation = conversation
        self.encoder = encoder
        self.limits = limits
        self._respond = respond
        self._send = send
        self._serial = serial
        self._in_flight: dict[str, Outgoing] = in_flight if in_flight is not None else {}
        self._on_finished = on_finished
        self.queue: deque[ChatMessage] = deque()
        self.unacked: set[str] = set()
        self.sent = 0
        self.failed = 0
        self.peak_in_flight = 0
        self.started = self.clock.now()
        self.dead = False  # the peer cannot be reached: stop sending
        self.status: str | None = None
        self.task: asyncio.Task[None] | None = None
        self._closing = False
        self._stopping = False  # the agent stops (:meth:`stop`)
        self._sender: asyncio.Task[None] | None = None
        self._armed: float | None = None
        self._wake_sender = Wakeup(clock)
        self._wake_timer = Wakeup(clock)
        self._space = asyncio.Event()
        self._space.set()
        self._acked = Wakeup(clock)
        self._acks_off = False
        # delivery: resend until acknowledged, replay buffer, keepalives, figures
        self.delivery = delivery or DeliveryPolicy()
        # A reply to a peer that acknowledges but does not restore order goes one ChatMessage
        # at a time (_window): each one's second budget counts the acknowledgement that let it
        # go, or for the first the question, as the asker's sign of life.
        self.redelivery: Redelivery[str, ChatMessage] = Redelivery(
            self.delivery,
            peer_acks=peer_acks,
            timer=ack_timer,
            repairable=pipelined,
            in_order=limits.max_in_flight == 1 or (not limits.max_in_flight and not keepalive),
        )
        self.redelivery.heard()  # the question came: the asker was there
        self.replay = replay
        self.keepalive = Keepalive(self.delivery.keepalive, self.clock.now()) if keepalive else None
        self.duplicates = 0  # the question arrived again (acknowledged, not answered twice)
        self.repairs = 0  # repair requests served from the replay buffer
        self._high = 0  # the last seq sent
        self._delivered: set[str] = set()
        self._on_produced = on_produced  # the responder is done; delivery may go on a while
        self._tap = tap  # sees every Message the responder writes (e.g. to keep the answer)
        self.telemetry: Any = None  # the owner's per-reply telemetry (agent_stream.telemetry)
        self._open_replies = open_replies
        # load-shaped batching: what is queued waits up to _hold_for seconds from _queued_at
        self._hold_for = 0.0
        self._queued_at = 0.0
        self._queued_chars = 0  # text waiting in the queue
        self._text_sent = False  # the reply's first text went (it is never held)
        self.holds = 0  # times the next ChatMessage waited for more text (the agent was busy)
        self._holding = False  # the sender waits for more text (only what ends that wakes it)

    def start(self) -> asyncio.Task[None]:
        """Run :meth:`run` in a task of its own (kept in ``task``); returns it."""
        self.task = asyncio.create_task(self.run())
        self.task.add_done_callback(_quiet)
        return self.task

    # -- the writer's sink ------------------------------------------------------------------------
    async def sink(self, msg: Any) -> None:
        """Take one Message the responder wrote: encode it and queue what it gives.

        Waits while the send queue is over ``max_buffered``.

        Args:
            msg: the Message.
        """
        if self._tap is not None:
            self._tap(msg)
        self._emit(self.encoder.feed(msg, self.clock.now()))
        if self.encoder.next_deadline != self._armed:
            self._wake_timer.set()
        if len(self.queue) > self.limits.max_buffered and not self.dead:
            self._space.clear()
            await self._space.wait()

    async def flush(self, thread_id: str | None, message_id: str) -> None:
        """Send now the text the encoder holds for one message (the writer's ``flush``: a
        relayed chunk goes on as it came, not re-buffered).

        Args:
            thread_id: the message's thread (None: none).
            message_id: the message's id.
        """
        self._emit(self.encoder.flush(thread_id, message_id, self.clock.now()))
        if self.encoder.next_deadline != self._armed:
            self._wake_timer.set()

    def _emit(self, chats: list[ChatMessage]) -> None:
        if chats and not self.dead:
            if not self.queue:
                self._queued_at = self.clock.now()
            self.queue.extend(chats)
            self._queued_chars += sum(map(_text_chars, chats))
            # Holding, the sender wakes only when this ends the hold: woken for every
            # ChatMessage released meanwhile, it woke ~7 times per send at a thousand replies.
            if not self._holding or self._hold() <= 0:
                self._wake_sender.set()

    def _hold(self) -> float:
        """Seconds the next ChatMessage should wait for more text (0 or less: go now)."""
        chars = self._queued_chars
        if self._closing or self.dead or chars >= self.limits.hold_chars:
            return 0.0
        if chars and not self._text_sent:  # the first text: the asker waits for it
            return 0.0
        return self._queued_at + self._hold_for - self.clock.now()

    def _held_after_send(self) -> None:
        """Set the hold the agent's load calls for (see the module doc): what the encoder
        releases from now on waits that long from when the first of it came."""
        rate = self.limits.agent_rate
        if self._open_replies is None or rate <= 0:
            return
        hold = min(self.limits.max_hold, self._open_replies() / rate)
        self._hold_for = hold if hold >= self.limits.min_hold else 0.0
        if self.queue:  # what the send left queued waits from now
            self._queued_at = self.clock.now()

    # -- tasks ------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Run the responder and stream its reply; every stream ends, whatever happens."""
        sender = self._sender = asyncio.create_task(self._send_loop())
        timer = asyncio.create_task(self._timer_loop())
        status, err = "completed", None
        cancelled = False
        lock = self._serial
        holding = False
        try:
            if lock is not None:
                await lock.acquire()
                holding = True
            async with StreamWriter(
                self.sink, request_id=self.conversation, flush=self.flush
            ) as out:
                try:
                    await self._respond(out)
                except Exception as exc:
                    # Say what went wrong before the streams end with status error.
                    text, code = (
                        (str(exc), exc.code)
                        if isinstance(exc, Refused)
                        else (describe(exc), "responder_error")
                    )
                    with contextlib.suppress(Exception):
                        await out.send(error_message(text, code=code))
                    raise
        except asyncio.CancelledError:
            status, cancelled = "cancelled", True
        except Refused as exc:
            status, err = "error", str(exc)
            LOG.debug("refused %s: %s", self.peer, err)
        except Exception as exc:
            status, err = "error", describe(exc)
            LOG.warning("responder failed for %s: %s", self.peer, err, exc_info=exc)
        finally:
            self.status = status
            with contextlib.suppress(Exception):
                self._emit(self.encoder.close(self.clock.now(), status=status, error=err))
            self._closing = True
            self._wake_sender.set()
            timer.cancel()
            if self._on_produced is not None:
                self._on_produced(self)
            try:
                if cancelled or self.dead:
                    await self.clock.wait_for(asyncio.shield(sender), self.limits.drain_timeout)
                else:
                    await asyncio.shield(sender)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                sender.cancel()
            if holding and lock is not None:
                lock.release()
            for key in self.unacked:
                self._in_flight.pop(key, None)
            if self._on_finished is not None:
                self._on_finished(self)
        if cancelled:
            raise asyncio.CancelledError

    async def _send_loop(self) -> None:
        """Send the queue in order; resend what the peer did not acknowledge (redelivery
        budget), a keepalive when nothing else went for a while; end once all is settled."""
        try:
            await self._send_all()
        finally:
            early = list(self._early)
            if self.dead:
                for t in early:
                    t.cancel()
            if early:
                await asyncio.gather(*early, return_exceptions=True)

    async def _apply_terms(self) -> None:
        """Learn the peer's quota before the first send (the responder runs meanwhile)."""
        if self._terms is None:
            return
        try:
            terms = await self._terms()
        except Exception as exc:  # no quota rather than no reply
            LOG.warning("reply to %s: its quota is unknown (%s)", self.peer[:80], describe(exc))
            return
        quota = terms.quota
        self._pace = terms.pace
        self._max_envelope = quota.max_envelope_bytes
        policy = self.delivery
        if quota.ack_timeout is not None and quota.ack_timeout > policy.ack_timeout:
            policy = dataclasses.replace(
                policy,
                ack_timeout=quota.ack_timeout,
                max_delay=max(policy.max_delay, quota.ack_timeout),
            )
            self.delivery = self.redelivery.policy = policy  # nothing was sent yet

    async def _post(self, chat: ChatMessage) -> tuple[bool, str]:
        """One send, in the peer's pace slot when it has a ceiling."""
        pace = self._pace
        if pace is None:
            return await self._send(chat)
        async with pace.slot():
            return await self._send(chat)

    async def _send_all(self) -> None:
        limits = self.limits
        rd = self.redelivery
        await self._apply_terms()
        while True:
            for key, chat in rd.due(self.clock.now()):
                self._count(await self._deliver(key, chat))
            if rd.given_up or (self._failures >= limits.max_failures and not self._delivered):
                # A ChatMessage's budget ran out, or nobody ever listened: stop.
                self._abandon(
                    f"a ChatMessage was not acknowledged within {self.delivery.tries} tries in "
                    f"{self.delivery.within:g} s"
                    if rd.given_up
                    else f"{self._failures} deliveries failed and none ever succeeded"
                )
                return
            ka = self.keepalive
            if ka is not None and not self.dead and not self._stopping and ka.due(self.clock.now()):
                # ahead of queued text to an asker that restores order: it is how the asker
                # tells a busy responder from a dead one (late, a thousand replies went lost)
                with urgent() if self.pipelined else contextlib.nullcontext():
                    await self._post(control(OP_KEEPALIVE, self.conversation, high=str(self._high)))
            if not self.queue:
                self._space.set()
                if self.dead or (self._closing and not rd.pending and not self._early):
                    return
                if self._stopping and self._closing and not self._early:
                    return  # the agent stops: all is posted; no acknowledgement can come
                self._wake_sender.clear()
                wake = [
                    d
                    for d in (rd.next_deadline, ka.next_deadline if ka is not None else None)
                    if d is not None
                ]
                timeout = max(0.0, min(wake) - self.clock.now()) if wake else None
                await self._wake_sender.wait(timeout)
                continue
            hold = self._hold()
            if hold > 0:  # the agent is busy: let more text join this ChatMessage
                self.holds += 1
                self._wake_sender.clear()
                wake = [
                    d
                    for d in (rd.next_deadline, ka.next_deadline if ka is not None else None)
                    if d is not None
                ]
                timeout = min([hold, *(max(0.0, d - self.clock.now()) for d in wake)])
                self._holding = True
                try:
                    await self._wake_sender.wait(timeout)
                finally:
                    self._holding = False
                continue
            pace = self._pace
            if pace is not None and pace.delay() > 0 and not self.dead:
                # the peer's ceiling: what queues until its next slot goes with this one
                await pace.ready()
                continue
            # What queued up behind a slow send goes as one ChatMessage (same text, same order).
            n, items = 1, len(self.queue[0].content)
            cap = self._max_envelope
            size = _payload_bytes(self.queue[0]) if cap is not None else 0
            if cap is not None and envelope_bytes(size) > cap and not self._warned_size:
                self._warned_size = True
                LOG.warning(
                    "reply to %s: a ChatMessage of ~%d bytes is over the peer's envelope "
                    "limit (%d); sent as it is",
                    self.peer[:80],
                    envelope_bytes(size),
                    cap,
                )
            while n < min(len(self.queue), limits.max_coalesce):
                items += len(self.queue[n].content)
                if items > limits.max_coalesce_items:
                    break
                if cap is not None:
                    size += _payload_bytes(self.queue[n])
                    if envelope_bytes(size) > cap:
                        break
                n += 1
            batch = [self.queue.popleft() for _ in range(n)]
            chars = sum(map(_text_chars, batch))
            self._queued_chars = max(0, self._queued_chars - chars)
            # Up to its first text, all a reply sends is the asker's only sign of life (its
            # start, tool calls, progress): a few small ChatMessages that go ahead of other
            # replies' queued text. Queued behind it, one of them held that reply's first text
            # back ~5 s at a thousand replies.
            before_text = not self._text_sent
            self._text_sent = self._text_sent or chars > 0
            chat = batch[0] if n == 1 else coalesce(batch)
            if len(self.queue) <= limits.max_buffered // 2:
                self._space.set()
            await self._window()
            key = str(chat.msg_id)
            self.unacked.add(key)
            self._in_flight[key] = self
            self.peak_in_flight = max(self.peak_in_flight, len(self.unacked))
            span = seq_span(chat)
            if span is not None:
                self._high = max(self._high, span[1])
                if self.replay is not None:  # kept as JSON: a fifth of the objects' memory
                    kept = chat_json(chat, keep=True)  # the send that follows reuses it
                    self.replay.add(span[0], span[1], kept, sys.getsizeof(kept))
            if before_text and self.pipelined and not chars:
                # The asker restores order: the first text does not wait for the post of what
                # went just before it (the reply's start, tool calls), which at a thousand
                # replies took a second. The first text itself is posted from here, not from a
                # task of its own: a busy loop's turn (a third of a second at a thousand
                # replies) sooner.
                while len(self._early) >= 4:
                    await asyncio.wait(self._early, return_when=asyncio.FIRST_COMPLETED)
                with urgent():
                    task = asyncio.ensure_future(self._deliver(key, chat))
                self._early.add(task)
                task.add_done_callback(self._early_done)
            else:
                with urgent() if before_text else contextlib.nullcontext():
                    self._count(await self._deliver(key, chat))
            self._held_after_send()

    def _count(self, delivered: bool) -> None:
        self._failures = 0 if delivered else self._failures + 1

    def _early_done(self, task: asyncio.Task[bool]) -> None:
        self._early.discard(task)
        if not task.cancelled() and task.exception() is None:
            self._count(task.result())
        self._wake_sender.set()

    async def _deliver(self, key: str, chat: ChatMessage) -> bool:
        """One send (first or again) of ChatMessage ``key``, noted for redelivery."""
        ok, detail = await self._post(chat)
        now = self.clock.now()
        if key in self.unacked:
            self.redelivery.sent(key, chat, ok, now)
        if self.keepalive is not None:
            self.keepalive.note_sent(now)
        if ok:
            if key not in self._delivered:
                self._delivered.add(key)
                self.sent += 1
            return True
        self.failed += 1
        LOG.info("reply to %s: a ChatMessage was not delivered (will retry): %s", self.peer, detail)
        return False

    def _abandon(self, why: str) -> None:
        """Nobody is listening: stop the responder and drop what is left."""
        LOG.warning("reply to %s abandoned: %s", self.peer, why)
        self.dead = True
        self.queue.clear()
        self.redelivery.forget()
        self._space.set()
        if self.task is not None and not self._closing:
            self.task.cancel()

    async def resend(self, chats: list[ChatMessage]) -> None:
        """Send ``chats`` again (a repair request), as they were.

        Args:
            chats: the ChatMessages, from the replay buffer.
        """
        self.repairs += 1
        for chat in chats:
            await self._post(chat)

    def cancel(self) -> bool:
        """Cancel the reply (the responder's task); False when it is already over."""
        if self.task is None or self.task.done() or self._closing:
            return False
        self.task.cancel()
        return True

    def stop(self, within: float) -> None:
        """The agent stops: cancel the reply (when it is still being written), post its ends
        and what is queued once, await no acknowledgement, and give up what is not posted
        within ``within`` seconds (what is left of the agent's stop deadline).

        Args:
            within: seconds to the agent's stop deadline.
        """
        if self.task is None or self.task.done() or self._stopping:
            return
        self._stopping = True
        self._wake_sender.set()  # a sender waiting for acknowledgements looks again
        self._acked.set()
        if not self._closing:
            self.task.cancel()
        self.clock.call_later(max(0.0, within), self._give_up)

    def _give_up(self) -> None:
        """The agent's stop deadline passed: what is still being posted is given up."""
        for t in (self._sender, *self._early):
            if t is not None and not t.done():
                t.cancel()

    async def _window(self) -> None:
        """Wait while ``max_in_flight`` are unacknowledged (resending what is due meanwhile).
        A reply to a plain peer known to acknowledge goes one ChatMessage at a time: a resent
        one then never arrives after a later one (a plain peer cannot reorder)."""
        rd = self.redelivery
        limit = self.limits.max_in_flight or (
            1 if self.keepalive is None and rd.peer_acks else None
        )
        if not limit or self._acks_off or self._stopping:
            return
        waited = self.clock.now()
        while len(self.unacked) >= limit and not self.dead:
            for key, chat in rd.due(self.clock.now()):
                await self._deliver(key, chat)
            if rd.given_up or len(self.unacked) < limit:
                return
            now = self.clock.now()
            if not rd.peer_acks and now - waited >= self.limits.ack_timeout:
                self._acks_off = True
                LOG.info(
                    "%s does not acknowledge ChatMessages; flow control off for this reply",
                    self.peer,
                )
                return
            timeout = self.limits.ack_timeout
            d = rd.next_deadline
            if d is not None:
                timeout = min(timeout, d - now)
            self._acked.clear()
            await self._acked.wait(max(0.0, timeout))
            if self._stopping:
                return  # the agent stops: no acknowledgement can come

    def acknowledged(self, key: str) -> None:
        """The peer acknowledged the ChatMessage ``key`` (its msg_id).

        Args:
            key: the acknowledged ChatMessage's msg_id.
        """
        self.unacked.discard(key)
        if (
            self.redelivery.acknowledged(key, self.clock.now()) or not self.redelivery.pending
        ) and not self._holding:  # an acknowledgement does not end a hold
            self._wake_sender.set()
        self._acked.set()

    def at_risk(self) -> float:
        """Seconds during which some ChatMessage of the reply was possibly lost."""
        return self.redelivery.at_risk(self.clock.now())

    async def _timer_loop(self) -> None:
        """Release the chunker's buffered text at its deadline (a sentence never waits)."""
        enc = self.encoder
        while not enc.finished:
            d = enc.next_deadline
            self._armed = d
            self._wake_timer.clear()
            timeout = None if d is None else max(0.0, d - self.clock.now())
            await self._wake_timer.wait(timeout)
            d = enc.next_deadline
            now = self.clock.now()
            if d is not None and d <= now and not enc.finished:
                self._emit(enc.poll(now))


def _text_chars(chat: ChatMessage) -> int:
    """Characters of text ``chat`` carries."""
    return sum(len(i.text) for i in chat.content if content_class(i) is TextContent)


def _payload_bytes(chat: ChatMessage) -> int:
    """The size of ``chat``'s JSON payload, UTF-8."""
    return len(chat_json(chat).encode())


def _quiet(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: run() logs what matters
