"""The encoder's per-message state and chunking: buffered appends become chat stream chunks.

Appends to a message's ``props.content`` are buffered by a TextChunker per message. A chunk of a
text type goes as chat stream text (the first one starts the stream); a chunk of a type carried
as metadata goes as one merged append delta.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from uagents_core.contrib.protocols.chat import EndStreamContent, StartStreamContent

from agent_stream.adapters.chat.render import PlainRenderer
from agent_stream.adapters.chat.wire import (
    KEEP_KEY,
    OP_CHUNK,
    OP_END,
    OP_MESSAGE,
    PROTOCOL_VERSION,
    STREAM_TYPES,
    TAG_KEY,
    Group,
    MessageKey,
    dumps,
    stream_id_for,
)
from agent_stream.message import Message

if TYPE_CHECKING:
    from agent_stream.chunking import TextChunker

__all__ = [
    "MessageChunking",
    "MessageState",
    "keeps_text",
    "plain_append",
    "release_due",
    "text_append",
]


class MessageState:
    """Encoder state of one logical message.

    Args:
        key: (thread_id, message_id).
        type_: its Message type.
        block_id: the block it is in (None: none).
    """

    __slots__ = (
        "block_id",
        "chunker",
        "deadline",
        "deferred",
        "empty_pending",
        "has_content",
        "key",
        "message_id",
        "open",
        "received",
        "sent",
        "shown",
        "stream_id",
        "text",
        "text_ok",
        "thread_id",
        "type",
        "visible",
        "wire_chunks",
        "withheld",
    )

    def __init__(self, key: MessageKey, type_: str, block_id: str | None) -> None:
        self.key = key
        self.thread_id, self.message_id = key
        self.block_id = block_id
        self.type = type_
        self.chunker: TextChunker | None = None  # set while its appends are buffered
        self.deferred: Group | None = None  # a message_start waiting for the first chunk
        self.open = False  # a chat stream was started and not yet ended
        self.stream_id: uuid.UUID | None = None
        self.withheld = False
        self.sent = False  # something of this message went on the wire
        self.shown = False  # a plain peer has seen text of it
        self.visible = False  # a chunk of its stream with text in it went (lean: may gather)
        self.has_content = False  # the decoder will have props for it
        self.empty_pending = False  # an empty text delta not yet on the wire
        self.received = 0  # content chunks fed
        self.wire_chunks = 0  # content chunks the decoder will rebuild
        self.text_ok = True  # props.content is a string or absent: string appends can merge
        self.text: list[str] | None = None  # its stream's chunks, when the peer keeps them too
        # lean: the chunker's last deadline known for the oldest text it held (see chunk)
        self.deadline: float | None = None


def release_due(chunker: TextChunker, now: float) -> float | None:
    """The chunker's deadline for its oldest character, as it will be once ``feed`` at ``now``
    has added a delta: the latest time what ``feed`` releases may wait (None: no deadline, an
    open code block: it goes at once).

    Args:
        chunker: the message's chunker, before the delta is fed.
        now: when the delta arrives.
    """
    return chunker.next_deadline if chunker.buffered else now + chunker.max_delay


def text_append(msg: Message) -> str | None:
    """The string a chunk appends to props.content, when it is a plain text append.

    Args:
        msg: the chunk.
    """
    if not msg.delta or msg.type_change:
        return None
    props = msg.props
    if not props:
        return None
    action = msg.delta_action
    if action is not None and action != "append":
        return None
    path = msg.delta_path
    if path is None:
        if len(props) != 1:
            return None
        value = props.get("content")
    elif path == "content":
        value = props.get("content")
    else:
        return None
    return value if isinstance(value, str) else None


def plain_append(msg: Message) -> str | None:
    """The string a chunk appends when it is a plain append, the form a writer gives each
    token: a delta whose props are ``content`` alone, a string, with no type change, path or
    action. None otherwise (:func:`text_append` also reads the other forms of a text append).

    Args:
        msg: the chunk.
    """
    if not msg.delta or msg.type_change or msg.delta_action is not None:
        return None
    if msg.delta_path is not None:
        return None
    props = msg.props
    if props is None or len(props) != 1:
        return None
    piece = props.get("content")
    return piece if piece.__class__ is str else None


def _str_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def keeps_text(msg: Message, ok: bool) -> bool:
    """Whether props.content is a string or absent after ``msg`` (``ok``: it was before).

    Conservative: False whenever ``msg`` may leave something else there. Merging two string
    appends into one is exact only onto a string (onto a list each would be an item).

    Args:
        msg: the chunk.
        ok: props.content was a string or absent before it.
    """
    props = msg.props
    if msg.type_change:
        return ok if props is None else _str_or_none(props.get("content"))
    if not msg.delta:
        return props is None or _str_or_none(props.get("content"))
    action = msg.delta_action or "append"
    path = msg.delta_path
    if path is None:
        if props is None or "content" not in props:
            return ok if action in ("append", "merge") else True
        value = props["content"]
        return (ok and isinstance(value, str)) if action == "append" else _str_or_none(value)
    if path.split(".", 1)[0] != "content":
        return ok
    if path != "content" or props is None:
        return False
    value = props.get("content")
    return (ok and isinstance(value, str)) if action == "append" else _str_or_none(value)


class MessageChunking:
    """Buffers each message's appends and turns its chunks into groups.

    It opens and ends each message's chat stream.

    Args:
        conversation: the conversation's id.
        chunker_opts: the TextChunker's options.
        renderer: renders what an untagged peer sees as text.
        route: takes each group in the order it is made.
        lean: the peer reads folds, so it keeps each stream's text (``keep=1``) and a
            message_end may leave out extra.content when it is that text (the chunks are kept
            here too, to compare), and it finds a stream by its message's ids: a chunk of a
            stream already open names those instead of the stream_id.
        gather: the peer reads the lean wire: each chunk's group carries its ``due`` (the
            chunker's deadline for its oldest character; for a chunk the chunker released on
            its own, its oldest character's arrival + ``window`` when later), so the batcher
            may hold it until then to gather it with later ones; a message's first chunk
            waits no longer than the chunker's deadline, a stream's first text not at all.
        window: the gather window (the lean wire's ``lean_gather``), in seconds.
    """

    def __init__(
        self,
        conversation: str,
        chunker_opts: dict[str, Any],
        renderer: PlainRenderer,
        route: Callable[[Group], None],
        lean: bool = False,
        gather: bool = False,
        window: float = 0.0,
    ) -> None:
        from agent_stream.chunking import TextChunker

        self.conversation = conversation
        self._chunker_cls = TextChunker
        self._chunker_opts = chunker_opts
        self._renderer = renderer
        self._route = route
        self._lean = lean
        self._gather = gather
        # how much longer than the chunker's deadline released text may wait to gather
        self._extra = max(0.0, window - chunker_opts["max_delay"]) if gather else 0.0
        self.live: dict[MessageKey, MessageState] = {}  # messages holding a chunker

    def buffer(self, u: MessageState, piece: str, now: float) -> None:
        """Feed an append of a message's content to its chunker (made on first use).

        Args:
            u: the message's encoder state.
            piece: the appended text.
            now: the current time, in seconds on a monotonic clock.
        """
        chunker = u.chunker
        if chunker is None:
            chunker = u.chunker = self._chunker_cls(**self._chunker_opts)
            self.live[u.key] = u
        if piece == "" and not u.has_content:
            u.empty_pending = True
        due = release_due(chunker, now)
        if due is not None:
            u.deadline = due
        for chunk in chunker.feed(piece, now):
            self.chunk(u, chunk, due, gathers=True)

    def drop(self, u: MessageState) -> None:
        """Forget a message's chunker (and what it still buffers).

        Args:
            u: the message's encoder state.
        """
        u.chunker = None
        self.live.pop(u.key, None)

    def flush(self, u: MessageState, gathers: bool = True) -> None:
        """Send what a message's chunker buffers (an empty append alone still goes once).

        Args:
            u: the message's encoder state.
            gathers: to a lean peer, the text may wait the gather window (False: a relay's
                flush, its chunk passed on as it came: the chunker's deadline at most).
        """
        chunker = u.chunker
        if chunker is None:
            return
        due = chunker.next_deadline
        chunks = chunker.flush()
        if not chunks and u.empty_pending and not u.has_content:
            chunks = [""]
        for chunk in chunks:
            self.chunk(u, chunk, due, gathers)

    def chunk(
        self, u: MessageState, text: str, due: float | None = None, gathers: bool = False
    ) -> None:
        """One chunk of a message's appends on the wire.

        Args:
            u: the message's encoder state.
            text: the chunk.
            due: the chunker's deadline for the chunk's oldest character (None: none, an open
                code block), what a lean peer's batcher may hold it to (None: it goes now).
            gathers: unless it is the message's first chunk, it may wait the gather window
                (False: a relay's flush).
        """
        if not self._gather:
            due = None
        elif gathers:
            if due is None:  # a code block the chunker held open has no deadline: the last
                due = u.deadline  # one it had holds for it too (its text came no sooner)
            if due is not None and u.wire_chunks:  # not the message's first: it may wait
                due += self._extra  # the gather window after its oldest character
        u.wire_chunks += 1
        u.has_content = True
        u.empty_pending = False
        if u.type not in STREAM_TYPES:
            # buffered appends of a type carried as metadata: one merged delta
            meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_MESSAGE, "message_id": u.message_id}
            if u.thread_id:
                meta["thread_id"] = u.thread_id
            if u.block_id:
                meta["block_id"] = u.block_id
            meta["type"] = u.type
            meta["props"] = dumps({"content": text})
            meta["delta"] = "true"
            if self._gather:  # a lean peer keeps the text of appends that were all merged
                if u.text is None and u.wire_chunks == 1 and u.stream_id is None:
                    u.text = []
                if u.text is not None and u.stream_id is None and len(u.text) == u.wire_chunks - 1:
                    u.text.append(text)
                    meta[KEEP_KEY] = "1"
            self.emit(u, Group(meta, [], owner=u.key, due=due))
            return
        u.shown = True
        if not u.visible:  # its first text never waits to gather
            due = None
            u.visible = text != ""
        item = self._renderer.text_item(text)
        if u.open:
            assert u.stream_id is not None
            if u.text is not None:
                u.text.append(text)
            if self._lean:
                meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_CHUNK, "message_id": u.message_id}
                if u.thread_id:
                    meta["thread_id"] = u.thread_id
            else:
                meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_CHUNK, "stream_id": str(u.stream_id)}
            self.emit(u, Group(meta, [item], owner=u.key, needs_turn=True, due=due))
            return
        if u.stream_id is None:
            u.stream_id = stream_id_for(self.conversation, u.thread_id, u.message_id)
        meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_CHUNK, "stream_id": str(u.stream_id)}
        meta["message_id"] = u.message_id
        if u.thread_id:
            meta["thread_id"] = u.thread_id
        if u.block_id:
            meta["block_id"] = u.block_id
        meta["type"] = u.type
        if self._lean:
            meta[KEEP_KEY] = "1"
            u.text = [text]
        u.open = True
        start = StartStreamContent.construct(type="start-stream", stream_id=u.stream_id)
        self.emit(u, Group(meta, [start, item], owner=u.key, opens=True))

    def end_item(self, u: MessageState, group: Group) -> None:
        """Add the end of a message's open chat stream to a group.

        Args:
            u: the message's encoder state.
            group: the group.
        """
        assert u.stream_id is not None
        group.items.append(EndStreamContent.construct(type="end-stream", stream_id=u.stream_id))
        group.closes = group.needs_turn = True
        u.open = False

    def close_stream(self, u: MessageState) -> None:
        """End a message's open chat stream in a group of its own.

        Args:
            u: the message's encoder state.
        """
        assert u.stream_id is not None
        meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_END, "stream_id": str(u.stream_id)}
        group = Group(meta, [], owner=u.key)
        self.end_item(u, group)
        self.emit(u, group)

    def emit(self, u: MessageState, group: Group) -> None:
        """Route a group of a message (after its deferred message_start, if any).

        Args:
            u: the message's encoder state.
            group: the group.
        """
        u.sent = True
        deferred = u.deferred
        if deferred is not None:
            u.deferred = None
            self._route(deferred)
        self._route(group)
