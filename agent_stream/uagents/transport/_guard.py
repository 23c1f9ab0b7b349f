"""The inbox guard: no payload, whatever its bytes, can stop an agent from handling messages.

The upstream cause (uagents 0.26.1, uagents-core 0.4.12): ``Agent.handle_message`` only queues
``(schema_digest, sender, payload, session)``; the agent's one ``_process_message_queue`` task
later runs ``model_class.parse_raw(payload)`` inside ``except ValidationError`` -- pydantic
*v2*'s. The models (``uagents_core.models.Model``, the chat protocol's included) are pydantic
*v1*, so a v1 ValidationError, a TypeError (an unknown top-level key), a JSONDecodeError (a
payload that is not JSON) or anything else escapes and ends that task: from then on the agent
handles nothing, while HTTP still answers 200. Unsigned envelopes from ``user...`` addresses
reach the same code, so no key is needed to do it.

An :class:`AgentGuard` serves one agent (:func:`agent_stream.uagents._protection.protect` puts
it in place as that agent's own ``handle_message``, an instance attribute: other agents of the
process and the ``Agent`` class are untouched). Before a payload is queued it is parsed with
the model the agent registered for its digest. One that fails is dropped and logged (one
warning line naming sender, schema and reason; at most ``log_burst`` lines per ``log_period``
seconds, then a count of what was not logged), and the sender gets uagents' usual
``ErrorMessage("Message does not conform to expected schema: ...")`` (at most one per sender
per ``error_interval`` seconds, ``error_rate`` per second in all, ``max_error_replies`` in
flight). A payload for a digest the agent has no model for is dropped the same way (uagents
would log and drop it). While the inbox holds ``max_queued`` payloads or ``max_queued_bytes``,
new ones are dropped. The HTTP edge caps (:mod:`._http_edge`) use the same
settings and count into the same :attr:`AgentGuard.stats`.

Should a later uagents catch every parse error itself, the guard stays harmless: valid payloads
pass unchanged, invalid ones are answered the way uagents answers them. A chat-protocol payload
is parsed once: the model the guard built is what uagents' own parse returns
(:mod:`._parsed_payloads`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)
from uagents_core.identity import is_user_address
from uagents_core.models import ErrorMessage

from agent_stream.uagents import _compat
from agent_stream.uagents._clock import LOOP_CLOCK, Clock
from agent_stream.uagents._ratelog import RateLimitedLog, TokenBucket
from agent_stream.uagents.transport._parsed_payloads import HANDED_OVER, Handover, base_of

__all__ = ["AgentGuard", "GuardSettings", "short"]

LOG = logging.getLogger("agent_stream.uagents.transport._guard")

HandleMessage = Callable[[Any, str, Any, Any], Awaitable[None]]


@dataclass(frozen=True)
class GuardSettings:
    """The guard's limits (per protected agent; see the module doc and :mod:`._http_edge`).

    Attributes:
        max_envelope_bytes: an HTTP body over this: 413.
        new_senders_per_second: signed envelopes from senders not verified lately.
        sender_envelopes_per_second: signed envelopes of one verified sender.
        trusted_senders: senders trusted with more (a gateway asking for many users): their
            own rate instead.
        trusted_envelopes_per_second: envelopes per second of each trusted sender, and of
            each peer streaming a reply this agent asked for.
        unsigned_per_second: unsigned envelopes, all senders together.
        max_queued: payloads waiting in one agent's inbox.
        max_queued_bytes: their bytes.
        max_content_items: content items in one ChatMessage.
        error_interval: at most one ErrorMessage per sender per this many seconds.
        error_rate: ErrorMessages per second in all (beyond: not sent).
        max_error_replies: ErrorMessages being sent at once (beyond: not sent).
        error_timeout: seconds to deliver one ErrorMessage.
        log_burst: warning lines per ``log_period``...
        log_period: ...seconds; the rest are counted.
        header_timeout: seconds a client has to send a request's headers to the agent's
            server, from connecting (or from the first byte of a later request on a kept-alive
            connection); then the connection is closed (slow clients, slowloris). Read when
            the server starts.
        max_header_connections: connections sending request headers at once; past it, a new
            one closes the one sending them the longest. Read when the server starts.

    Raises:
        ValueError: ``header_timeout`` not more than 0 or ``max_header_connections`` below 1.
    """

    max_envelope_bytes: int = 4 * 1024 * 1024
    new_senders_per_second: float = 25.0
    sender_envelopes_per_second: float = 200.0
    trusted_senders: frozenset[str] = frozenset()
    trusted_envelopes_per_second: float = 10_000.0
    unsigned_per_second: float = 50.0
    max_queued: int = 1024
    max_queued_bytes: int = 32 * 1024 * 1024
    max_content_items: int = 1024
    error_interval: float = 1.0
    error_rate: float = 20.0
    max_error_replies: int = 32
    error_timeout: int = 5
    log_burst: int = 5
    log_period: float = 10.0
    header_timeout: float = 5.0
    max_header_connections: int = 256

    def __post_init__(self) -> None:
        if not self.header_timeout > 0:
            raise ValueError(f"header_timeout must be more than 0, got {self.header_timeout}")
        if self.max_header_connections < 1:
            raise ValueError(
                f"max_header_connections must be at least 1, got {self.max_header_connections}"
            )


def short(value: object, limit: int = 160) -> str:
    """``value`` as one line of at most ``limit`` characters (whatever a peer put in it).

    Args:
        value: anything; it is made a string.
        limit: the most characters kept (then ``...``).
    """
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit] + "..."


_CHAT_ITEMS: dict[Any, Any] = {
    "text": TextContent,
    "resource": ResourceContent,
    "metadata": MetadataContent,
    "start-session": StartSessionContent,
    "end-session": EndSessionContent,
    "start-stream": StartStreamContent,
    "end-stream": EndStreamContent,
}
_CHAT_FIELDS = frozenset(("timestamp", "msg_id", "content"))


def _plain_item(model: Any, item: dict[str, Any]) -> Any:
    """A text or metadata item of exactly its two fields, plain strings, built without
    validation: what ``parse_obj`` makes of it, field for field, at a fraction of the cost
    (pydantic v1 validates a metadata dict key by key: a fifth of a gateway's time). Anything
    else (other keys, other types): None, validated the usual way."""
    if len(item) != 2:
        return None
    if model is MetadataContent:
        md = item.get("metadata")
        if type(md) is dict and all(type(k) is str and type(v) is str for k, v in md.items()):
            return MetadataContent.construct(type="metadata", metadata=dict(md))
    elif model is TextContent:
        text = item.get("text")
        if type(text) is str:
            return TextContent.construct(type="text", text=text)
    return None


# What ``datetime.isoformat`` writes (every uagents and agent_stream sender): parsed with
# ``datetime.fromisoformat``, the very datetime pydantic v1's regex parse gives, at a tenth of its
# cost. Any other form goes through pydantic.
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{6})?(?:[+-]\d{2}:\d{2})?")
_ACK_FIELDS = frozenset(("timestamp", "acknowledged_msg_id", "metadata"))


def _stamp_and_id(timestamp: Any, msg_id: Any) -> tuple[datetime, UUID] | None:
    """(timestamp, UUID4) as pydantic v1 validates a chat model's two fields, when both are
    in their usual form (an isoformat string, a version-4 UUID string); None: validate the
    usual way (which refuses what is wrong)."""
    if type(timestamp) is not str or type(msg_id) is not str:
        return None
    if not _ISO_TIME.fullmatch(timestamp):
        return None
    try:
        when = datetime.fromisoformat(timestamp)
        uid = UUID(msg_id)
    except ValueError:
        return None
    if uid.version != 4:
        return None
    return when, uid


def _plain_ack(data: Any) -> Any:
    """A ChatAcknowledgement in its usual form built without pydantic's validation: what
    ``parse_obj`` makes of it, field for field (None: anything else, validated the usual
    way)."""
    if type(data) is not dict or not set(data) <= _ACK_FIELDS:
        return None
    head = _stamp_and_id(data.get("timestamp"), data.get("acknowledged_msg_id"))
    md = data.get("metadata")
    if head is None:
        return None
    if md is not None and not (
        type(md) is dict and all(type(k) is str and type(v) is str for k, v in md.items())
    ):
        return None
    # (pydantic counts metadata as set even when absent: so does this)
    return ChatAcknowledgement.construct(
        timestamp=head[0],
        acknowledged_msg_id=head[1],
        metadata=dict(md) if md is not None else None,
    )


class _ChatHead(ChatMessage):  # type: ignore[misc]
    """A ChatMessage's fields but its content, validated as ChatMessage validates them (the
    same ``__init__`` and field types); the content items are checked one by one before."""

    content: list[Any]


_NOT_ANSWERED = ("inbox full", "no model for this schema digest")


class AgentGuard:
    """The inbox guard of one agent, its edge caps' state and its counters.

    Attributes:
        stats: counters: ``dropped`` (payloads refused before the inbox), ``error_replies``
            (ErrorMessages delivered), ``http_refused`` (envelopes refused at the HTTP edge).
        on_sender: called with the sender of every envelope handed to the agent from an agent
            address (uagents verified its signature, or an agent of this process sent it;
            ``user...`` senders are unsigned and not reported), whether or not its payload is
            let in: that agent is running.
        on_chat: called with the sender and the parsed ChatMessage of every one let into the
            inbox, as it arrives: it may wait there a while before it is handled (a reply's
            liveness is measured from here).

    Args:
        agent: the uagents agent it guards.
        settings: its limits (None: the defaults).
        clock: the runtime's clock (its rate buckets refill on it).
    """

    def __init__(
        self, agent: Any, settings: GuardSettings | None = None, clock: Clock = LOOP_CLOCK
    ) -> None:
        self.clock = clock
        self.agent = agent
        self.stats: dict[str, int] = {"dropped": 0, "error_replies": 0, "http_refused": 0}
        self._handle: HandleMessage | None = None
        self._last_error_reply: dict[str, float] = {}
        self._error_tasks: set[asyncio.Task[Any]] = set()
        self.on_sender: list[Callable[[str], None]] = []
        self.on_chat: list[Callable[[str, ChatMessage], None]] = []
        # the sizes of the payloads this guard let into the inbox, oldest first, and their sum:
        # the inbox is first in, first out, so what was taken is at the left
        self._queued: deque[int] = deque()
        self._held = 0
        #: chat payloads parsed here, handed to uagents' own parse of the same text
        self.handover = Handover()
        self.configure(settings or GuardSettings())

    def configure(self, settings: GuardSettings) -> None:
        """Use ``settings`` from now on (rate limits start afresh; counters are kept).

        Args:
            settings: the new limits.
        """
        self.settings = settings
        self.log = RateLimitedLog(LOG, settings.log_burst, settings.log_period)
        self._error_budget = TokenBucket(settings.error_rate, settings.error_rate, self.clock)

    # -- the check ---------------------------------------------------------------------------------
    def check(self, schema_digest: str, message: Any) -> str | None:
        """Why the agent must not queue ``message`` for ``schema_digest`` (None: it may).

        Args:
            schema_digest: the payload's model digest.
            message: the payload (JSON text).

        Returns:
            The reason for refusing it, or None.
        """
        return self._inspect(schema_digest, message)[0]

    def _inspect(self, schema_digest: str, message: Any) -> tuple[str | None, Any]:
        """(why it is refused, None) or (None, what it parses to)."""
        model = _compat.models_of(self.agent).get(schema_digest)
        if model is None:
            return "no model for this schema digest", None
        if not isinstance(message, str):
            return "payload is not text", None
        if self._inbox_full(len(message)):
            return "inbox full", None
        model = base_of(model)
        try:
            data = json.loads(message)
            if model is ChatMessage:  # each part validated once
                reason, items = self._chat_shape(data)
                if reason is not None:
                    return reason, None
                fast = _stamp_and_id(data.get("timestamp"), data.get("msg_id"))
                if fast is None:
                    head = _ChatHead.parse_obj({**data, "content": []})
                    fast = head.timestamp, head.msg_id
                chat = ChatMessage.construct(timestamp=fast[0], msg_id=fast[1], content=items)
                return None, chat
            if model is ChatAcknowledgement:
                ack = _plain_ack(data)
                if ack is not None:
                    return None, ack
            return None, model.parse_obj(data)  # what uagents will do with it
        except Exception as exc:  # pydantic v1 or v2 errors, TypeError, ValueError, anything
            return f"{type(exc).__name__}: {short(exc)}", None

    def _inbox_full(self, size: int) -> bool:
        """Whether ``size`` more bytes would put the inbox over its caps. The bytes held are
        tallied as payloads go in and come out (summing the whole inbox for every envelope
        was quadratic: ~14 ms an envelope with a gateway's inbox ten thousand deep)."""
        queue = _compat.inbox_of(self.agent)
        n = queue.qsize()
        if n >= self.settings.max_queued:
            return True
        sizes = self._queued
        while len(sizes) > n:  # taken since
            self._held -= sizes.popleft()
        if len(sizes) < n:  # some came in another way (not through this guard): count again
            sizes.clear()
            sizes.extend(len(i[2]) if len(i) > 2 else 0 for i in _compat.queued_payloads(queue))
            self._held = sum(sizes)
        return self._held + size > self.settings.max_queued_bytes

    def _queued_one(self, message: str) -> None:
        """A payload this guard let in is in the inbox now."""
        self._queued.append(len(message))
        self._held += len(message)

    def _chat_shape(self, data: Any) -> tuple[str | None, list[Any]]:
        """A ChatMessage checked item by item against the item's own model: pydantic v1 tries
        every member of the content union on a bad item (~0.4 ms each), this fails at the
        first. (why it is refused, []) or (None, the parsed items)."""
        if not isinstance(data, dict):
            return "not a JSON object", []
        extra = set(data) - _CHAT_FIELDS
        if extra:
            return f"unknown field {short(sorted(map(str, extra))[0], 40)!r}", []
        content = data.get("content")
        if not isinstance(content, list):
            return "content missing or not a list", []
        cap = self.settings.max_content_items
        if len(content) > cap:
            return f"{len(content)} content items (at most {cap})", []
        items: list[Any] = []
        for i, item in enumerate(content):
            model = _CHAT_ITEMS.get(item.get("type")) if isinstance(item, dict) else None
            if model is None:
                return f"content[{i}] is not a known content item", []
            plain = _plain_item(model, item)
            if plain is not None:
                items.append(plain)
                continue
            try:
                items.append(model.parse_obj(item))
            except Exception as exc:
                return f"content[{i}]: {type(exc).__name__}: {short(exc)}", []
        return None, items

    # -- the agent's handle_message ----------------------------------------------------------------
    def wrap(self, handle: HandleMessage) -> HandleMessage:
        """The guarded version of the agent's bound ``handle_message``.

        Args:
            handle: the agent's own ``handle_message``, called for what the guard lets in.

        Returns:
            :meth:`handle_message`, bound to this guard.
        """
        self._handle = handle
        return self.handle_message

    async def handle_message(
        self, sender: Any, schema_digest: str, message: Any, session: Any
    ) -> None:
        """Queue the payload the way uagents does, unless :meth:`check` refuses it.

        Args:
            sender: the envelope's sender.
            schema_digest: the payload's model digest.
            message: the payload (JSON text).
            session: the envelope's session.
        """
        if self.on_sender and type(sender) is str and not is_user_address(sender):
            for note in self.on_sender:
                note(sender)
        reason, parsed = self._inspect(schema_digest, message)
        if reason is None:
            assert self._handle is not None
            if self.on_chat and parsed.__class__ is ChatMessage and type(sender) is str:
                for arrived in self.on_chat:
                    arrived(sender, parsed)
            if parsed.__class__ in HANDED_OVER and self._hands_over(schema_digest):
                self.handover.put(message, parsed)
            try:
                await self._handle(sender, schema_digest, message, session)
            except BaseException:
                self.handover.take(message)  # not queued: nobody will take it
                raise
            self._queued_one(message)
            return
        self.stats["dropped"] += 1
        model = _compat.models_of(self.agent).get(schema_digest)
        self.log.warning(
            "%s: dropped a payload from %s (schema %s%s): %s",
            short(self.agent.address, 20),
            short(sender, 80),
            f"{model.__name__} " if model is not None else "",
            short(schema_digest, 24),
            reason,
        )
        if reason not in _NOT_ANSWERED:
            self._reply_error(str(sender), reason)

    def _hands_over(self, schema_digest: str) -> bool:
        """Whether uagents' parse for ``schema_digest`` takes from :attr:`handover` (made so
        the first time: the agent's models table gets the handover subclass)."""
        models = _compat.models_of(self.agent)
        model = models.get(schema_digest)
        if model is None:
            return False
        if base_of(model) is not model:
            return True
        if model not in HANDED_OVER:
            return False
        _compat.set_model(self.agent, schema_digest, self.handover.model_for(model))
        return True

    def _reply_error(self, sender: str, reason: str) -> None:
        """uagents' usual answer to a payload that does not parse, rate-limited per sender."""
        now = self.clock.now()
        last = self._last_error_reply.get(sender)
        if last is not None and now - last < self.settings.error_interval:
            return
        if len(self._error_tasks) >= self.settings.max_error_replies:
            return
        if not self._error_budget.take():
            return
        if len(self._last_error_reply) > 4096:
            self._last_error_reply.clear()
        self._last_error_reply[sender] = now

        async def send() -> None:
            ctx = _compat.build_context(self.agent)
            await ctx.send(
                sender,
                ErrorMessage(error=f"Message does not conform to expected schema: {reason}"),
                timeout=self.settings.error_timeout,
            )
            self.stats["error_replies"] += 1

        task = asyncio.ensure_future(send())
        self._error_tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._error_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.log.warning("could not send an ErrorMessage: %s", short(task.exception()))
