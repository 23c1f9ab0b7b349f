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

1. sends a ChatAcknowledgement at once (from a background task, so the inbox never waits); to
   a peer that reads coalesced ones, those that come while one is on its way go together in
   the next (:mod:`agent_stream.adapters.chat.acks`);
2. routes it: a ChatMessage from a peer we have an open question to (:meth:`StreamingChat.ask`)
   is part of that reply and goes to its :class:`~agent_stream.uagents.asker._client.Reply`; reply
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
   (replies in flight are cancelled and their ends posted before the agent stops, within the
   agent's one stop deadline, :mod:`._shutdown`: a peer that hangs costs the stop at most that).

Replies to a peer that did not declare tag support are sent one at a time (a plain peer never
sees two replies interleaved); tagged replies run concurrently.

Channel policy (``channels=``): a collection of channels this agent is willing to share (e.g.
``{"reasoning"}``); a recipient gets those it asked for in its request tags. A callable
``(request) -> channels`` decides per request. Default: none (reasoning is never sent).

Settings (``settings=``, a frozen :class:`~agent_stream.uagents.ChatSettings`) hold every limit.
Flow control (``pump.max_in_flight=N``): at most N of a reply's ChatMessages unacknowledged at a
time; a peer that does not acknowledge within ``pump.ack_timeout`` seconds is sent to without the
limit.

Caps (``caps``, what a peer can make the agent hold): ``max_replies_per_sender`` replies at once to
one peer and ``max_replies`` in all; a question over ``max_question_bytes`` (its text, metadata and
resource strings, UTF-8) is not given to the responder. Each such request is answered with an
``error`` message saying why (code ``busy`` or ``question_too_large``; a plain peer reads "Error
(busy): ..."), never with silence; at most ``max_refusals`` of those are sent at once (a quarter of
them to one peer), the next ``8 * max_refusals`` wait and are answered in turn as those end (a
burst of questions gets its answers), beyond which requests are dropped with a rate-limited
warning (a flood, not a peer waiting for its answer). A peer in ``caps.trusted`` (a gateway asking
for many users) has its own replies-at-once cap and the whole refusal budget. At most 1,024
acknowledgements are being sent at once.

Quotas (``settings.quotas``, :class:`~agent_stream.uagents.PeerQuotas`): a per-peer ceiling on
ChatMessages per second and an envelope size limit; a peer reached through Agentverse (its
resolved endpoint is Agentverse's mailbox or proxy, or it is listed) gets the Agentverse preset:
fewer, larger ChatMessages with the same text (:mod:`.responder._quotas`).

Protection: building a StreamingChat changes nothing outside it. The agent it serves is
protected (:func:`~agent_stream.uagents._protection.protect`: the inbox guard, the HTTP edge caps
and per-peer send lanes for chat traffic, on that agent only) when the plugin first sees it, if
it was not already; agents built with :func:`~agent_stream.uagents.local._agents.local_agent` or
``network_agent`` are protected from the start.

Retrofit: an agent that already has a chat protocol includes
``StreamingChat.from_protocol(proto)`` in its place (its ChatMessage handler becomes the
responder, see :func:`~agent_stream.uagents.responder._wrap.wrap_chat_handler`).

Delivery (docs/delivery.md): every ChatMessage of a reply is resent (same msg_id) until
acknowledged, within the ``settings.delivery`` policy's budget, silence being read as loss only
from a peer known to acknowledge; a reply's ChatMessages are kept in a bounded replay buffer for the
asker's ``resend`` op; a tagged reply sends keepalives while open; the asker's ``cancel`` op (or
an EndSessionContent without text) cancels its reply; a question seen before is acknowledged,
not answered again (:mod:`.responder._delivery`).

Fleet (``fleet=``, a :class:`~agent_stream.uagents.Fleet`): when several processes serve
this agent's address behind a load balancer, a question is answered only by the replica that
claims it, acknowledgements and ops for a reply held by another replica are forwarded to it, and
each reply's ChatMessages are mirrored for a ``resend`` after its replica died. None: nothing of
it runs.

Replies, acknowledgements and questions are sent from here; the inbox guard
(:mod:`.transport._guard`) also calls ``ctx.send``, for the error it answers a refused payload
with.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import importlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, cast

from uagents import Agent, Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    chat_protocol_spec,
)
from uagents_core.identity import parse_identifier
from uagents_core.models import Model
from uagents_core.types import DeliveryStatus

from agent_stream import telemetry
from agent_stream.adapters.chat import (
    LEAN_GATHER,
    ChatDecoder,
    ChatEncoder,
)
from agent_stream.adapters.chat.acks import (
    AckBatcher,
    ack_for,
    acked_ids,
    reads_coalesced,
)
from agent_stream.adapters.chat.incoming import read_chat
from agent_stream.conversation import Turn, history_to_json
from agent_stream.uagents import _compat
from agent_stream.uagents._protection import guard_of, is_protected, protect
from agent_stream.uagents._ratelog import RateLimitedLog
from agent_stream.uagents._request import (
    ChannelPolicy,
    ChatRequest,
    ReplyStats,
    Responder,
    channels_for,
    invoke,
)
from agent_stream.uagents._settings import ChatSettings
from agent_stream.uagents._shutdown import StopDeadline, stop_deadline
from agent_stream.uagents.asker._client import ChatClient, Reply, ask_with, resume_with
from agent_stream.uagents.fleet._fleet import Fleet, Forwarded
from agent_stream.uagents.responder._caps import ReplyCaps
from agent_stream.uagents.responder._delivery import ResponderDelivery
from agent_stream.uagents.responder._memory import Memory
from agent_stream.uagents.responder._open_replies import OpenReplies
from agent_stream.uagents.responder._pump import Outgoing, PumpLimits, Refused, describe
from agent_stream.uagents.responder._quotas import PeerTerms, QuotaBook
from agent_stream.uagents.responder._reply_text import AnswerText
from agent_stream.uagents.responder._sessions import MemorySessionStore, SessionStore
from agent_stream.uagents.responder._wrap import wrap_chat_handler
from agent_stream.uagents.transport._http_edge import answering_from
from agent_stream.uagents.transport._lanes import pipeline_from
from agent_stream.writer import StreamWriter

__all__ = ["StreamingChat"]

#: Seconds a retrofitted handler's question waits for its acknowledgement to be posted before
#: the handler runs (a loopback post takes milliseconds; a hanging asker must not hold the inbox).
ACK_FIRST_WAIT = 0.5

LOG = logging.getLogger("agent_stream.uagents")

_SLACK = 0.05  # past the stop deadline, for replies to be seen giving up at it
#: Seconds leaving the fleet gets at least, past the stop deadline too: its liveness key removed,
#: the other replicas take over this one's askers at once rather than after its heartbeat.
_FLEET_LEAVE = 0.25
WAITING_REFUSALS = 8  # refusals that may wait, per refusal being sent


class StreamingChat(Protocol):  # type: ignore[misc]
    """The agent's chat protocol, streaming replies with agent_stream (see the module doc).

    Args:
        responder: answers requests (None: this agent only asks).
        settings: every limit (:class:`~agent_stream.uagents.ChatSettings`: pump, caps,
            delivery, protection, send timeout); the defaults when None.
        channels: the channel policy (which extra channels, e.g. ``{"reasoning"}``, this agent
            shares with a peer that asks for them).
        chunker: TextChunker options for the text it sends.
        lean_gather: to an asker that reads the lean wire, seconds after its oldest
            character that released text may wait to go with later text in one ChatMessage
            (the gather window, :data:`~agent_stream.adapters.chat.LEAN_GATHER`; a message's
            first text never waits, structure no longer than today).
        on_reply_end: called with a :class:`ReplyStats` when each reply is over.
        sessions: where conversation turns are kept (a
            :class:`~agent_stream.uagents.SessionStore`; default: in memory, within
            ``settings.sessions``).
        fleet: this replica's :class:`~agent_stream.uagents.Fleet`, when several
            processes serve this agent's address behind a load balancer (None: it is alone).
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        settings: ChatSettings | None = None,
        channels: ChannelPolicy = None,
        chunker: Mapping[str, Any] | None = None,
        lean_gather: float = LEAN_GATHER,
        on_reply_end: Callable[[ReplyStats], None] | None = None,
        sessions: SessionStore | None = None,
        fleet: Fleet | None = None,
    ) -> None:
        super().__init__(spec=chat_protocol_spec)
        if isinstance(lean_gather, bool) or not 0 <= lean_gather < float("inf"):
            raise ValueError(f"lean_gather must be a finite number >= 0, got {lean_gather!r}")
        # The chunker's modules, imported now rather than by the first reply's encoder: then,
        # a thousand questions arriving at once waited ~60 ms behind the import.
        importlib.import_module("agent_stream.chunking")
        self.settings = settings if settings is not None else ChatSettings()
        self.sessions: SessionStore = (
            sessions if sessions is not None else MemorySessionStore(self.settings.sessions)
        )
        self.memory = Memory(self.sessions, self.settings.history)
        self.responder = responder
        self.channels = channels
        self.chunker = dict(chunker) if chunker else None
        self.lean_gather = lean_gather
        self.on_reply_end = on_reply_end
        self.clock = self.settings.clock
        self.client = ChatClient(clock=self.clock)
        self.sent_chat_messages = 0  # ChatMessages this plugin delivered (acks not counted)
        self._open_replies = OpenReplies()
        self._in_flight: dict[str, Outgoing] = {}
        self._serial: dict[str, asyncio.Lock] = {}  # untagged peers: one reply at a time
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ack_first = False  # acknowledge before answering (from_protocol: as its handler did)
        self._bound: set[int] = set()
        self._stop = StopDeadline(clock=self.clock)  # the agent's, once bound to it
        self._told_withheld = False
        self.caps = ReplyCaps(self.settings.caps)
        self._dropped_log = RateLimitedLog(LOG, 5, 10.0)
        # refusals over max_refusals, answered as earlier ones end (a burst, not a flood)
        self._refusals_waiting: deque[tuple[Context, ChatRequest, Refused]] = deque()
        self.delivery = ResponderDelivery(self.settings.delivery, self.clock)
        self.quotas = QuotaBook(self.settings.quotas, self.clock)  # per-peer ceilings
        self.acks = AckBatcher()  # acknowledgements coalesced for peers that read them
        self.fleet = fleet
        self._ctx: Context | None = None  # the latest, for ops another replica forwards
        pump = self.settings.pump
        self._limits = dataclasses.replace(
            pump,
            max_buffered=max(2, pump.max_buffered),
            max_coalesce=max(1, pump.max_coalesce),
            max_failures=max(1, pump.max_failures),
        )
        self.on_message(ChatMessage)(self._on_chat)
        self.on_message(ChatAcknowledgement)(self._on_ack)

    @classmethod
    def from_protocol(
        cls,
        protocol: Protocol,
        *,
        label: str | None = None,
        settings: ChatSettings | None = None,
        channels: ChannelPolicy = None,
        chunker: Mapping[str, Any] | None = None,
        lean_gather: float = LEAN_GATHER,
        on_reply_end: Callable[[ReplyStats], None] | None = None,
    ) -> StreamingChat:
        """A StreamingChat that answers with ``protocol``'s own ChatMessage handler.

        For an agent that already has a chat ``Protocol(spec=chat_protocol_spec)``: include
        ``StreamingChat.from_protocol(proto)`` instead of ``proto``. The handler runs unchanged
        (see :func:`wrap_chat_handler`): what it sends the asker with ``ctx.send`` becomes the
        streamed reply, its EndSessionContent ends the session, its acknowledgements are left
        to the plugin.

        Args:
            protocol: the existing chat protocol whose ChatMessage handler answers.
            label: the label of the reply's block (None: the agent's name).
            settings: every limit, as for the class (None: the defaults).
            channels: the channel policy, as for the class.
            chunker: TextChunker options for the text it sends.
            lean_gather: the lean wire's gather window, as for the class.
            on_reply_end: called with a :class:`ReplyStats` when each reply is over.

        Returns:
            The plugin to include in the agent instead of ``protocol``.

        Raises:
            ValueError: ``protocol`` has no ChatMessage handler.
        """
        handler = _chat_handler_of(protocol)
        chat = cls(
            None,
            settings=settings,
            channels=channels,
            chunker=chunker,
            lean_gather=lean_gather,
            on_reply_end=on_reply_end,
        )
        chat.responder = wrap_chat_handler(handler, chat.send, label=label)
        # as the handler did itself: the question is acknowledged before it runs (a handler
        # that blocks the event loop, as a synchronous model call does, would hold it back)
        chat._ack_first = True
        return chat

    # -- public -----------------------------------------------------------------------------------
    @property
    def active(self) -> int:
        """Replies being streamed right now."""
        return len(self._open_replies)

    async def ask(
        self,
        ctx: Context,
        destination: str,
        question: str | ChatMessage,
        *,
        session: bool = True,
        channels: Collection[str] = (),
        timeout: float = 120.0,
        settle: float = 10.0,
        decoder: ChatDecoder | None = None,
        deliver_within: float = 5.0,
        idle_timeout: float | None = None,
        history: Sequence[Turn] | None = None,
    ) -> Reply:
        """Send ``question`` to ``destination``; returns its :class:`Reply` once delivered.

        An undelivered question is retried for ``deliver_within`` seconds (a peer just started may
        not listen yet). The reply's ChatMessages are acknowledged and decoded as they arrive.

        Args:
            ctx: the handler's context (the agent that asks).
            destination: the peer's address (or ``prefix://address``).
            question: the question's text, or a ChatMessage sent as it is.
            session: open a session (StartSessionContent) with the question.
            channels: extra channels to ask for (e.g. ``{"reasoning"}``).
            timeout: seconds the whole reply may take before it ends ``timeout``.
            settle: seconds of quiet that end a plain (untagged) reply once some of its answer
                arrived (it also ends at EndSessionContent).
            decoder: the ChatDecoder that decodes the reply (None: a new one with default limits).
            deliver_within: seconds during which an undelivered question is retried.
            idle_timeout: seconds of silence after which a tagged reply is ``lost`` (None: the
                delivery policy's, 15 s).
            history: the conversation so far as this asker keeps it (the responder's
                ``request.history`` instead of what it stored); None: the responder's own.

        Returns:
            The reply, streaming; iterate it or await ``reply.wait()``.

        Raises:
            DeliveryError: the question was not delivered within ``deliver_within`` seconds.
        """
        self._bind(ctx)
        # Questions, their control ops and acknowledgements depend on no order between them
        # (each reply's own order is its seq): the lane to the peer may pipeline, so that a
        # gateway asking for a thousand users does not queue them one at a time.
        _, _, address = parse_identifier(destination)
        pipeline_from(ctx, address or destination)
        return await ask_with(
            self.send,
            ctx,
            destination,
            question,
            self.client,
            session=session,
            channels=channels,
            timeout=timeout,
            settle=settle,
            decoder=decoder,
            deliver_within=deliver_within,
            idle_timeout=idle_timeout,
            delivery=self.delivery.policy,
            history=None if history is None else history_to_json(history),
        )

    async def resume(
        self,
        ctx: Context,
        destination: str,
        conversation: str,
        *,
        timeout: float = 120.0,
        idle_timeout: float | None = None,
    ) -> Reply:
        """The reply of ``conversation`` sent again from its start.

        For an asker that lost its state (same address; see :func:`.client.resume_with`).

        Args:
            ctx: the handler's context (the agent that asks).
            destination: the peer that was answering.
            conversation: the question's msg_id.
            timeout: seconds the whole reply may take.
            idle_timeout: seconds of silence after which the reply is ``lost`` (None: the delivery
                policy's).

        Returns:
            The reply, streaming again from its first message.

        Raises:
            DeliveryError: the resend request was not delivered.
        """
        self._bind(ctx)
        return await resume_with(
            self.send,
            ctx,
            destination,
            conversation,
            self.client,
            timeout=timeout,
            idle_timeout=idle_timeout,
            delivery=self.delivery.policy,
        )

    async def join(self, ctx: Context) -> None:
        """Bind to the agent now rather than at its first message: protection, the shutdown
        hook and, with a fleet, its heartbeat and subscription (a startup handler).

        Args:
            ctx: the agent's context (a startup handler's).
        """
        self._bind(ctx)

    async def shutdown(self) -> None:
        """End every reply in flight (cancelled; their ends posted) and every open question,
        all within the agent's stop deadline (:mod:`._shutdown`), which this begins when no
        earlier stage did: what is not posted by then is given up.

        Runs automatically when the agent shuts down."""
        self._stop.begin()
        self.client.cancel_all()
        outs = list(self._open_replies)
        for out in outs:
            out.stop(self._stop.left())
        tasks = [o.task for o in outs if o.task is not None and not o.task.done()]
        if tasks:  # (each gives up at the deadline by itself: a little slack to see it do so)
            with contextlib.suppress(asyncio.TimeoutError):
                await self.clock.wait_for(asyncio.wait(tasks), self._stop.left() + _SLACK)
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            with contextlib.suppress(asyncio.TimeoutError):
                await self.clock.wait_for(asyncio.wait(pending), self._stop.left())
        if self.fleet is not None:  # (its Redis calls have bounds of their own)
            with contextlib.suppress(asyncio.TimeoutError):
                await self.clock.wait_for(self.fleet.close(), max(self._stop.left(), _FLEET_LEAVE))

    # -- handlers ---------------------------------------------------------------------------------
    async def _on_chat(self, ctx: Context, sender: str, msg: ChatMessage) -> None:
        self._bind(ctx)
        view = read_chat(msg)  # read once: every room below routes this view
        if len(self._tasks) < 1024:
            if view.coalesced_acks:
                self.acks.reads(sender)
            ids = self.acks.ack(sender, str(msg.msg_id))
            if ids is not None:
                acked = self._spawn(self._acknowledge(ctx, sender, ids))
                if self._ack_first:  # before the handler runs, but never held by a slow peer
                    with contextlib.suppress(asyncio.TimeoutError):
                        await self.clock.wait_for(asyncio.shield(acked), ACK_FIRST_WAIT)
        session = str(ctx.session) if ctx.session is not None else None
        op = view.op
        if op is not None:  # an asker asks for a resend or a cancel
            if self.fleet is not None and not self._holds(sender, op.get("conversation", "")):
                # another replica holds it (forwarded), or held it (served from its mirror)
                reply_to = functools.partial(self.send, ctx, sender)
                self._spawn(self.fleet.route(sender, dict(op), reply_to))
                return
            work = self.delivery.control(
                sender,
                op,
                self._open_replies.find(sender, op.get("conversation", "")),
                functools.partial(self.send, ctx, sender),
            )
            if work is not None:
                self._spawn(work)
            return
        reply = self.client.route(sender, view, session)
        if reply is not None:
            reply.feed(view)
            if reply.tagged:  # it restores order by seq: our acks to it may be pipelined;
                pipeline_from(ctx, sender)  # and its envelopes, which we asked for, are
                answering_from(ctx, sender)  # admitted at a trusted peer's rate
            return
        ends = session is not None and view.ends_session
        if ends:
            self._spawn(self.memory.forget((sender, cast(str, session))))
        if self.delivery.session_cancels(sender, view, self._open_replies.of_peer(sender)):
            return
        if self.client.is_late(sender, view):
            ctx.logger.debug(f"late reply traffic from {sender} dropped")
            return
        if self.responder is None:
            ctx.logger.debug(f"request from {sender} ignored: this agent has no responder")
            return
        if self.delivery.seen_before(sender, view.msg_id):  # resent: acknowledged, answered once
            conv = view.msg_id
            for o in self._open_replies.find(sender, conv):
                o.duplicates += 1
            ctx.logger.debug(f"question {conv} from {sender} seen before; not answered again")
            return
        if self.fleet is not None and not await self.fleet.claim(sender, str(msg.msg_id)):
            ctx.logger.debug(f"question {msg.msg_id} from {sender} taken by another replica")
            return
        request = ChatRequest(
            sender=sender,
            message=msg,
            session=session,
            tagged=view.tagged,
            opens_session=view.opens_session,
            channels=view.channels,
            storage=getattr(ctx, "storage", None),
            logger=ctx.logger,
            ctx=ctx,
            card_response=view.card_response,
        )
        if request.tagged:  # the asker restores order by seq: its lane may pipeline
            pipeline_from(ctx, sender)
        refusal = self.caps.over_cap(request)
        if refusal is not None:
            self._refuse(ctx, request, refusal)
            return
        try:
            out = self._outgoing_for(
                ctx,
                request,
                fold=request.tagged and view.reads_folds,
                lean=request.tagged and view.reads_lean,
                cuts=request.tagged and view.reads_cuts,
            )
        except Exception as exc:  # a bad channel policy or chunker options: say so, go on
            ctx.logger.error(f"cannot answer {sender}: {describe(exc)}")
            return
        self._open_replies.add(out)
        self.caps.took(sender)
        out.start()

    async def _on_ack(self, ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        self.delivery.note_ack(sender)
        if reads_coalesced(msg):
            self.acks.reads(sender)
        for key in acked_ids(msg):
            out = self._in_flight.get(key)
            if out is not None and out.peer == sender:  # only its asker acknowledges it
                del self._in_flight[key]
                out.acknowledged(key)
            elif (
                out is None and not self.client.acknowledged(sender, key) and self.fleet is not None
            ):
                self.fleet.forward_ack(sender, key)  # a ChatMessage another replica sent

    async def _acknowledge(self, ctx: Context, peer: str, ids: list[str] | None) -> None:
        """Send ``ids``' acknowledgement, then whatever came for ``peer`` meanwhile."""
        try:
            while ids:
                await self.send(ctx, peer, ack_for(ids))
                ids = self.acks.sent(peer)
        finally:
            if ids:  # stopped midway: later acknowledgements to the peer must not wait on this
                self.acks.forget(peer)

    def _on_forwarded(self, fwd: Forwarded) -> None:
        """An acknowledgement or op another replica of this agent received for a reply here."""
        if fwd.kind == "ack":
            out = self._in_flight.get(fwd.key)
            if out is not None and out.peer == fwd.sender:
                del self._in_flight[fwd.key]
                self.delivery.note_ack(fwd.sender)
                out.acknowledged(fwd.key)
            return
        ctx = self._ctx
        if ctx is None:
            return
        send = functools.partial(self.send, ctx, fwd.sender)
        op = dict(fwd.op)
        replies = self._open_replies.find(fwd.sender, op.get("conversation", ""))
        work = self.delivery.control(fwd.sender, op, replies, send)
        if work is not None:
            self._spawn(work)

    def _holds(self, sender: str, conversation: str) -> bool:
        """Whether this replica has ``sender``'s reply ``conversation`` open or replayable."""
        if self._open_replies.find(sender, conversation):
            return True
        return self.delivery.replay.get((sender, conversation), self.clock.now()) is not None

    # -- internals --------------------------------------------------------------------------------
    async def send(self, ctx: Context, destination: str, message: Model) -> tuple[bool, str]:
        """Send ``message`` to ``destination`` the way the plugin does.

        ``ctx.send`` awaited, never raising: the one place agent_stream sends.

        Args:
            ctx: the context to send with.
            destination: the peer's address.
            message: the model to send.

        Returns:
            (delivered?, detail): whether it was delivered or sent, and the transport's detail.
        """
        try:
            status = await _compat.send_model(ctx, destination, message, self.settings.send_timeout)
        except Exception as exc:  # never let a transport error escape into a handler
            return False, describe(exc)
        ok = getattr(status, "status", None) in (DeliveryStatus.DELIVERED, DeliveryStatus.SENT)
        if ok and isinstance(message, ChatMessage):
            self.sent_chat_messages += 1
        return ok, str(getattr(status, "detail", status))

    def _tell_withheld(self, request: ChatRequest, encoder: ChatEncoder) -> None:
        """Say once, to the agent's author, that an asker asked for a channel this agent wrote
        but its channel policy keeps (the asker's reply says so too: stream_end ``withheld``)."""
        kept = set(encoder.withheld_channels) & request.channels
        if not kept or self._told_withheld:
            return
        self._told_withheld = True
        LOG.info(
            "%s asked for %s, which this agent wrote but does not share: "
            "StreamingChat(..., channels={%s}) shares it with peers that ask",
            request.sender[:24],
            ", ".join(sorted(kept)),
            ", ".join(repr(c) for c in sorted(kept)),
        )

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _serial_lock(self, peer: str) -> asyncio.Lock:
        lock = self._serial.get(peer)
        if lock is None:
            lock = self._serial[peer] = asyncio.Lock()
        return lock

    def _outgoing_for(
        self,
        ctx: Context,
        request: ChatRequest,
        *,
        fold: bool = False,
        lean: bool = False,
        cuts: bool = False,
    ) -> Outgoing:
        """The pump of one reply: its encoder (``fold``: the asker reads folded items; ``lean``:
        the lean wire; ``cuts``: cut text on it), and the plugin's send, lane and registries."""
        conversation = str(request.message.msg_id)
        encoder = ChatEncoder(
            conversation,
            tagged=request.tagged,
            channels=channels_for(self.channels, request),
            session=request.opens_session,
            chunker=self.chunker,
            fold=fold,
            lean=lean,
            cuts=cuts,
            lean_gather=self.lean_gather,
        )
        peer = request.sender

        fleet = self.fleet

        async def send(chat: ChatMessage) -> tuple[bool, str]:
            if fleet is not None:  # another replica can serve a resend if this one dies
                fleet.mirror(peer, conversation, chat, session=encoder.session)
            return await self.send(ctx, peer, chat)

        answer = AnswerText()  # what memory and telemetry keep: the text alone
        watch = telemetry.reply_started(
            str(getattr(ctx.agent, "name", "") or "agent"),
            peer=peer,
            conversation=conversation,
            question=request.message,
        )

        def tap(msg: Any) -> None:
            answer.feed(msg)
            watch.tap(msg)

        async def respond(out: StreamWriter) -> None:
            assert self.responder is not None
            asked = await self.memory.with_history(request)
            try:
                with watch.active():
                    await invoke(self.responder, asked, out)
            finally:
                self._tell_withheld(request, encoder)
            # Remembered before the writer closes, so before the reply's last ChatMessage.
            await self.memory.remember(asked, answer.text())
            if asked.session_ended:  # the responder ended the session: the reply says so
                encoder.session = True

        async def terms() -> PeerTerms:
            return await self.quotas.terms_for(peer, functools.partial(_endpoints_of, ctx))

        out = Outgoing(
            peer,
            conversation,
            encoder,
            respond=respond,
            send=send,
            limits=self._limits,
            # A peer without tag support gets one reply at a time, ends included.
            serial=None if request.tagged else self._serial_lock(peer),
            in_flight=self._in_flight,
            on_finished=self._finished,
            delivery=self.delivery.policy,
            peer_acks=self.delivery.peer_acks(peer, request.tagged),
            replay=self.delivery.buffer_for(peer, conversation),
            keepalive=request.tagged,
            on_produced=self._produced,
            tap=tap,
            open_replies=lambda: len(self._open_replies),  # its load: busier, fewer ChatMessages
            ack_timer=self.delivery.ack_clock.of(peer),
            pipelined=request.tagged,
            clock=self.clock,
            terms=terms if self.quotas.quotas.needs_lookup else None,
        )
        out.telemetry = (watch, answer)
        return out

    def _refuse(self, ctx: Context, request: ChatRequest, refusal: Refused) -> Outgoing | None:
        """Answer ``request`` with an error reply (bounded: see the module doc)."""
        sender = request.sender
        if not self.caps.may_refuse(sender):
            if len(self._refusals_waiting) < WAITING_REFUSALS * self.caps.max_refusals:
                self._refusals_waiting.append((ctx, request, refusal))  # answered in turn
                return None
            self._dropped_log.warning(
                "request from %s dropped (%s; too many refusals being sent and waiting)",
                sender[:80],
                refusal.code,
            )
            return None
        conversation = str(request.message.msg_id)
        encoder = ChatEncoder(conversation, tagged=request.tagged, session=request.opens_session)

        async def send(chat: ChatMessage) -> tuple[bool, str]:
            return await self.send(ctx, sender, chat)

        async def respond(out: StreamWriter) -> None:
            raise refusal

        telemetry.refused(refusal.code)

        def done(out: Outgoing) -> None:
            self.caps.refused(sender)
            while self._refusals_waiting and self.caps.may_refuse(
                self._refusals_waiting[0][1].sender
            ):
                self.caps.refused(self._refusals_waiting[0][1].sender)  # _refuse counts it
                self._refuse(*self._refusals_waiting.popleft())

        limits = PumpLimits(max_failures=1, drain_timeout=self._limits.drain_timeout)
        out = Outgoing(
            sender,
            conversation,
            encoder,
            respond=respond,
            send=send,
            limits=limits,
            on_finished=done,
            clock=self.clock,
        )
        out.start()
        return out

    def _produced(self, out: Outgoing) -> None:
        """The responder is done: its slot is free (what is left is redelivery)."""
        self.caps.produced(out.peer)

    def _finished(self, out: Outgoing) -> None:
        self._open_replies.discard(out)
        if out.telemetry is not None:
            watch, answer = out.telemetry
            ka = out.keepalive
            watch.end(
                out.status or "completed",
                chat_messages=out.sent,
                resends=out.redelivery.resends,
                keepalives=ka.sent if ka else 0,
                repairs=out.repairs,
                answer=answer.text,
            )
        self.delivery.ended(out.peer, out.conversation)
        if self.fleet is not None:
            self.fleet.mirror_ended(out.peer, out.conversation)
        if self.on_reply_end is not None:
            try:
                ka = out.keepalive
                self.on_reply_end(
                    ReplyStats(
                        out.peer,
                        out.conversation,
                        out.status or "completed",
                        out.sent,
                        out.failed,
                        out.peak_in_flight,
                        self.clock.now() - out.started,
                        out.redelivery.resends,
                        out.duplicates,
                        out.repairs,
                        ka.sent if ka is not None else 0,
                        out.at_risk(),
                    )
                )
            except Exception as exc:  # a bad callback must not break the agent
                LOG.warning("on_reply_end failed: %s", describe(exc))
        lock = self._serial.get(out.peer)
        if lock is not None and not lock.locked() and not self._open_replies.has_peer(out.peer):
            del self._serial[out.peer]

    def _bind(self, ctx: Context) -> None:
        """Protect the agent this plugin serves (when it is not yet) and hook :meth:`shutdown`
        into its shutdown. The agent is found by its address among uagents' dispatch sinks."""
        self._ctx = ctx
        address = ctx.agent.address
        agent = next((s for s in _compat.sinks_for(address) if isinstance(s, Agent)), None)
        if agent is None or id(agent) in self._bound:
            return
        self._bound.add(id(agent))
        self._stop = stop_deadline(agent, self.clock)
        if self.fleet is not None:
            # (and it ends, for their askers, the replies of replicas that died)
            self.fleet.start(address, self._on_forwarded, functools.partial(self.send, ctx))
        if not is_protected(agent):
            protect(agent, self.settings.protection, clock=self.clock)
        guard = guard_of(agent)
        if guard is not None:  # a reply's liveness counts from when its messages arrive
            guard.on_chat.append(self.client.arrived)

        async def _on_shutdown(_ctx: Context) -> None:
            await self.shutdown()

        agent.on_event("shutdown")(_on_shutdown)


def _chat_handler_of(protocol: Protocol) -> Callable[[Any, str, ChatMessage], Awaitable[None]]:
    """``protocol``'s ChatMessage handler; a ValueError saying what is wrong otherwise."""
    digest = Model.build_schema_digest(ChatMessage)
    handler = protocol.signed_message_handlers.get(
        digest
    ) or protocol.unsigned_message_handlers.get(digest)
    if handler is None:
        raise ValueError(
            f"StreamingChat.from_protocol: protocol {protocol.name!r} has no "
            "@on_message(ChatMessage) handler"
        )
    return cast(Callable[[Any, str, ChatMessage], Awaitable[None]], handler)


async def _endpoints_of(ctx: Context, peer: str) -> list[str]:
    """The endpoints ``peer`` resolves to for the agent of ``ctx`` (none when unknown)."""
    agent = next((s for s in _compat.sinks_for(ctx.agent.address) if isinstance(s, Agent)), None)
    if agent is None:
        return []
    _, endpoints = await _compat.resolver_of(agent).resolve(peer)
    return [str(e) for e in endpoints or ()]
