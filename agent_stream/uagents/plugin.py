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

This module is the only code in agent_stream that calls ``ctx.send``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from uagents import Agent, Context, Protocol
from uagents.dispatch import dispatcher
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    MetadataContent,
    ResourceContent,
    StartSessionContent,
    TextContent,
    chat_protocol_spec,
)
from uagents_core.models import Model
from uagents_core.types import DeliveryStatus

from agent_stream.adapters.chat import (
    ChatDecoder,
    ChatEncoder,
    coalesce,
    is_tagged_request,
    opens_session,
    requested_channels,
)
from agent_stream.message import error as error_message
from agent_stream.uagents.client import ChatClient, Reply, ask_with
from agent_stream.writer import StreamWriter

__all__ = [
    "ChannelPolicy",
    "ChatRequest",
    "ReplyStats",
    "Responder",
    "StreamingChat",
    "wrap_chat_handler",
]

LOG = logging.getLogger("agent_stream.uagents")


@dataclass(frozen=True)
class ChatRequest:
    """A request a responder answers.

    ``sender``: the asking agent's address; ``message``: its ChatMessage; ``session``: the
    envelope session; ``tagged``: it declared agent_stream tag support; ``opens_session``: it
    carried StartSessionContent; ``channels``: the extra channels it asked for; ``storage`` and
    ``logger``: the agent's (from the handler's context). Sending is the plugin's job.
    """

    sender: str
    message: ChatMessage
    session: str | None = None
    tagged: bool = False
    opens_session: bool = False
    channels: frozenset[str] = frozenset()
    storage: Any = None
    logger: Any = None
    _ctx: Any = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The question: the request's TextContent items concatenated."""
        return "".join(i.text for i in self.message.content if isinstance(i, TextContent))


@dataclass(frozen=True)
class ReplyStats:
    """How one streamed reply went: given to ``on_reply_end`` when it is over.

    ``chat_messages`` delivered, ``failed`` deliveries, ``peak_in_flight`` (most ChatMessages
    unacknowledged at once), ``duration`` in seconds, ``status`` completed | error | cancelled.
    """

    peer: str
    conversation: str
    status: str
    chat_messages: int
    failed: int
    peak_in_flight: int
    duration: float


Responder = (Callable[[ChatRequest, StreamWriter], Awaitable[None]]
             | Callable[[ChatRequest], AsyncIterator[str]])
ChannelPolicy = Collection[str] | Callable[[ChatRequest], Collection[str] | None] | None


def _clock() -> float:
    return time.monotonic()


