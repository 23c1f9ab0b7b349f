"""The receiving side: ask a chat-protocol agent a question and read the reply as it streams.

    chat = StreamingChat()                       # the agent's one chat protocol
    agent.include(chat, publish_manifest=True)
    ...
    reply = await chat.ask(ctx, address, "How do I stream?")
    async for msg in reply:                      # Messages as they arrive
        ...
    transcript = await reply                     # the final Transcript
    reply.completed                              # True when the reply ended completed

The question carries :func:`~agent_stream.adapters.chat.request_tags` (we decode tagged replies)
and, by default, StartSessionContent. Replies are decoded with a
:class:`~agent_stream.adapters.chat.ChatDecoder` and assembled with an
:class:`~agent_stream.assemble.Assembler`; the live Transcript is ``reply.transcript``.

When a reply is over:

- a tagged reply (from agent_stream): when its final stream_end is decoded; ``status`` is the
  stream_end's status (``completed``, ``error``, ``cancelled``, or ``lost`` when a fleet replica
  ends the reply of a replica that died);
- an untagged reply (any other chat agent): at EndSessionContent, or once no chat stream of the
  peer is open and nothing has arrived for ``settle`` seconds (10 s: long enough for a model
  call) after some of its answer did (text or a resource: a metadata-only or empty ChatMessage,
  such as a status flag sent first, never counts as the answer); a peer that streamed its
  answer (StartStreamContent ... EndStreamContent, as uAgents' streaming draft does) has said
  it is done when its streams are closed, so then :data:`STREAM_SETTLE` seconds suffice;
- ``timeout`` seconds after asking with no end: status ``timeout``;
- a tagged reply from which nothing (not even a keepalive) arrived for ``idle_timeout`` seconds:
  status ``lost`` (the responder is dead; a slow one sends keepalives). Only keepalives make
  silence mean death: a question without the tag (a plain ChatMessage) gets none, so its reply
  is not watched for silence unless ``idle_timeout`` is given;
- a question that neither acknowledgement nor reply traffic answered through its whole resend
  budget: status ``lost`` at once, a ``question_unacknowledged`` warning saying so;
- :meth:`Reply.cancel`: a ``cancel`` op goes to the responder; status ``cancelled`` when its
  stream_end says so, or ``cancel_grace`` seconds later.

Delivery: the question is sent again (same msg_id) until it is acknowledged or reply
traffic arrives, within the :class:`~agent_stream.adapters.chat.delivery.DeliveryPolicy`
budget; a gap in a tagged reply is asked for (a ``resend`` op) ``repair_after`` seconds after
it opened and every ``repair_every`` seconds while it stays open, and given up only after
``within`` seconds. ``completed`` is True only when the reply ended with status ``completed``,
every message in the Transcript completed (no chunk lost, none cut off) and, for a tagged reply,
every ChatMessage of it was decoded (no gap given up).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Generator
from typing import TYPE_CHECKING, Any

from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    StartSessionContent,
    TextContent,
)
from uagents_core.identity import parse_identifier

from agent_stream import telemetry
from agent_stream.adapters.chat import (
    ChatDecoder,
    conversation_of,
    is_tagged_request,
    request_tags,
)
from agent_stream.adapters.chat.ack_clock import AckClock
from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.adapters.chat.incoming import Incoming, read_chat
from agent_stream.adapters.chat.wire import OP_RESEND, chat_of, control
from agent_stream.assemble import Assembler, Transcript
from agent_stream.errors import StreamError, StreamWarning, WarningCode
from agent_stream.message import Message
from agent_stream.uagents._clock import LOOP_CLOCK, Clock
from agent_stream.uagents._wakeup import Wakeup
from agent_stream.uagents.asker._delivery import (
    LOST,
    AskerDelivery,
    SendControl,
    resend_question,
    retrieved,
)
from agent_stream.uagents.transport._lanes import independent, urgent

if TYPE_CHECKING:
    from uagents import Context

__all__ = ["DeliveryError", "Reply"]

LOG = logging.getLogger("agent_stream.uagents")

COMPLETED = "completed"
TIMEOUT = "timeout"
CANCELLED = "cancelled"
# what ended a reply (Reply.ended_by), besides its status
STREAM_END = "stream_end"  # a tagged reply's final stream_end
END_SESSION = "end_session"  # a plain reply's EndSessionContent
QUIET = "quiet"  # a plain reply: no ChatMessage for `settle` seconds after its answer began
#: Seconds of quiet that end a plain reply whose answer came in chat streams, all now closed.
STREAM_SETTLE = 0.5


class DeliveryError(ConnectionError):
    """The question could not be delivered (the peer's endpoint is unknown or unreachable)."""


class Reply:
    """One question's reply, as it arrives: iterate for Messages, await for the Transcript.

    The live ``transcript`` and the delivery figures ``gaps_repaired``, ``repair_requests``,
    ``keepalives`` and ``at_risk`` are properties (below).

    Attributes:
        peer: the address asked.
        question: the ChatMessage sent.
        conversation: its msg_id, which a tagged reply names.
        messages: the Messages decoded so far.
        chat_messages: ChatMessages received.
        status: None while streaming, then completed | error | cancelled | timeout | lost
            (undelivered: the question never arrived).
        tagged: the peer uses agent_stream.
        answered: some of the answer (text or a resource) arrived.
        ended_by: what ended the reply: ``stream_end`` (a tagged reply's), ``end_session`` or
            ``quiet`` (a plain reply's EndSessionContent, or ``settle`` seconds of quiet after
            its answer began), else its status (``timeout``, ``lost``, ``cancelled``...).
        acknowledged: the peer acknowledged the question.
        asked_at: when the question was asked (its clock's time, as the times below).
        first_text_at: when the first text came (None: none yet).
        last_received_at: when the last ChatMessage came (None: none yet).
        ended_at: when the reply ended (None: not yet).
        question_resends: times the question was sent again.
        duplicates: ChatMessages received twice (dropped).

    Args:
        peer: the address asked.
        question: the ChatMessage sent.
        session: the envelope session of the question (None: none).
        timeout: seconds the whole reply may take before it ends ``timeout``.
        settle: seconds of quiet that end an untagged reply once some of its answer (text or
            a resource) arrived.
        decoder: the ChatDecoder of the reply (None: a new one whose gap timeout is the delivery
            policy's ``within``).
        idle_timeout: seconds of silence after which a tagged reply is ``lost`` (None: the
            delivery policy's).
        delivery: the delivery policy (None: the defaults).
        send_control: sends a control op (resend, cancel) to the peer (None: no repair, and
            :meth:`cancel` stops waiting at once).
        cancel_grace: seconds to wait for the peer to confirm a cancel.
        watch_idle: end the reply ``lost`` after ``idle_timeout`` seconds of silence (None: when
            the question is tagged, so the responder sends keepalives, or ``idle_timeout`` is
            given).
        clock: the runtime's clock (:mod:`agent_stream.uagents._clock`).
    """

    def __init__(
        self,
        peer: str,
        question: ChatMessage,
        *,
        session: Any = None,
        timeout: float = 120.0,
        settle: float = 10.0,
        decoder: ChatDecoder | None = None,
        idle_timeout: float | None = None,
        delivery: DeliveryPolicy | None = None,
        send_control: SendControl | None = None,
        cancel_grace: float = 2.0,
        watch_idle: bool | None = None,
        clock: Clock = LOOP_CLOCK,
    ) -> None:
        self.clock = clock
        self.peer = peer
        self.question = question
        self.conversation = str(question.msg_id)
        self.session = str(session) if session is not None else None
        self.timeout = timeout
        self.settle = settle
        self.idle_timeout = idle_timeout
        self.delivery = delivery or DeliveryPolicy()
        # a gap is given up only when redelivery would have given up too
        self.decoder = decoder or ChatDecoder(gap_timeout=self.delivery.within)
        self.watch = AskerDelivery(
            self.peer,
            self.conversation,
            self.decoder,
            self.delivery,
            idle_timeout,
            send_control,
            cancel_grace,
            clock=clock,
            watch_idle=(
                watch_idle
                if watch_idle is not None
                else idle_timeout is not None or is_tagged_request(question)
            ),
        )
        self.question_resends = 0
        self.duplicates = 0
        self._assembler = Assembler()
        self.messages: list[Message] = []
        self.warnings: list[StreamWarning] = []
        self.chat_messages = 0
        self.tagged = False
        self.answered = False
        self.streamed = False  # the peer opened a chat stream (StartStreamContent)
        self.ended_by: str | None = None
        self.acknowledged = False
        self.status: str | None = None
        self.asked_at = self.clock.now()
        self.first_text_at: float | None = None
        self.last_received_at: float | None = None
        self.ended_at: float | None = None
        self._changed = asyncio.Event()  # wakes iterators
        self._kick = Wakeup(clock)  # wakes the watch loop (one per ChatMessage)
        self._done = asyncio.get_running_loop().create_future()
        self._watch: asyncio.Task[None] | None = None

    # -- reading ----------------------------------------------------------------------------------
    @property
    def transcript(self) -> Transcript:
        """The reply assembled so far."""
        return self._assembler.transcript

    @property
    def done(self) -> bool:
        """The reply is over (whatever its status)."""
        return self.status is not None

    @property
    def completed(self) -> bool:
        """The reply ended with status completed and every message in it completed."""
        return (
            self.status == COMPLETED
            and all(m.status == COMPLETED for m in self.transcript.messages)
            and (not self.tagged or self.decoder.whole(self.peer, self.conversation))
        )

    @property
    def gaps_repaired(self) -> int:
        """Gaps asked for that filled."""
        return self.watch.repair.repaired

    @property
    def repair_requests(self) -> int:
        """Resend requests sent."""
        return self.watch.repair.requested

    @property
    def keepalives(self) -> int:
        """Keepalives received."""
        return self.decoder.keepalives(self.peer, self.conversation)

    @property
    def at_risk(self) -> float:
        """Seconds during which a gap in the reply was open."""
        return self.watch.at_risk(self.ended_at if self.ended_at is not None else self.clock.now())

    def text(self) -> str:
        """The text messages' content so far, concatenated."""
        return self.transcript.text()

    async def __aiter__(self) -> AsyncIterator[Message]:
        i = 0
        while True:
            while i < len(self.messages):
                yield self.messages[i]
                i += 1
            if self.done:
                return
            self._changed.clear()
            if i < len(self.messages) or self.done:
                continue
            await self._changed.wait()

    async def consume(self) -> AsyncIterator[Message]:
        """Iterate the Messages as they arrive, keeping none that was read.

        For a relay that passes each Message on (the gateway): iterating the reply itself
        keeps every Message in ``messages`` for other readers, which at a thousand replies
        was most of a process's memory. Once this starts, ``messages`` holds only what it
        has not read yet; use one reader, and no other iteration of the same reply.
        """
        while True:
            if self.messages:
                batch, self.messages = self.messages, []
                for m in batch:
                    yield m
                continue
            if self.done:
                return
            self._changed.clear()
            if self.messages or self.done:
                continue
            await self._changed.wait()

    def on_end(self, callback: Callable[[Reply], object]) -> None:
        """Call ``callback(reply)`` once the reply has ended (at once, soon, if it has).

        Args:
            callback: called from the event loop with this reply.
        """
        self._done.add_done_callback(lambda _f: callback(self))

    async def wait(self, timeout: float | None = None) -> Transcript:
        """Wait for the end of the reply; returns the Transcript (also when not completed).

        Args:
            timeout: seconds to wait (None: until the reply ends).

        Raises:
            asyncio.TimeoutError: ``timeout`` passed first (the reply goes on).
        """
        await self.clock.wait_for(asyncio.shield(self._done), timeout)
        return self.transcript

    def __await__(self) -> Generator[Any, None, Transcript]:
        return self.wait().__await__()

    def cancel(self) -> None:
        """Stop the reply: a ``cancel`` op goes to the responder (status ``cancelled`` once
        its stream_end confirms, or ``cancel_grace`` seconds later); without a way to send,
        stop waiting at once."""
        if self.done:
            return
        if not self.watch.cancel():
            self._finish(CANCELLED)
            return
        self._kick.set()

    # -- fed by the plugin ------------------------------------------------------------------------
    def matches(self, sender: str, chat: Incoming, session: str | None) -> int:
        """How well an incoming ChatMessage belongs to this reply: 3 by its conversation tag,
        2 by the envelope session, 1 by the sender alone, 0 not at all.

        Args:
            sender: the envelope's sender.
            chat: the incoming ChatMessage, read.
            session: the envelope's session (None: none).
        """
        if sender != self.peer or self.done:
            return 0
        conv = chat.conversation
        if conv is not None:
            return 3 if conv == self.conversation else 0
        if session is not None and session == self.session:
            return 2
        return 1

    def feed(self, chat: Incoming | ChatMessage) -> None:
        """One ChatMessage of the reply.

        Args:
            chat: the ChatMessage as received (read once by the agent; a raw one is read here),
                duplicates and gaps are handled here.
        """
        if self.done:
            return
        view = chat if isinstance(chat, Incoming) else read_chat(chat)
        now = self.clock.now()
        self.chat_messages += 1
        self.last_received_at = now
        self.watch.idle.note(now)
        if view.conversation is not None:
            self.tagged = True
        self._take(self.decoder.feed(self.peer, view.chat, now), now)
        if self.first_text_at is None and view.has_text:
            self.first_text_at = now
        if not self.answered and view.answers:
            self.answered = True
        if not self.streamed and view.starts_stream:
            self.streamed = True
        if self.tagged and self.decoder.finished(self.peer, self.conversation):
            self._finish(self.transcript.status or COMPLETED, now, STREAM_END)
        elif not self.tagged and view.ends_session:
            # (a tagged reply ends at its stream_end, in sequence: the ChatMessage ending the
            # session may overtake others)
            self._take(self._end_streams(), now)
            self._finish(self.transcript.status or COMPLETED, now, END_SESSION)
        self._changed.set()
        self._kick.set()

    def acknowledge(self) -> None:
        self.acknowledged = True

    # -- internals --------------------------------------------------------------------------------
    def _take(self, messages: list[Message], now: float) -> None:
        for m in messages:
            try:
                self._assembler.feed(m)
            except StreamError as exc:
                self.warnings.append(
                    StreamWarning(
                        "bad_message",
                        str(exc),
                        chunk_id=m.chunk_id,
                        message_id=m.message_id,
                        thread_id=m.thread_id,
                    )
                )
                continue
            self.messages.append(m)
            if self.first_text_at is None and m.type == "text" and (m.props or {}).get("content"):
                self.first_text_at = now
        for w in self.decoder.drain_warnings():
            if w.code == "duplicate_chat_message":  # redelivery at work: counted, not warned
                self.duplicates += 1
            else:
                self.warnings.append(w)
        if messages:
            self._changed.set()

    def _end_streams(self) -> list[Message]:
        # The peer said the session is over: what is still held back will not come.
        return self.decoder.close()

    def quiet_period(self) -> float:
        """Seconds of quiet that end this reply if it is plain (its streams, if any, closed)."""
        return min(self.settle, STREAM_SETTLE) if self.streamed else self.settle

    def _finish(self, status: str, when: float | None = None, by: str | None = None) -> None:
        if self.status is not None:
            return
        self.ended_by = by or status
        if status == COMPLETED and self.watch.cancel_at is not None:
            status = CANCELLED
        if self.tagged:
            self.watch.close()
        self.status = status
        self.ended_at = when if when is not None else self.clock.now()
        if not self._done.done():
            self._done.set_result(None)
        if self._watch is not None and self._watch is not asyncio.current_task():
            self._watch.cancel()
        self._changed.set()

    def _lose(self, now: float, reason: str | None = None) -> None:
        """End the reply as ``lost``; ``reason`` (what to do about it) becomes a warning."""
        if self.done:
            return
        self._take(self.decoder.close(), now)  # what is held back will not come: as it is
        if reason is not None:
            self.warnings.append(StreamWarning(WarningCode.QUESTION_UNACKNOWLEDGED, reason))
        self._finish(LOST, now)

    def _start_watch(self) -> None:
        self._watch = asyncio.create_task(self._watch_loop())

    async def _watch_loop(self) -> None:
        """Decoder deadlines (gaps, idle streams), the settle time, the overall timeout."""
        with contextlib.suppress(asyncio.CancelledError):
            while not self.done:
                now = self.clock.now()
                wake = [self.asked_at + self.timeout, *self.watch.deadlines(self.tagged)]
                d = self.decoder.next_deadline
                if d is not None:
                    wake.append(d)
                quiet = (
                    not self.tagged
                    and self.answered
                    and self.last_received_at is not None
                    and self.decoder.open_streams(self.peer) == 0
                )
                if quiet:
                    assert self.last_received_at is not None
                    wake.append(self.last_received_at + self.quiet_period())
                delay = max(0.0, min(wake) - now)
                self._kick.clear()
                await self._kick.wait(delay)
                if self.done:
                    return
                now = self.clock.now()
                d = self.decoder.next_deadline
                if d is not None and d <= now:
                    self._take(self.decoder.poll(now), now)
                if now >= self.asked_at + self.timeout:
                    self._finish(TIMEOUT, now)
                    return
                end = self.watch.step(now, self.tagged)
                if end is not None:
                    if end == LOST:
                        self._lose(now)
                    else:
                        self._finish(end, now)
                    return
                if (
                    not self.tagged
                    and self.answered
                    and self.last_received_at is not None
                    and self.decoder.open_streams(self.peer) == 0
                    and now - self.last_received_at >= self.quiet_period()
                ):
                    # An untagged reply is over: completed when it was read whole.
                    self._take(self.decoder.close(), now)
                    self._finish(COMPLETED, self.last_received_at, QUIET)
                    return
                if self.tagged and self.decoder.finished(self.peer, self.conversation):
                    self._finish(self.transcript.status or COMPLETED, now, STREAM_END)
                    return


def build_question(
    question: str | ChatMessage,
    *,
    session: bool = True,
    channels: Collection[str] = (),
    history: str | None = None,
) -> ChatMessage:
    """The ChatMessage asking ``question``: the text, request_tags() (with ``history``, the
    conversation's JSON, when given), and StartSessionContent when ``session``. A ChatMessage
    is sent as it is.

    Args:
        question: the text, or a ChatMessage.
        session: add StartSessionContent.
        channels: extra channels to ask for in the request tags.
        history: the conversation so far, JSON (None: the responder's own).
    """
    if isinstance(question, ChatMessage):
        return question
    content: list[Any] = []
    if session:
        content.append(StartSessionContent())
    content.append(request_tags(channels, history=history))
    content.append(TextContent(text=question))
    return chat_of(content)


class ChatClient:
    """The open questions of one agent; routes incoming ChatMessages to their Reply.

    For ``late_window`` seconds after a reply from a peer is over, an untagged ChatMessage
    from that peer that neither opens a session nor carries request tags is taken for the tail
    of that reply (e.g. after a timeout) and dropped, not answered as a request; a tagged reply
    that no open question is waiting for is always dropped. This keeps two agents that both
    answer from answering each other's replies forever.

    Args:
        late_window: seconds after a peer's reply is over during which its untagged reply
            traffic is dropped.
        clock: the runtime's clock; each Reply it asks runs on it.
    """

    def __init__(self, late_window: float = 10.0, *, clock: Clock = LOOP_CLOCK) -> None:
        self.clock = clock
        # open questions per peer, oldest first (a dict: a reply that ends leaves in O(1))
        self._by_peer: dict[str, dict[Reply, None]] = {}
        self._by_conv: dict[tuple[str, str], list[Reply]] = {}  # ...per (peer, conversation)
        self._ended: dict[str, float] = {}
        self.late_window = late_window
        self.ack_clock = AckClock()  # how long each peer takes to acknowledge a question

    @property
    def open(self) -> int:
        """Questions registered and not yet known to be over."""
        return sum(len(rs) for rs in self._by_peer.values())

    def route(self, sender: str, chat: Incoming | ChatMessage, session: str | None) -> Reply | None:
        """The Reply an incoming ChatMessage belongs to (None: it is a request).

        A tagged ChatMessage is looked up by (sender, conversation): constant time however
        many replies are open. An untagged one is scored against that sender's open replies.

        Args:
            sender: the envelope's sender.
            chat: the incoming ChatMessage (read once by the agent; a raw one is read here).
            session: the envelope's session (None: none).
        """
        view = chat if isinstance(chat, Incoming) else read_chat(chat)
        conv = view.conversation
        if conv is not None:  # only a reply of this conversation can score (3)
            replies = self._by_conv.get((sender, conv))
            if not replies:
                return None
            for r in replies:  # ties: the oldest question wins
                if not r.done:
                    return r
            self._prune(sender)
            return None
        self._prune(sender)
        best: Reply | None = None
        score = 0
        for r in self._by_peer.get(sender, ()):
            s = r.matches(sender, view, session)
            if s > score:  # ties: the oldest question wins
                best, score = r, s
        return best

    def _prune(self, peer: str) -> None:
        """Forget ``peer``'s replies that are over (noting when the last one ended)."""
        for r in [r for r in self._by_peer.get(peer, ()) if r.done]:
            self._forget(r)

    def _forget(self, reply: Reply) -> None:
        """Forget one reply that is over: constant time, however many are open (a gateway has
        a thousand with one agent, and each ended reply scanned them all)."""
        peer = reply.peer
        replies = self._by_peer.get(peer)
        if replies is None or reply not in replies:
            return
        del replies[reply]
        self._ended[peer] = max(self._ended.get(peer, 0.0), reply.ended_at or 0.0)
        if not replies:
            del self._by_peer[peer]
        key = (peer, reply.conversation)
        same = [r for r in self._by_conv.get(key, ()) if r is not reply]
        if same:
            self._by_conv[key] = same
        else:
            self._by_conv.pop(key, None)

    def _over(self, reply: Reply) -> None:
        """A reply ended: forget it now (not only when its peer sends again)."""
        self._forget(reply)

    def arrived(self, sender: str, chat: ChatMessage) -> None:
        """A tagged ChatMessage from ``sender`` reached the agent (the inbox guard tells, before
        it waits its turn in the inbox): the reply it belongs to has heard from its responder
        now. Measured when it is handled instead, a reply whose asker's inbox was backed up
        longer than its idle timeout was ended ``lost`` with its responder's messages waiting.

        Args:
            sender: the envelope's sender.
            chat: the ChatMessage.
        """
        conv = conversation_of(chat)
        if conv is None:
            return
        replies = self._by_conv.get((sender, conv))
        if replies:
            now = self.clock.now()
            for r in replies:
                if not r.done:
                    r.watch.idle.note(now)

    def is_late(self, sender: str, chat: Incoming | ChatMessage) -> bool:
        """An incoming ChatMessage no question waits for that is reply traffic, not a request.

        Args:
            sender: the envelope's sender.
            chat: the incoming ChatMessage (read once by the agent; a raw one is read here).
        """
        view = chat if isinstance(chat, Incoming) else read_chat(chat)
        if view.conversation is not None:
            return True  # a tagged reply (requests carry tags, not a conversation)
        ended = self._ended.get(sender)
        if ended is None or self.clock.now() - ended > self.late_window:
            return False
        return not (view.tagged or view.opens_session)

    def acknowledged(self, sender: str, msg_id: str) -> bool:
        """Mark the question ``msg_id`` to ``sender`` acknowledged.

        Args:
            sender: the peer that acknowledged.
            msg_id: the acknowledged message's id.

        Returns:
            Whether an open question was acknowledged.
        """
        for r in self._by_conv.get((sender, msg_id), ()):
            if not r.acknowledged and not r.question_resends:  # Karn: one send, one time
                self.ack_clock.sample(sender, self.clock.now() - r.asked_at)
            r.acknowledge()
            return True
        return False

    def add(self, reply: Reply) -> None:
        """Register ``reply``: incoming ChatMessages are routed to it until it is over.

        Args:
            reply: the reply of a question just sent.
        """
        self._by_peer.setdefault(reply.peer, {})[reply] = None
        self._by_conv.setdefault((reply.peer, reply.conversation), []).append(reply)
        reply.on_end(self._over)
        reply._start_watch()

    def cancel_all(self) -> None:
        for peer, replies in list(self._by_peer.items()):
            for r in list(replies):
                r.cancel()  # tells the responder, if it can
                r._finish(CANCELLED)
            self._prune(peer)


async def ask_with(
    sender: Any,
    ctx: Context,
    destination: str,
    question: str | ChatMessage,
    client: ChatClient,
    *,
    session: bool = True,
    channels: Collection[str] = (),
    timeout: float = 120.0,
    settle: float = 10.0,
    decoder: ChatDecoder | None = None,
    deliver_within: float = 5.0,
    idle_timeout: float | None = None,
    delivery: DeliveryPolicy | None = None,
    history: str | None = None,
) -> Reply:
    """Send ``question`` with ``sender(ctx, destination, chat)`` and register its Reply.

    An undelivered question is sent again every 0.1 s for up to ``deliver_within`` seconds;
    once delivered, it is sent again (same msg_id) until it is acknowledged or reply traffic
    arrives, with the policy's backoff and budget.

    Args:
        sender: sends a model, ``async (ctx, destination, msg) -> (delivered?, detail)``.
        ctx: the context to send with.
        destination: the peer's address (or ``prefix://address``).
        question: the text, or a ChatMessage sent as it is.
        client: the asking agent's open questions; the Reply is added to it.
        session: open a session (StartSessionContent) with the question.
        channels: extra channels to ask for (e.g. ``{"reasoning"}``).
        timeout: seconds the whole reply may take before it ends ``timeout``.
        settle: seconds of quiet that end an untagged reply once some of its answer (text or
            a resource) arrived.
        decoder: the ChatDecoder of the reply (None: a new one with default limits).
        deliver_within: seconds during which an undelivered question is sent again.
        idle_timeout: seconds of silence after which a tagged reply is ``lost`` (None: the
            delivery policy's).
        delivery: the delivery policy (resends, backoff; None: the defaults).
        history: the conversation so far, JSON, carried in the question's tags (None: the
            responder's own).

    Returns:
        The Reply, once the question was delivered.

    Raises:
        DeliveryError: the question was not delivered within ``deliver_within`` seconds.
    """
    chat = build_question(question, session=session, channels=channels, history=history)
    _, _, address = parse_identifier(destination)
    policy = delivery or DeliveryPolicy()

    async def send_control(msg: ChatMessage) -> Any:
        return await sender(ctx, destination, msg)

    reply = Reply(
        address or destination,
        chat,
        session=getattr(ctx, "session", None),
        timeout=timeout,
        settle=settle,
        decoder=decoder,
        idle_timeout=idle_timeout,
        delivery=policy,
        send_control=send_control,
        clock=client.clock,
    )
    telemetry.asking(reply, getattr(getattr(ctx, "agent", None), "name", None))
    client.add(reply)  # before sending: the first reply may come back before send returns
    try:
        # A question: ahead of reply traffic already queued for that peer; one that opens a
        # session of its own depends on nothing sent before it, so it does not wait for the
        # posts under way (a gateway's thousand questions to one agent went one post at a time).
        with urgent(), independent() if session else contextlib.nullcontext():
            ok, detail = await sender(ctx, destination, chat)
        # A peer that was just started may not listen yet: a refused delivery costs ~3 ms and
        # never reached the peer, so try again for a short while before giving up.
        deadline = client.clock.now() + deliver_within
        while not ok and client.clock.now() < deadline:
            await client.clock.sleep(0.1)
            ok, detail = await sender(ctx, destination, chat)
    except asyncio.CancelledError:
        # Stopped while the question was on its way: it may have arrived, so the responder is
        # told to stop too (a cancel for a conversation it never saw is ignored there).
        reply.cancel()
        raise
    if not ok:
        reply._finish("undelivered")
        raise DeliveryError(f"question to {destination} not delivered: {detail}")
    task = asyncio.ensure_future(
        _resend_question(
            sender,
            ctx,
            destination,
            chat,
            reply,
            policy,
            lambda: client.ack_clock.patience(reply.peer),
        )
    )
    task.add_done_callback(retrieved)
    return reply


async def resume_with(
    sender: Any,
    ctx: Context,
    destination: str,
    conversation: str,
    client: ChatClient,
    *,
    timeout: float = 120.0,
    idle_timeout: float | None = None,
    delivery: DeliveryPolicy | None = None,
) -> Reply:
    """Ask ``destination`` for the reply of ``conversation`` again, from sequence 1 (a
    ``resend`` op; the responder keeps a reply's ChatMessages a while after it ended). For an
    asker that lost its state: it must ask from the same address. The Reply is tagged from the
    start, so silence for ``idle_timeout`` ends it as ``lost``.

    Args:
        sender: sends a model, ``async (ctx, destination, msg) -> (delivered?, detail)``.
        ctx: the context to send with.
        destination: the peer that was answering.
        conversation: the question's msg_id.
        client: the asking agent's open questions; the Reply is added to it.
        timeout: seconds the whole reply may take.
        idle_timeout: seconds of silence after which the reply is ``lost`` (None: the delivery
            policy's).
        delivery: the delivery policy (None: the defaults).

    Returns:
        The Reply, streaming again from its first message.

    Raises:
        DeliveryError: the resend request was not delivered.
    """
    question = ChatMessage(msg_id=uuid.UUID(conversation), content=[])
    _, _, address = parse_identifier(destination)

    async def send_control(msg: ChatMessage) -> Any:
        return await sender(ctx, destination, msg)

    reply = Reply(
        address or destination,
        question,
        timeout=timeout,
        idle_timeout=idle_timeout,
        delivery=delivery,
        send_control=send_control,
        watch_idle=True,  # the reply it resumes is tagged: its responder sends keepalives
        clock=client.clock,
    )
    reply.tagged = True
    client.add(reply)
    ok, detail = await send_control(control(OP_RESEND, conversation, **{"from": "1"}))
    if not ok:
        reply._finish("undelivered")
        raise DeliveryError(f"resend request to {destination} not delivered: {detail}")
    return reply


async def _resend_question(
    sender: Any,
    ctx: Context,
    destination: str,
    chat: ChatMessage,
    reply: Reply,
    policy: DeliveryPolicy,
    patience: Callable[[], float],
) -> None:
    last_refused: list[str] = []  # the last send's failure, if it failed

    async def send(msg: ChatMessage) -> tuple[bool, str]:
        ok, detail = await sender(ctx, destination, msg)
        last_refused[:] = [] if ok else [str(detail)]
        return bool(ok), str(detail)

    def resent() -> None:
        reply.question_resends += 1

    def answered() -> bool:
        return reply.acknowledged or reply.chat_messages > 0 or reply.done

    # An asker's idle timeout also bounds the wait for the question's acknowledgement.
    limit = None if reply.idle_timeout is None else reply.asked_at + reply.idle_timeout

    def given_up() -> bool:
        return limit is not None and reply.clock.now() >= limit

    spent = await resend_question(
        send, chat, lambda: answered() or given_up(), policy, resent, patience, reply.clock
    )
    if (spent or given_up()) and not answered():
        # Nothing came back to any send: waiting out the whole timeout would tell no more.
        # Every send was delivered (a refused one raised DeliveryError at the first): the peer
        # took the question and never acknowledged it, which a stock uagents agent does when it
        # cannot look up the asker's address (offline, on the Almanac).
        now = reply.clock.now()
        sends = f"after {reply.question_resends + 1} sends over {now - reply.asked_at:.1f} s"
        if last_refused:
            reason = (
                f"the question was never acknowledged by {reply.peer} {sends}, and its "
                f"endpoint no longer takes it ({last_refused[0]}): is the agent still running?"
            )
        else:
            reason = (
                f"the question was never acknowledged by {reply.peer} {sends}, though its "
                "endpoint took every send: it is likely unable to find this asker's address to "
                "answer (a stock uagents agent offline: give it "
                "resolve=agent_stream.uagents.local_resolver())"
            )
        LOG.warning("reply lost: %s", reason)
        reply._lose(now, reason)
