"""ChatEncoder: Messages in, ChatMessages out, for one conversation with one recipient.

It handles the lifecycle events and dispatches content: :mod:`.content` decides what each
content Message becomes (withheld, stream text, a whole text, metadata), :mod:`.messages` chunks
each message's appends, :mod:`.plain_order` serialises streams for a plain peer and :mod:`.batching`
batches the groups into ChatMessages.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat.batching import Batcher
from agent_stream.adapters.chat.content import ContentPolicy
from agent_stream.adapters.chat.messages import (
    MessageChunking,
    MessageState,
    plain_append,
    release_due,
)
from agent_stream.adapters.chat.plain_order import PlainOrder
from agent_stream.adapters.chat.render import PlainRenderer, error_line, message_meta
from agent_stream.adapters.chat.wire import (
    CHANNEL_OF_TYPE,
    CHAT_CHUNKER_DEFAULTS,
    EXTRA_KEY,
    EXTRA_STREAM,
    LEAN_GATHER,
    STREAM_TYPES,
    Group,
    MessageKey,
)
from agent_stream.ids import SeenIds
from agent_stream.message import (
    EVENT,
    MESSAGE_END,
    MESSAGE_START,
    STREAM_END,
    STREAM_START,
    TEXT,
    USER_INPUT,
    Message,
)

__all__ = ["ChatEncoder"]


class ChatEncoder:
    """Messages in, ChatMessages out, for one conversation with one recipient.

    Args:
        conversation: the conversation's id.
        tagged: the recipient declared tag support (streams interleave; else serialised).
        channels: extra channels it may get (``"reasoning"`` lets ``thinking`` through as
            metadata).
        session: the request opened a session, so the last ChatMessage carries
            EndSessionContent.
        chunker: TextChunker options over :data:`CHAT_CHUNKER_DEFAULTS`.
        meta_delay: seconds metadata-only groups may wait to ride with content (0: they go
            at once; poll at :attr:`next_deadline` for them to go on time), for a tagged
            asker; a plain one gets text in every ChatMessage (its bookkeeping waits for the
            next text, or the reply's end).
        fold: the recipient decodes folded items (its tag says ``fold=1``; only with
            ``tagged``): a message complete when its ChatMessage is cut goes as one group.
        lean: the recipient reads the lean wire (its tag says ``lean=1``; only with
            ``tagged``; implies ``fold``): text the chunker released waits, up to
            ``lean_gather`` after its oldest character, to go with later text in one
            ChatMessage (a message's first text never waits), a ChatMessage's consecutive
            chunks of one stream share one group, a stream's follow-on chunks name no ids,
            folded parts' ids are relative and reasoning carried as metadata is not repeated
            in its message_end (see the package docstring, Lean).
        cuts: the recipient reads cut text (its tag says ``cuts=1``; only with ``lean``): the
            chunks a group shares go as one TextContent, their concatenation, and the group's
            ``cuts`` says their lengths (see the package docstring, Lean).
        lean_gather: the lean wire's gather window, in seconds (:data:`~.wire.LEAN_GATHER`):
            how long after its oldest character's arrival text the chunker released may wait
            for later text to go with it (never less than the chunker's own deadline; text
            a relay flushes keeps the chunker's deadline). Ignored unless ``lean``.
        deterministic: ChatMessage msg_ids derived from the conversation and sequence number
            and a fixed timestamp (reproducible output).
        clock: the UTC time stamped on ChatMessages (None: the system's).
    """

    def __init__(
        self,
        conversation: str,
        *,
        tagged: bool = False,
        channels: Collection[str] | None = None,
        session: bool = False,
        chunker: dict[str, Any] | None = None,
        meta_delay: float = 0.1,
        fold: bool = False,
        lean: bool = False,
        cuts: bool = False,
        lean_gather: float = LEAN_GATHER,
        deterministic: bool = False,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        from agent_stream.chunking import TextChunker

        for name, value in (("meta_delay", meta_delay), ("lean_gather", lean_gather)):
            if isinstance(value, bool) or not 0 <= value < float("inf"):
                raise ValueError(f"ChatEncoder: {name} must be a finite number >= 0, got {value!r}")
        self.conversation = conversation
        self.meta_delay = meta_delay
        self.tagged = tagged
        self.channels = frozenset(channels or ())
        self.session = session
        self.lean = lean = lean and tagged
        self.cuts = cuts and lean
        self.lean_gather = lean_gather
        fold = fold or lean
        self.asks = False  # the reply asked the asker something (a user_input message)
        opts = dict(chunker or {})
        if "max_chars" in opts and "min_chars" not in opts:
            opts["min_chars"] = min(CHAT_CHUNKER_DEFAULTS["min_chars"], opts["max_chars"])
        chunker_opts = {**CHAT_CHUNKER_DEFAULTS, **opts}
        TextChunker(**chunker_opts)  # validate options now (ChunkerConfigError)
        withheld_types = frozenset(
            t for t, ch in CHANNEL_OF_TYPE.items() if ch not in self.channels
        )
        self._batcher = Batcher(
            conversation,
            meta_delay,
            deterministic=deterministic,
            clock=clock,
            text_first=not tagged,
            fold=fold and tagged,
            gather=lean,
            cuts=self.cuts,
        )
        self._plain_order = PlainOrder(tagged, self._batcher.add)
        self._plain = PlainRenderer(conversation)
        self._chunking = MessageChunking(
            conversation,
            chunker_opts,
            self._plain,
            self._plain_order.route,
            lean=fold and tagged,
            gather=lean,
            window=lean_gather,
        )
        self._policy = ContentPolicy(
            withheld_types, self._chunking, self._plain, self._plain_order.route
        )
        self._messages: dict[MessageKey, MessageState] = {}
        self._seen_chunk_ids = SeenIds("C")
        self._finished = False

    # -- public ----------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """True once the final stream_end went out."""
        return self._finished

    @property
    def next_deadline(self) -> float | None:
        """When :meth:`poll` may release buffered text or waiting metadata (None: nothing
        waits)."""
        best = self._batcher.meta_due
        for u in self._chunking.live.values():
            chunker = u.chunker
            if chunker is not None:
                d = chunker.next_deadline
                if d is not None and (best is None or d < best):
                    best = d
        return best

    def feed(self, msg: Message, now: float) -> list[ChatMessage]:
        """Encode one Message; returns the ChatMessages to send now (often none).

        Args:
            msg: the next Message of the reply.
            now: the current time, in seconds on a monotonic clock.
        """
        chunk_id = msg.chunk_id
        if chunk_id is not None and not self._seen_chunk_ids.add(chunk_id):
            return []  # the assembler ignores a repeated chunk id: so do we
        if msg.type == USER_INPUT:
            self.asks = True  # the reply waits for the asker's answer: its session goes on
        if msg.type == EVENT and self._event(msg):
            return self._batcher.pack(now, force=msg.event == STREAM_END)
        message_id = msg.message_id
        if message_id is None:
            self._flush_thread(msg.thread_id, None)
            self._policy.standalone(msg)
            return self._batcher.pack(now)
        key = (msg.thread_id, message_id)
        u = self._messages.get(key)
        if u is None:
            self._flush_thread(msg.thread_id, key)
            u = self._messages[key] = MessageState(key, msg.type, msg.block_id)
        else:
            if u.block_id is None and msg.block_id is not None:
                u.block_id = msg.block_id
            chunker = u.chunker  # set only while the message's appends are buffered
            if chunker is not None and (piece := plain_append(msg)):
                # the common case: one more token of a message already streaming
                u.received += 1
                release = None
                if self.lean:
                    release = release_due(chunker, now)
                    if release is not None:
                        u.deadline = release
                chunks = chunker.feed(piece, now)
                if not chunks:
                    due = self._batcher.meta_due
                    if due is not None and now >= due:
                        return self._batcher.pack(now)
                    return []
                for chunk in chunks:
                    self._chunking.chunk(u, chunk, release, gathers=True)
                return self._batcher.pack(now)
        self._policy.content(u, msg, now)
        return self._batcher.pack(now)

    def _flush_thread(self, thread_id: str | None, key: MessageKey | None) -> None:
        """A new message of a thread: the text its earlier messages' chunkers hold goes first,
        so the peer gets the thread's messages in the order they were written."""
        for u in list(self._chunking.live.values()):
            if (
                u.key[0] == thread_id
                and u.key != key
                and u.chunker is not None
                and u.chunker.buffered
            ):
                self._chunking.flush(u)

    def poll(self, now: float) -> list[ChatMessage]:
        """Release text the chunkers hold past their deadline, and metadata that has waited.

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        for u in list(self._chunking.live.values()):
            chunker = u.chunker
            due = chunker.next_deadline if chunker is not None else None
            if chunker is not None and due is not None and due <= now:
                for chunk in chunker.poll(now):
                    self._chunking.chunk(u, chunk, due, gathers=True)
        return self._batcher.pack(now)

    def end_streams(self, now: float) -> list[ChatMessage]:
        """End every open chat stream (buffered text first) without ending the reply.

        Waiting metadata goes too.

        Args:
            now: the current time, in seconds on a monotonic clock.
        """
        self._end_all()
        return self._batcher.pack(now, force=True)

    def flush(self, thread_id: str | None, message_id: str, now: float) -> list[ChatMessage]:
        """Send now what a message's chunker buffers; its stream stays open.

        A relay passes a sub-agent's chunks on as they came.

        Args:
            thread_id: the message's thread (None: none).
            message_id: the message's id.
            now: the current time, in seconds on a monotonic clock.
        """
        u = self._messages.get((thread_id, message_id))
        if u is None or u.chunker is None or not u.chunker.buffered:
            return []
        self._chunking.flush(u, gathers=False)
        return self._batcher.pack(now)

    def close(
        self, now: float, *, status: str = "completed", error: str | None = None
    ) -> list[ChatMessage]:
        """End every open stream and, unless the Messages ended the reply, send stream_end.

        Idempotent: after the final stream_end it returns nothing (unless Messages were fed
        after it).

        Args:
            now: the current time, in seconds on a monotonic clock.
            status: the stream_end's status.
            error: what went wrong, when it did.
        """
        if self._finished:
            self._end_all()
            return self._batcher.pack(now, force=True)
        data: dict[str, Any] = {"status": status}
        if error is not None:
            data["error"] = error
        self._stream_end(Message(type=EVENT, props={"event": STREAM_END, "data": data}))
        return self._batcher.pack(now, force=True)

    # -- lifecycle ------------------------------------------------------------------------------
    def _event(self, msg: Message) -> bool:
        """Handle a lifecycle event; False for other events (carried like any Message)."""
        name = msg.event
        if name == MESSAGE_START:
            self._message_start(msg)
        elif name == MESSAGE_END:
            self._message_end(msg)
        elif name == STREAM_END:
            self._stream_end(msg)
        elif name == STREAM_START or (name is not None and msg.is_lifecycle):
            if name == STREAM_START:
                self._finished = False  # a new reply begins
            self._plain_order.route(Group(message_meta(msg), []))
        else:
            return False
        return True

    def _message_start(self, msg: Message) -> None:
        data = msg.event_data
        message_id = data.get("message_id") or msg.message_id
        if not isinstance(message_id, str):
            self._plain_order.route(Group(message_meta(msg), []))
            return
        key = (data.get("thread_id") or msg.thread_id, message_id)
        u = self._messages.get(key)
        typ = data.get("type") or TEXT
        if u is None:
            u = self._messages[key] = MessageState(
                key, typ if isinstance(typ, str) else TEXT, msg.block_id
            )
        if u.withheld or (not u.sent and u.type in self._policy.withheld_types):
            u.withheld = True
            self._policy.withheld_seen.add(u.type)
            return
        group = Group(message_meta(msg), [], owner=key, part="start")
        if u.type in STREAM_TYPES and not u.sent and u.deferred is None:
            u.deferred = group  # goes out with the first chunk
        else:
            self._chunking.emit(u, group)

    def _message_end(self, msg: Message) -> None:
        data = msg.event_data
        message_id = data.get("message_id") or msg.message_id
        thread_id = data.get("thread_id") or msg.thread_id
        u = (
            self._messages.pop((thread_id, message_id), None)
            if isinstance(message_id, str)
            else None
        )
        if u is None:
            self._plain_order.route(Group(message_meta(msg), []))
            return
        if u.withheld and not u.sent:
            self._chunking.drop(u)
            return
        self._chunking.flush(u)
        self._chunking.drop(u)
        reported = data.get("chunk_count")
        if isinstance(reported, int) and not isinstance(reported, bool):
            count = reported - u.received + u.wire_chunks
            if reported != u.received and (count < 0 or count == u.wire_chunks):
                count = u.wire_chunks + 1  # keep the disagreement: chunks were lost before us
            count = max(count, 0)
        else:
            count = u.wire_chunks
        props = dict(msg.props or {})
        end_data = props["data"] = {**data, "chunk_count": count}
        kept = u.text
        elide = (
            kept is not None
            and (
                u.open
                or (  # a lean peer kept the appends carried as metadata, all of them
                    self.lean
                    and u.stream_id is None
                    and u.type not in STREAM_TYPES
                    and 0 < len(kept) == u.wire_chunks
                    and (msg.thread_id, msg.message_id) == u.key
                )
            )
            and next(reversed(end_data)) == EXTRA_KEY
            and end_data[EXTRA_KEY] == {"content": "".join(kept)}
        )
        if elide:  # the text carried twice: the peer kept it, and puts it back
            del end_data[EXTRA_KEY]
        group = Group(message_meta(msg, props), [], owner=u.key, part="end")
        if elide:
            group.meta[EXTRA_KEY] = EXTRA_STREAM
        if u.open:
            self._chunking.end_item(u, group)
        self._chunking.emit(u, group)

    def _stream_end(self, msg: Message) -> None:
        self._end_all()
        withheld = self.withheld_channels
        if withheld:  # the asker learns what it did not get, and why it may be missing
            props = dict(msg.props or {})
            props["data"] = {**msg.event_data, "withheld": withheld}
            msg = msg.model_copy(update={"props": props})
        data = msg.event_data
        items: list[Any] = []
        if data.get("status") == "error" and not self._plain.shown_error:
            items.append(
                TextContent.construct(
                    type="text", text=self._plain.line(error_line(data.get("error")))
                )
            )
        self._plain_order.route(Group(message_meta(msg), items, needs_turn=True))
        self._finished = True
        # a reply that asks the asker something does not end the session it is answered in
        self._batcher.session_end = self.session and not self.asks

    @property
    def withheld_channels(self) -> list[str]:
        """The channels (e.g. ``reasoning``) of Messages this encoder withheld so far."""
        seen = self._policy.withheld_seen
        return sorted({CHANNEL_OF_TYPE.get(t, t) for t in seen})

    def _end_all(self) -> None:
        # The turn holder first, then the rest in order: every stream ends, buffers flushed.
        messages = list(self._messages.values())
        holder = self._plain_order.holder
        if holder is not None:
            messages.sort(key=lambda u: u.key != holder)
        chunking = self._chunking
        for u in messages:
            chunking.flush(u)
            if u.open:
                chunking.close_stream(u)
            chunking.drop(u)
        self._plain_order.flush()