class _Outgoing:
    """One reply being streamed to one peer: encoder, send queue, sender and timer tasks."""

    def __init__(self, plugin: StreamingChat, ctx: Context, request: ChatRequest,
                 channels: Collection[str]) -> None:
        self.plugin = plugin
        self.ctx = ctx
        self.request = request
        self.peer = request.sender
        self.conversation = str(request.message.msg_id)
        self.encoder = ChatEncoder(self.conversation, tagged=request.tagged, channels=channels,
                                   session=request.opens_session, chunker=plugin.chunker)
        self.queue: deque[ChatMessage] = deque()
        self.unacked: set[str] = set()
        self.sent = 0
        self.failed = 0
        self.peak_in_flight = 0
        self.started = _clock()
        self.dead = False  # the peer cannot be reached: stop sending
        self.status: str | None = None
        self.task: asyncio.Task[None] | None = None
        self._closing = False
        self._armed: float | None = None
        self._wake_sender = asyncio.Event()
        self._wake_timer = asyncio.Event()
        self._space = asyncio.Event()
        self._space.set()
        self._acked = asyncio.Event()
        self._acks_off = False

    # -- the writer's sink ------------------------------------------------------------------------
    async def sink(self, msg: Any) -> None:
        self._emit(self.encoder.feed(msg, _clock()))
        if self.encoder.next_deadline != self._armed:
            self._wake_timer.set()
        if len(self.queue) > self.plugin.max_buffered and not self.dead:
            self._space.clear()
            await self._space.wait()

    def _emit(self, chats: list[ChatMessage]) -> None:
        if chats and not self.dead:
            self.queue.extend(chats)
            self._wake_sender.set()

    # -- tasks ------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Run the responder and stream its reply; every stream ends, whatever happens."""
        sender = asyncio.create_task(self._send_loop())
        timer = asyncio.create_task(self._timer_loop())
        status, err = "completed", None
        cancelled = False
        # A peer without tag support gets one reply at a time, ends included.
        lane = self.plugin._lane(self.peer) if not self.request.tagged else None
        holding = False
        try:
            if lane is not None:
                await lane.acquire()
                holding = True
            async with StreamWriter(self.sink, request_id=self.conversation) as out:
                try:
                    await self.plugin._invoke(self.request, out)
                except Exception as exc:
                    # Say what went wrong before the streams end with status error.
                    with contextlib.suppress(Exception):
                        await out.send(error_message(_describe(exc), code="responder_error"))
                    raise
        except asyncio.CancelledError:
            status, cancelled = "cancelled", True
        except Exception as exc:
            status, err = "error", _describe(exc)
            LOG.warning("responder failed for %s: %s", self.peer, err, exc_info=exc)
        finally:
            self.status = status
            with contextlib.suppress(Exception):
                self._emit(self.encoder.close(_clock(), status=status, error=err))
            self._closing = True
            self._wake_sender.set()
            timer.cancel()
            try:
                if cancelled or self.dead:
                    await asyncio.wait_for(asyncio.shield(sender), self.plugin.drain_timeout)
                else:
                    await asyncio.shield(sender)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                sender.cancel()
            if holding and lane is not None:
                lane.release()
            self.plugin._finished(self)
        if cancelled:
            raise asyncio.CancelledError

    async def _send_loop(self) -> None:
        plugin = self.plugin
        consecutive = 0
        while True:
            while not self.queue:
                self._space.set()
                if self._closing or self.dead:
                    return
                self._wake_sender.clear()
                await self._wake_sender.wait()
            # What queued up behind a slow send goes as one ChatMessage (same text, same order).
            n = min(len(self.queue), plugin.max_coalesce)
            batch = [self.queue.popleft() for _ in range(n)]
            chat = batch[0] if n == 1 else coalesce(batch)
            if len(self.queue) <= plugin.max_buffered // 2:
                self._space.set()
            await self._window()
            key = str(chat.msg_id)
            self.unacked.add(key)
            plugin._in_flight[key] = self
            self.peak_in_flight = max(self.peak_in_flight, len(self.unacked))
            ok, detail = await plugin._send(self.ctx, self.peer, chat)
            if ok:
                self.sent += 1
                consecutive = 0
                continue
            self.unacked.discard(key)
            plugin._in_flight.pop(key, None)
            self.failed += 1
            consecutive += 1
            LOG.warning("reply to %s: a ChatMessage was not delivered: %s", self.peer, detail)
            if consecutive >= plugin.max_failures:
                # Nobody is listening: stop the responder and drop what is left.
                self.dead = True
                self.queue.clear()
                self._space.set()
                if self.task is not None and not self._closing:
                    self.task.cancel()
                return

    async def _window(self) -> None:
        limit = self.plugin.max_in_flight
        if not limit or self._acks_off:
            return
        while len(self.unacked) >= limit:
            self._acked.clear()
            try:
                await asyncio.wait_for(self._acked.wait(), self.plugin.ack_timeout)
            except asyncio.TimeoutError:
                self._acks_off = True
                LOG.info("%s does not acknowledge ChatMessages; flow control off for this "
                         "reply", self.peer)
                return

    def acknowledged(self, key: str) -> None:
        self.unacked.discard(key)
        self._acked.set()

    async def _timer_loop(self) -> None:
        """Release the chunker's buffered text at its deadline (a sentence never waits)."""
        enc = self.encoder
        while not enc.finished:
            d = enc.next_deadline
            self._armed = d
            self._wake_timer.clear()
            timeout = None if d is None else max(0.0, d - _clock())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake_timer.wait(), timeout)
            d = enc.next_deadline
            now = _clock()
            if d is not None and d <= now and not enc.finished:
                self._emit(enc.poll(now))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class StreamingChat(Protocol):
    """The agent's chat protocol, streaming replies with agent_stream (see the module doc).

    ``responder``: answers requests (None: this agent only asks). ``channels``: the channel
    policy. ``chunker``: TextChunker options. ``max_in_flight``: flow control (None: off).
    ``ack_timeout``: seconds to wait for an acknowledgement before giving up flow control.
    ``max_buffered``: ChatMessages queued per reply before the responder waits.
    ``drain_timeout``: seconds to finish sending a cancelled reply's ends.
    ``max_failures``: consecutive failed deliveries after which a reply is abandoned.
    ``max_coalesce``: at most this many queued ChatMessages are sent as one (1: never merge).
    ``on_reply_end``: called with a :class:`ReplyStats` when each reply is over.
    """

    def __init__(self, responder: Responder | None = None, *, channels: ChannelPolicy = None,
                 chunker: dict[str, Any] | None = None, max_in_flight: int | None = None,
                 ack_timeout: float = 5.0, max_buffered: int = 256,
                 drain_timeout: float = 5.0, max_failures: int = 3,
                 max_coalesce: int = 32, send_timeout: int = 30,
                 on_reply_end: Callable[[ReplyStats], None] | None = None) -> None:
        super().__init__(spec=chat_protocol_spec)
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
        self._outgoing: set[_Outgoing] = set()
        self._in_flight: dict[str, _Outgoing] = {}
        self._lanes: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._bound: set[int] = set()
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
                  decoder: ChatDecoder | None = None, deliver_within: float = 5.0) -> Reply:
        """Send ``question`` to ``destination``; returns its :class:`Reply` once delivered.

        ``channels``: extra channels to ask for (e.g. ``{"reasoning"}``); ``session``: open a
        session (StartSessionContent). An undelivered question is retried for
        ``deliver_within`` seconds (a peer just started may not listen yet), then
        DeliveryError is raised. The reply's ChatMessages are acknowledged and decoded as they
        arrive.
        """
        self._bind(ctx)
        return await ask_with(self._send, ctx, destination, question, self.client,
                              session=session, channels=channels, timeout=timeout,
                              settle=settle, decoder=decoder, deliver_within=deliver_within)

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

    # -- handlers ---------------------------------------------------------------------------------
    async def _on_chat(self, ctx: Context, sender: str, msg: ChatMessage) -> None:
        self._bind(ctx)
        self._spawn(self._send(ctx, sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id)))
        session = str(ctx.session) if ctx.session is not None else None
        reply = self.client.route(sender, msg, session)
        if reply is not None:
            reply.feed(msg)
            return
        if self.client.is_late(sender, msg):
            ctx.logger.debug(f"late reply traffic from {sender} dropped")
            return
        if self.responder is None:
            ctx.logger.debug(f"request from {sender} ignored: this agent has no responder")
            return
        request = ChatRequest(
            sender=sender, message=msg, session=session, tagged=is_tagged_request(msg),
            opens_session=opens_session(msg), channels=requested_channels(msg),
            storage=getattr(ctx, "storage", None), logger=ctx.logger, _ctx=ctx)
        try:
            out = _Outgoing(self, ctx, request, self._channels_for(request))
        except Exception as exc:  # a bad channel policy or chunker options: say so, go on
            ctx.logger.error(f"cannot answer {sender}: {_describe(exc)}")
            return
        self._outgoing.add(out)
        out.task = asyncio.create_task(out.run())
        out.task.add_done_callback(_quiet)

    async def _on_ack(self, ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        key = str(msg.acknowledged_msg_id)
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
            return False, _describe(exc)
        ok = getattr(status, "status", None) in (DeliveryStatus.DELIVERED, DeliveryStatus.SENT)
        if ok and isinstance(message, ChatMessage):
            self.sent_chat_messages += 1
        return ok, str(getattr(status, "detail", status))

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _channels_for(self, request: ChatRequest) -> Collection[str]:
        policy = self.channels
        if policy is None:
            return ()
        if callable(policy):
            return frozenset(policy(request) or ())
        return frozenset(policy) & request.channels

    def _lane(self, peer: str) -> asyncio.Lock:
        lane = self._lanes.get(peer)
        if lane is None:
            lane = self._lanes[peer] = asyncio.Lock()
        return lane

    def _finished(self, out: _Outgoing) -> None:
        self._outgoing.discard(out)
        if self.on_reply_end is not None:
            try:
                self.on_reply_end(ReplyStats(
                    out.peer, out.conversation, out.status or "completed", out.sent, out.failed,
                    out.peak_in_flight, _clock() - out.started))
            except Exception as exc:  # a bad callback must not break the agent
                LOG.warning("on_reply_end failed: %s", _describe(exc))
        for key in out.unacked:
            self._in_flight.pop(key, None)
        lane = self._lanes.get(out.peer)
        if lane is not None and not lane.locked() and not any(
                o.peer == out.peer for o in self._outgoing):
            del self._lanes[out.peer]

    async def _invoke(self, request: ChatRequest, out: StreamWriter) -> None:
        responder = self.responder
        assert responder is not None
        if inspect.isasyncgenfunction(responder) or inspect.isasyncgenfunction(
                getattr(responder, "__call__", None)):  # noqa: B004
            gen: AsyncIterator[str] = responder(request)  # type: ignore[call-arg,assignment]
            async with out.block("llm") as b, b.message("text") as m:
                async for piece in gen:
                    if piece:
                        await m.append(piece)
            return
        result = responder(request, out)  # type: ignore[call-arg]
        if inspect.isawaitable(result):
            await result

    def _bind(self, ctx: Context) -> None:
        """Hook :meth:`shutdown` into the agent's shutdown (found through uagents' dispatcher)."""
        address = getattr(getattr(ctx, "agent", None), "address", None)
        if address is None:
            return
        for sink in list(dispatcher.sinks.get(address, ())):
            if isinstance(sink, Agent) and id(sink) not in self._bound:
                self._bound.add(id(sink))

                async def _on_shutdown(_ctx: Context) -> None:
                    await self.shutdown()

                sink.on_event("shutdown")(_on_shutdown)


def _quiet(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: run() logs what matters


# -- adapting an existing chat handler ------------------------------------------------------------
class _CapturingContext:
    """A Context stand-in for a non-streaming chat handler: what it sends to the asker becomes
    part of the streamed reply; everything else is delegated to the real context."""

    def __init__(self, ctx: Any, asker: str, out: StreamWriter, send: Callable[..., Any]) -> None:
        self._ctx = ctx
        self._asker = asker
        self._out = out
        self._forward = send

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    async def send(self, destination: str, message: Model, timeout: int = 30) -> Any:
        from uagents_core.types import MsgStatus

        def status(detail: str) -> MsgStatus:
            return MsgStatus(status=DeliveryStatus.DELIVERED, detail=detail,
                             destination=destination, endpoint="", session=None)

        if destination == self._asker and isinstance(message, ChatAcknowledgement):
            return status("acknowledged by the streaming plugin")
        if destination == self._asker and isinstance(message, ChatMessage):
            for item in message.content:
                if isinstance(item, TextContent) and item.text:
                    await self._out.text(item.text)
                elif isinstance(item, ResourceContent):
                    from agent_stream.adapters.chat import ChatDecoder as _D

                    dec = _D()
                    for m in dec.feed("handler", ChatMessage(content=[item]), 0.0):
                        if m.type != "event":
                            await self._out.send(m.model_copy(update={"message_id": None}))
                elif isinstance(item, (StartSessionContent, EndSessionContent,
                                       MetadataContent)):
                    continue
            return status("streamed by the plugin")
        ok, detail = await self._forward(self._ctx, destination, message)
        return MsgStatus(status=DeliveryStatus.DELIVERED if ok else DeliveryStatus.FAILED,
                         detail=detail, destination=destination, endpoint="", session=None)


def wrap_chat_handler(
    handler: Callable[[Any, str, ChatMessage], Awaitable[None]],
    plugin: StreamingChat | None = None,
) -> Callable[[ChatRequest, StreamWriter], Awaitable[None]]:
    """A responder from an existing, non-streaming chat handler ``(ctx, sender, msg)``.

    The handler runs in the reply's background task with a context whose ``send`` turns the
    ChatMessages it sends back to the asker into messages of the streamed reply (text as text
    messages, resources as image/audio/video); its acknowledgements are dropped (the plugin
    acknowledges). Sends to other agents go out through ``plugin`` when given.
    """

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        async def forward(ctx: Any, destination: str, message: Model) -> tuple[bool, str]:
            if plugin is None:
                return False, "wrap_chat_handler: no plugin given to send to other agents"
            return await plugin._send(ctx, destination, message)

        ctx = _CapturingContext(request._ctx, request.sender, out, forward)
        async with out.block("agent") as b:
            ctx._out = b  # type: ignore[assignment]
            await handler(ctx, request.sender, request.message)

    return respond
