"""The streaming chat plugin: an agent's one Agent Chat Protocol, streaming its replies.

    from agent_stream.uagents import StreamingChat

    async def respond(request, out):              # out: a StreamWriter
        async with out.block("llm", label="Answer") as b:
            async with b.message("text") as m:
                async for token in model(request.text):
                    await m.append(token)

    chat = StreamingChat(respond)
    agent.include(chat, publish_manifest=True)

``StreamingChat`` *is* the agent's chat ``Protocol`` (uagents allows only one per agent); it
handles both ChatMessage and ChatAcknowledgement. For every ChatMessage it:

1. sends a ChatAcknowledgement at once (from a background task, so the inbox never waits);
2. routes it: a ChatMessage from a peer we have an open question to (:meth:`StreamingChat.ask`)
   is part of that reply and goes to its :class:`~agent_stream.uagents.client.Reply`; reply
   traffic nobody waits for any more is dropped (see ``ChatClient.late_window``); anything else
   is a request;
3. runs the responder for a request in a background task (streaming inside the handler would
   block the agent's inbox, its own acknowledgements included). The responder is an async
   function ``(request, out)`` writing to a StreamWriter, or an async generator function
   ``(request)`` yielding text; :func:`wrap_chat_handler` adapts an existing non-streaming chat
   handler;
4. feeds the writer's Messages to a :class:`~agent_stream.adapters.chat.ChatEncoder` (``tagged``
   when the request carries request_tags(), ``session`` when it opened one, ``channels`` from the
   channel policy) and sends each ChatMessage in order, one ``ctx.send`` awaited after the other,
   from one sender task per reply; ChatMessages that queued up behind a slow send go as one
   (:func:`~agent_stream.adapters.chat.coalesce`); a timer task releases what the encoder holds
   (buffered text, metadata waiting to ride along) at its ``next_deadline``;
5. ends every stream whatever happens: the responder raising (an ``error`` message is delivered,
   then every stream ends and the reply ends with status error), cancellation, agent shutdown
   (replies in flight are cancelled and their ends sent before the agent stops).

Replies to a peer that did not declare tag support are sent one at a time (a plain peer never
sees two replies interleaved); tagged replies run concurrently.

Channel policy (``channels=``): a collection of channels this agent is willing to share (e.g.
``{"reasoning"}``); a recipient gets those it asked for in its request tags. A callable
``(request) -> channels`` decides per request. Default: none (reasoning is never sent).

Flow control (``max_in_flight=N``): at most N of a reply's ChatMessages unacknowledged at a time;
a peer that does not acknowledge within ``ack_timeout`` seconds is sent to without the limit.

Caps (what a peer can make the agent hold): ``max_replies_per_sender`` replies at once to one
peer and ``max_replies`` in all; a question over ``max_question_bytes`` (its text, metadata and
resource strings, UTF-8) is not given to the responder. Each such request is answered with an
``error`` message saying why (code ``busy`` or ``question_too_large``; a plain peer reads
"Error (busy): ..."), never with silence; at most ``max_refusals`` of those are sent at once
(a quarter of them to one peer), beyond which requests are dropped with a rate-limited warning
(a flood, not a peer waiting for its answer). At most 1,024
acknowledgements are being sent at once.

Protection: constructing a StreamingChat installs the inbox guard
(:mod:`agent_stream.uagents.guard`); the agent it serves sends through one lane per peer
(:mod:`agent_stream.uagents.lanes`) from its first message on (agents built with
:func:`~agent_stream.uagents.local.local_agent` or ``network_agent`` have both from the start).

Delivery (docs/delivery.md): every ChatMessage of a reply is resent (same msg_id) until
acknowledged, within the ``delivery`` policy's budget, silence being read as loss only from a
peer known to acknowledge; a reply's ChatMessages are kept in a bounded replay buffer for the
asker's ``resend`` op; a tagged reply sends keepalives while open; the asker's ``cancel`` op (or
an EndSessionContent without text) cancels its reply; a question seen before is acknowledged,
not answered again (:mod:`.desk`).

This module is the only code in agent_stream that calls ``ctx.send``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from uagents import Agent, Context, Protocol
from uagents.dispatch import dispatcher
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    chat_protocol_spec,
)
from uagents_core.models import Model
from uagents_core.types import DeliveryStatus

from agent_stream.adapters.chat import (
    ChatDecoder,
    ChatEncoder,
    is_tagged_request,
    opens_session,
    requested_channels,
)
from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.adapters.chat.wire import control_of
from agent_stream.uagents import guard
from agent_stream.uagents.caps import ReplyCaps, question_bytes
from agent_stream.uagents.client import ChatClient, Reply, ask_with, resume_with
from agent_stream.uagents.desk import DeliveryDesk
from agent_stream.uagents.lanes import PeerDispenser, isolate
from agent_stream.uagents.outgoing import Outgoing, PumpLimits, Refused, clock, describe
from agent_stream.uagents.request import (
    ChannelPolicy,
    ChatRequest,
    ReplyStats,
    Responder,
    channels_for,
    invoke,
)
from agent_stream.uagents.wrap import wrap_chat_handler
from agent_stream.writer import StreamWriter

__all__ = [
    "ChannelPolicy",
    "ChatRequest",
    "ReplyStats",
    "Responder",
    "StreamingChat",
    "question_bytes",
    "wrap_chat_handler",
]

LOG = logging.getLogger("agent_stream.uagents")


class StreamingChat(Protocol):  # type: ignore[misc]
    """The agent's chat protocol, streaming replies with agent_stream (see the module doc).

    ``responder``: answers requests (None: this agent only asks). ``channels``: the channel
    policy. ``chunker``: TextChunker options. ``max_in_flight``: flow control (None: off).
    ``ack_timeout``: seconds to wait for an acknowledgement before giving up flow control.
    ``max_buffered``: ChatMessages queued per reply before the responder waits.
    ``drain_timeout``: seconds to finish sending a cancelled reply's ends.
    ``max_failures``: consecutive failed deliveries, none ever delivered, after which a reply
    is abandoned (a peer once reached: when a ChatMessage's redelivery budget runs out).
    ``max_coalesce``: at most this many queued ChatMessages are sent as one (1: never merge).
    ``on_reply_end``: called with a :class:`ReplyStats` when each reply is over.
    ``delivery``: redelivery, replay, keepalive and idle settings
    (:class:`~agent_stream.adapters.chat.delivery.DeliveryPolicy`; see :mod:`.desk`).
    ``max_replies_per_sender`` (4), ``max_replies`` (64), ``max_question_bytes`` (64 KiB; None:
    no cap), ``max_refusals`` (128): the caps (see the module doc).
    """

    def __init__(self, responder: Responder | None = None, *, channels: ChannelPolicy = None,
                 chunker: dict[str, Any] | None = None, max_in_flight: int | None = None,
                 ack_timeout: float = 5.0, max_buffered: int = 256,
                 drain_timeout: float = 5.0, max_failures: int = 3,
                 max_coalesce: int = 32, send_timeout: int = 30,
                 on_reply_end: Callable[[ReplyStats], None] | None = None,
                 max_replies_per_sender: int = 4, max_replies: int = 64,
                 max_question_bytes: int | None = 64 * 1024,
                 max_refusals: int = 128, delivery: DeliveryPolicy | None = None) -> None:
        super().__init__(spec=chat_protocol_spec)
        guard.install()
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.responder = responder
        self.channels = channels
        self.chunker = dict(chunker) if chunker else None
        self.max_in_flight = max_in_flight
        self.ack_timeout = ack_timeout
        self.max_buffered = max(2, max_buffered)
        self.drain_timeout = drain_timeout
        self.max_failures = max(1, max_failures)
        self.max_coalesce = max(1, max_coalesce)
        self.on_reply_end = on_reply_end
        self.send_timeout = send_timeout
        self.client = ChatClient()
        self.sent_chat_messages = 0  # ChatMessages this plugin delivered (acks not counted)
        self._outgoing: set[Outgoing] = set()
        self._in_flight: dict[str, Outgoing] = {}
        self._lanes: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._bound: set[int] = set()
        self._late_lanes: list[PeerDispenser] = []
        self.caps = ReplyCaps(max_replies_per_sender=max_replies_per_sender,
                              max_replies=max_replies, max_question_bytes=max_question_bytes,
                              max_refusals=max_refusals)
        self._dropped_log = guard.RateLimitedLog(LOG, 5, 10.0)
        self.desk = DeliveryDesk(delivery)
        self.on_message(ChatMessage)(self._on_chat)
        self.on_message(ChatAcknowledgement)(self._on_ack)

    # -- public -----------------------------------------------------------------------------------
    @property
    def active(self) -> int:
        """Replies being streamed right now."""
        return len(self._outgoing)

    async def ask(self, ctx: Context, destination: str, question: str | ChatMessage, *,
                  session: bool = True, channels: Collection[str] = (),
                  timeout: float = 120.0, settle: float = 0.5,
                  decoder: ChatDecoder | None = None, deliver_within: float = 5.0,
                  idle_timeout: float | None = None) -> Reply:
        """Send ``question`` to ``destination``; returns its :class:`Reply` once delivered.

        ``channels``: extra channels to ask for (e.g. ``{"reasoning"}``); ``session``: open a
        session (StartSessionContent). An undelivered question is retried for
        ``deliver_within`` seconds (a peer just started may not listen yet), then
        DeliveryError is raised. The reply's ChatMessages are acknowledged and decoded as they
        arrive. ``idle_timeout``: seconds of silence after which a tagged reply is ``lost``
        (default: the delivery policy's, 15 s).
        """
        self._bind(ctx)
        return await ask_with(self._send, ctx, destination, question, self.client,
                              session=session, channels=channels, timeout=timeout,
                              settle=settle, decoder=decoder, deliver_within=deliver_within,
                              idle_timeout=idle_timeout, delivery=self.desk.policy)

    async def resume(self, ctx: Context, destination: str, conversation: str, *,
                     timeout: float = 120.0, idle_timeout: float | None = None) -> Reply:
        """The reply of ``conversation`` (a question's msg_id) sent again from its start, for
        an asker that lost its state (same address; see :func:`.client.resume_with`)."""
        self._bind(ctx)
        return await resume_with(self._send, ctx, destination, conversation, self.client,
                                 timeout=timeout, idle_timeout=idle_timeout,
                                 delivery=self.desk.policy)

    async def shutdown(self) -> None:
        """End every reply in flight (cancelled; their streams end) and every open question.

        Runs automatically when the agent shuts down."""
        self.client.cancel_all()
        tasks = [o.task for o in list(self._outgoing) if o.task is not None]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=self.drain_timeout + 1.0)
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=1.0)
        for lanes in self._late_lanes:  # the agent only stops the dispenser it started with
            await lanes.drain(self.drain_timeout)

    # -- handlers ---------------------------------------------------------------------------------
    async def _on_chat(self, ctx: Context, sender: str, msg: ChatMessage) -> None:
        self._bind(ctx)
        if len(self._tasks) < 1024:
            self._spawn(self._send(ctx, sender,
                                   ChatAcknowledgement(acknowledged_msg_id=msg.msg_id)))
        session = str(ctx.session) if ctx.session is not None else None
        op = control_of(msg)
        if op is not None:  # an asker's resend/cancel (issue 11)
            work = self.desk.control(sender, op, self._outgoing,
                                     functools.partial(self._send, ctx, sender))
            if work is not None:
                self._spawn(work)
            return
        reply = self.client.route(sender, msg, session)
        if reply is not None:
            reply.feed(msg)
            return
        if self.desk.session_cancels(sender, msg, self._outgoing):
            return
        if self.client.is_late(sender, msg):
            ctx.logger.debug(f"late reply traffic from {sender} dropped")
            return
        if self.responder is None:
            ctx.logger.debug(f"request from {sender} ignored: this agent has no responder")
            return
        if self.desk.seen_before(sender, msg):  # resent: acknowledged again, answered once
            conv = str(msg.msg_id)
            for o in self._outgoing:
                if o.peer == sender and o.conversation == conv:
                    o.duplicates += 1
            ctx.logger.debug(f"question {conv} from {sender} seen before; not answered again")
            return
        request = ChatRequest(
            sender=sender, message=msg, session=session, tagged=is_tagged_request(msg),
            opens_session=opens_session(msg), channels=requested_channels(msg),
            storage=getattr(ctx, "storage", None), logger=ctx.logger, _ctx=ctx)
        refusal = self.caps.over_cap(request)
        if refusal is not None:
            self._refuse(ctx, request, refusal)
            return
        try:
            out = self._outgoing_for(ctx, request)
        except Exception as exc:  # a bad channel policy or chunker options: say so, go on
            ctx.logger.error(f"cannot answer {sender}: {describe(exc)}")
            return
        self._outgoing.add(out)
        self.caps.took(sender)
        out.start()

    async def _on_ack(self, ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        key = str(msg.acknowledged_msg_id)
        self.desk.note_ack(sender)
        out = self._in_flight.pop(key, None)
        if out is not None:
            out.acknowledged(key)
            return
        self.client.acknowledged(sender, key)

    # -- internals --------------------------------------------------------------------------------
    async def _send(self, ctx: Context, destination: str, message: Model) -> tuple[bool, str]:
        """The one place agent_stream sends: ``ctx.send``, awaited; (delivered?, detail)."""
        try:
            status = await ctx.send(destination, message, timeout=self.send_timeout)
        except Exception as exc:  # never let a transport error escape into a handler
            return False, describe(exc)
        ok = getattr(status, "status", None) in (DeliveryStatus.DELIVERED, DeliveryStatus.SENT)
        if ok and isinstance(message, ChatMessage):
            self.sent_chat_messages += 1
        return ok, str(getattr(status, "detail", status))

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _lane(self, peer: str) -> asyncio.Lock:
        lane = self._lanes.get(peer)
        if lane is None:
            lane = self._lanes[peer] = asyncio.Lock()
        return lane

    def _outgoing_for(self, ctx: Context, request: ChatRequest) -> Outgoing:
        """The pump of one reply: its encoder, and the plugin's send, lane and registries."""
        conversation = str(request.message.msg_id)
        encoder = ChatEncoder(conversation, tagged=request.tagged,
                              channels=channels_for(self.channels, request),
                              session=request.opens_session, chunker=self.chunker)
        peer = request.sender

        async def send(chat: ChatMessage) -> tuple[bool, str]:
            return await self._send(ctx, peer, chat)

        async def respond(out: StreamWriter) -> None:
            assert self.responder is not None
            await invoke(self.responder, request, out)

        return Outgoing(
            peer, conversation, encoder, respond=respond, send=send, limits=self._limits,
            # A peer without tag support gets one reply at a time, ends included.
            lane=None if request.tagged else self._lane(peer),
            in_flight=self._in_flight, on_finished=self._finished,
            delivery=self.desk.policy, peer_acks=self.desk.peer_acks(peer, request.tagged),
            replay=self.desk.buffer_for(peer, conversation), keepalive=request.tagged,
            on_produced=self._produced)

    @property
    def _limits(self) -> PumpLimits:
        return PumpLimits(max_buffered=self.max_buffered, max_coalesce=self.max_coalesce,
                          max_in_flight=self.max_in_flight, ack_timeout=self.ack_timeout,
                          drain_timeout=self.drain_timeout, max_failures=self.max_failures)

    def _refuse(self, ctx: Context, request: ChatRequest, refusal: Refused) -> Outgoing | None:
        """Answer ``request`` with an error reply (bounded: see the module doc)."""
        sender = request.sender
        if not self.caps.may_refuse(sender):
            self._dropped_log.warning("request from %s dropped (%s; too many refusals being "
                                      "sent)", sender[:80], refusal.code)
            return None
        conversation = str(request.message.msg_id)
        encoder = ChatEncoder(conversation, tagged=request.tagged,
                              session=request.opens_session)

        async def send(chat: ChatMessage) -> tuple[bool, str]:
            return await self._send(ctx, sender, chat)

        async def respond(out: StreamWriter) -> None:
            raise refusal

        def done(out: Outgoing) -> None:
            self.caps.refused(sender)

        limits = PumpLimits(max_failures=1, drain_timeout=self.drain_timeout)
        out = Outgoing(sender, conversation, encoder, respond=respond, send=send,
                       limits=limits, on_finished=done)
        out.start()
        return out

    def _produced(self, out: Outgoing) -> None:
        """The responder is done: its slot is free (what is left is redelivery)."""
        self.caps.produced(out.peer)

    def _finished(self, out: Outgoing) -> None:
        self._outgoing.discard(out)
        self.desk.ended(out.peer, out.conversation)
        if self.on_reply_end is not None:
            try:
                ka = out.keepalive
                self.on_reply_end(ReplyStats(
                    out.peer, out.conversation, out.status or "completed", out.sent, out.failed,
                    out.peak_in_flight, clock() - out.started, out.redelivery.resends,
                    out.duplicates, out.repairs, ka.sent if ka is not None else 0,
                    out.at_risk()))
            except Exception as exc:  # a bad callback must not break the agent
                LOG.warning("on_reply_end failed: %s", describe(exc))
        lane = self._lanes.get(out.peer)
        if lane is not None and not lane.locked() and not any(
                o.peer == out.peer for o in self._outgoing):
            del self._lanes[out.peer]

    def _bind(self, ctx: Context) -> None:
        """Hook :meth:`shutdown` into the agent's shutdown (found through uagents' dispatcher)."""
        address = getattr(getattr(ctx, "agent", None), "address", None)
        if address is None:
            return
        for sink in list(dispatcher.sinks.get(address, ())):
            if isinstance(sink, Agent) and id(sink) not in self._bound:
                self._bound.add(id(sink))
                if not isinstance(getattr(sink, "_dispenser", None), PeerDispenser):
                    self._late_lanes.append(isolate(sink))

                async def _on_shutdown(_ctx: Context) -> None:
                    await self.shutdown()

                sink.on_event("shutdown")(_on_shutdown)

