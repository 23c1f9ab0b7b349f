"""The Agent Chat Protocol wire: Messages <-> uagents ``ChatMessage`` (pure, no I/O).

Each logical text message, keyed by (thread_id, message_id), is one chat stream
(StartStreamContent -> TextContent... -> EndStreamContent) whose stream_id is a UUID4 derived from
the conversation and the key (:func:`stream_id_for`). Text deltas are buffered by the
:class:`~agent_stream.chunker.TextChunker` into sentence/paragraph chunks.

What the chat models cannot carry travels in ``MetadataContent`` items in the same ChatMessage,
string values only. A ChatMessage's content is a run of *groups*: each group starts with a
MetadataContent whose dict holds ``TAG_KEY`` and describes the items after it, up to the next
tagged MetadataContent. Keys (absent ids are left out, never sent as "" or "None"):

==================  ==========================================================================
``agent_stream``    the tag (:data:`TAG_KEY`), protocol version ``"1"``
``seq``             per-conversation ChatMessage number 1, 2, ... (first group of a ChatMessage)
``seq_last``        the last number a :func:`coalesce`-d ChatMessage covers
``conversation``    the conversation the reply belongs to (first group of a ChatMessage); one
                    per reply (e.g. the request's msg_id): stream_ids derive from it, and the
                    decoder orders ChatMessages per (sender, conversation)
``op``              ``chunk``: the TextContent after it is a text chunk of stream ``stream_id``
                    (the group that opens the stream also has the message's ids and type);
                    ``text``: a whole text message, its content the TextContent after it;
                    ``message``: a Message carried in the metadata itself (items after it are
                    only a rendering for plain peers); ``end``: only ends stream ``stream_id``
``stream_id``       the chat stream of a ``chunk``/``end`` group
``message_id``, ``thread_id``, ``block_id``, ``type``   the Message's fields
``props``           the Message's props as JSON (``message`` groups)
``delta``, ``type_change``   ``"true"`` when set; ``delta_action``, ``delta_path`` when set
``message_metadata``         the Message's metadata (timestamp, sequence, trace_id) as JSON
==================  ==========================================================================

What a plain peer (one that ignores streams and metadata) sees, concatenating TextContent:

- ``text`` (and ``refusal``): its content, appended as it streams; a whole text message as one
  TextContent. A later *replacement* of text already sent (a non-delta chunk, a replace/set/merge
  delta) cannot be unsent: it travels as metadata and the plain peer keeps the old text.
- ``thinking``: nothing, not even as metadata, unless the recipient's channels include
  ``reasoning`` (then as metadata). Its message_start/message_end are withheld with it.
- ``tool_call``, ``loading``, ``action``, ``user_input``, events and custom types: nothing
  (metadata only).
- ``image``/``audio``/``video``: a ResourceContent with the URL and ``mime_type``.
- ``error``: a readable line ``Error: <message>`` (``Error (<code>): ...``) plus the metadata;
  a stream_end with status error and no error message before it adds the same line.
- ``type_change``: text already sent stays as sent; the correction is metadata. A change *to*
  text makes the new content visible from then on; a change to a withheld type (``thinking``)
  ends the chat stream, drops text still buffered and withholds the rest (the decoder learns the
  new type, with the text already sent as its content; if nothing was sent yet, the message is
  withheld whole); a change from a withheld type to text starts the message afresh (the withheld
  content is not revealed).

Without tag support declared by the recipient, streams are serialised (one open at a time, other
messages' text waits, order within each message kept). With it, they interleave as produced.

Batching (each ChatMessage is a signed envelope). Appends of a string to ``props.content`` of a
type carried as metadata (``thinking`` shared on the reasoning channel, custom types) are buffered
by a TextChunker per message like text and sent as one merged delta per chunk; a message_end's
``chunk_count`` counts those merged deltas. Groups that are only metadata (events, tool calls,
loading, merged deltas...) do not go alone at once: they wait, in order, and ride with the next
ChatMessage that carries content, or go on their own once the oldest has waited ``meta_delay``
seconds (:attr:`ChatEncoder.next_deadline` says when; :meth:`ChatEncoder.poll` sends them), and
always at stream_end, :meth:`ChatEncoder.end_streams` and :meth:`ChatEncoder.close`. Groups go on
the wire in the order they were produced: waiting never reorders them.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import re
import uuid
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError as _V2ValidationError
from pydantic.v1 import ValidationError as _V1ValidationError
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    Resource,
    ResourceContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.errors import StreamError, StreamWarning, WireError
from agent_stream.message import (
    AUDIO,
    ERROR,
    EVENT,
    IMAGE,
    MESSAGE_END,
    MESSAGE_START,
    REFUSAL,
    STREAM_END,
    STREAM_START,
    TEXT,
    THINKING,
    VIDEO,
    Message,
    Metadata,
)

if TYPE_CHECKING:
    from agent_stream.chunker import TextChunker

__all__ = [
    "CHAT_CHUNKER_DEFAULTS",
    "PROTOCOL_VERSION",
    "TAG_KEY",
    "ChatDecoder",
    "ChatEncoder",
    "cli_decoder",
    "cli_encode",
    "coalesce",
    "conversation_of",
    "is_tagged_request",
    "opens_session",
    "parse_chat",
    "request_tags",
    "requested_channels",
    "stream_id_for",
]

TAG_KEY = "agent_stream"
PROTOCOL_VERSION = "1"

# Types whose content is the user-facing text: streamed as TextContent.
STREAM_TYPES = frozenset((TEXT, REFUSAL))
# Types withheld unless the recipient's channels include theirs.
CHANNEL_OF_TYPE: dict[str, str] = {THINKING: "reasoning"}
_MEDIA = (IMAGE, AUDIO, VIDEO)

# Each ChatMessage is a signed envelope (~1 ms to sign, ~4 ms to verify, ~10 ms per hop on
# loopback), so the chat wire buffers more than the chunker's UI-minded defaults: chunks of at
# least two short sentences, released at most half a second after their first character.
CHAT_CHUNKER_DEFAULTS: dict[str, Any] = {"min_chars": 120, "max_delay": 0.5}

OP_CHUNK = "chunk"
OP_TEXT = "text"
OP_MESSAGE = "message"
OP_END = "end"

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_JSON_SEP = (",", ":")


def _dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=_JSON_SEP)


# -- ids ------------------------------------------------------------------------------------------
def _uuid4_from(*parts: str | None) -> uuid.UUID:
    """A valid UUID4 (version 4, RFC 4122 variant) derived from ``parts``."""
    key = json.dumps(parts, ensure_ascii=False).encode("utf-8")
    b = bytearray(hashlib.blake2b(key, digest_size=16).digest())
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(b))


def stream_id_for(conversation: str, thread_id: str | None, message_id: str | None) -> uuid.UUID:
    """The chat stream_id of message (thread_id, message_id) in ``conversation`` (a UUID4)."""
    return _uuid4_from("stream", conversation, thread_id or None, message_id or None)


# -- request side -------------------------------------------------------------------------------
def request_tags(channels: Iterable[str] = ()) -> MetadataContent:
    """The MetadataContent an asker adds to its request to declare it understands tags.

    ``channels`` are extra channels it would like (e.g. ``"reasoning"``); the sender decides.
    """
    md = {TAG_KEY: PROTOCOL_VERSION, "accept": "tags"}
    chans = sorted(set(channels))
    if chans:
        md["channels"] = ",".join(chans)
    return MetadataContent(metadata=md)


def _tagged_items(chat: ChatMessage) -> Iterator[dict[str, str]]:
    for item in chat.content:
        if isinstance(item, MetadataContent) and TAG_KEY in item.metadata:
            yield item.metadata


def is_tagged_request(chat: ChatMessage) -> bool:
    """True when ``chat`` carries the agent_stream tag (the asker decodes tagged replies)."""
    return next(_tagged_items(chat), None) is not None


def requested_channels(chat: ChatMessage) -> frozenset[str]:
    """The extra channels the asker asked for in its tag (a wish; the sender decides)."""
    out: set[str] = set()
    for md in _tagged_items(chat):
        out.update(c for c in md.get("channels", "").split(",") if c)
    return frozenset(out)


def opens_session(chat: ChatMessage) -> bool:
    """True when ``chat`` has a StartSessionContent."""
    return any(isinstance(item, StartSessionContent) for item in chat.content)


def conversation_of(chat: ChatMessage) -> str | None:
    """The conversation a tagged reply ChatMessage belongs to (None when untagged)."""
    for md in _tagged_items(chat):
        conv = md.get("conversation")
        if conv is not None:
            return conv
    return None


def coalesce(chats: Sequence[ChatMessage]) -> ChatMessage:
    """One ChatMessage carrying what ``chats`` (consecutive output of one encoder) carry.

    For a transport whose sends are slower than the encoder: ChatMessages waiting to be sent go
    as one. A plain peer reads the same text in the same order; the decoder learns the range of
    sequence numbers covered (``seq``..``seq_last``), so nothing looks lost.
    """
    if not chats:
        raise ValueError("coalesce needs at least one ChatMessage")
    if len(chats) == 1:
        return chats[0]
    content: list[Any] = []
    first_seq: str | None = None
    last_seq: str | None = None
    for chat in chats:
        head = True
        for item in chat.content:
            if head and isinstance(item, MetadataContent) and TAG_KEY in item.metadata:
                head = False
                md = dict(item.metadata)
                if "seq" in md:
                    if first_seq is None:
                        first_seq = md["seq"]
                    last_seq = md.get("seq_last", md["seq"])
                    md = {k: v for k, v in md.items()
                          if k not in ("seq", "seq_last", "conversation")}
                    conv = item.metadata.get("conversation")
                    if not content and conv is not None:
                        md["conversation"] = conv
                item = MetadataContent.construct(type="metadata", metadata=md)
            content.append(item)
    for item in content:
        if isinstance(item, MetadataContent) and TAG_KEY in item.metadata:
            if first_seq is not None:
                item.metadata["seq"] = first_seq
                if last_seq != first_seq:
                    item.metadata["seq_last"] = last_seq
            break
    # EndSessionContent (if any) stays last: it ends the reply
    ends = [i for i in content if isinstance(i, EndSessionContent)]
    content = [i for i in content if not isinstance(i, EndSessionContent)] + ends[-1:]
    return ChatMessage.construct(timestamp=chats[-1].timestamp, msg_id=chats[0].msg_id,
                                 content=content)


# -- encoder --------------------------------------------------------------------------------------
class _Group:
    """A MetadataContent and the content items it describes, as they will go on the wire."""

    __slots__ = ("closes", "floor", "items", "meta", "opens", "unit")

    def __init__(self, meta: dict[str, str], items: list[Any], unit: Any = None,
                 floor: bool = False, opens: bool = False, closes: bool = False) -> None:
        self.meta = meta
        self.items = items
        self.unit = unit
        self.floor = floor or opens or closes
        self.opens = opens
        self.closes = closes


class _Unit:
    """Encoder state of one logical message."""

    __slots__ = (
        "block_id",
        "chunker",
        "deferred",
        "empty_pending",
        "has_content",
        "key",
        "message_id",
        "open",
        "received",
        "sent",
        "shown",
        "sid",
        "text_ok",
        "thread_id",
        "type",
        "wire",
        "withheld",
    )

    def __init__(self, key: tuple[str | None, str], type_: str, block_id: str | None) -> None:
        self.key = key
        self.thread_id, self.message_id = key
        self.block_id = block_id
        self.type = type_
        self.chunker: TextChunker | None = None
        self.deferred: _Group | None = None  # a message_start waiting for the first chunk
        self.open = False  # a chat stream was started and not yet ended
        self.sid: uuid.UUID | None = None
        self.withheld = False
        self.sent = False  # something of this message went on the wire
        self.shown = False  # a plain peer has seen text of it
        self.has_content = False  # the decoder will have props for it
        self.empty_pending = False  # an empty text delta not yet on the wire
        self.received = 0  # content chunks fed
        self.wire = 0  # content chunks the decoder will rebuild
        self.text_ok = True  # props.content is a string or absent: string appends can merge


def _text_append(msg: Message) -> str | None:
    """The string ``msg`` appends to props.content, when it is a plain text append."""
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
        v = props.get("content")
    elif path == "content":
        v = props.get("content")
    else:
        return None
    return v if isinstance(v, str) else None


def _str_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _keeps_text(msg: Message, ok: bool) -> bool:
    """Whether props.content is a string or absent after ``msg`` (``ok``: it was before).

    Conservative: False whenever ``msg`` may leave something else there. Merging two string
    appends into one is exact only onto a string (onto a list each would be an item).
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
        v = props["content"]
        return (ok and isinstance(v, str)) if action == "append" else _str_or_none(v)
    if path.split(".", 1)[0] != "content":
        return ok
    if path != "content" or props is None:
        return False
    v = props.get("content")
    return (ok and isinstance(v, str)) if action == "append" else _str_or_none(v)


def _mime(kind: str, props: dict[str, Any]) -> str:
    url = props.get("url")
    guess = mimetypes.guess_type(url)[0] if isinstance(url, str) else None
    if guess and guess.startswith(kind + "/"):
        return guess
    fmt = props.get("format")
    if isinstance(fmt, str) and fmt:
        fmt = {"mp3": "mpeg", "jpg": "jpeg"}.get(fmt.lower(), fmt.lower())
        return f"{kind}/{fmt}"
    return f"{kind}/*"


def _error_line(message: Any, code: Any = None) -> str:
    msg = message if isinstance(message, str) and message else "the reply failed"
    if isinstance(code, str) and code:
        return f"Error ({code}): {msg}"
    return f"Error: {msg}"


class ChatEncoder:
    """Messages in, ChatMessages out, for one conversation with one recipient.

    ``tagged``: the recipient declared tag support (streams interleave; else serialised).
    ``channels``: extra channels it may get (``"reasoning"`` lets ``thinking`` through as
    metadata). ``session``: the request opened a session, so the last ChatMessage carries
    EndSessionContent. ``chunker``: TextChunker options over :data:`CHAT_CHUNKER_DEFAULTS`.
    ``deterministic``: ChatMessage msg_ids derived from the conversation and sequence number and
    a fixed timestamp (reproducible output). ``clock``: the UTC time stamped on ChatMessages.
    ``meta_delay``: seconds metadata-only groups may wait to ride with content (0: they go at
    once; poll at :attr:`next_deadline` for them to go on time).
    """

    def __init__(self, conversation: str, *, tagged: bool = False,
                 channels: Collection[str] | None = None, session: bool = False,
                 chunker: dict[str, Any] | None = None, meta_delay: float = 0.1,
                 deterministic: bool = False,
                 clock: Callable[[], datetime] | None = None) -> None:
        from agent_stream.chunker import TextChunker

        if not 0 <= meta_delay < float("inf"):
            raise ValueError(f"ChatEncoder: meta_delay must be a finite number >= 0, "
                             f"got {meta_delay!r}")
        self.conversation = conversation
        self.meta_delay = meta_delay
        self.tagged = tagged
        self.channels = frozenset(channels or ())
        self.session = session
        opts = dict(chunker or {})
        if "max_chars" in opts and "min_chars" not in opts:
            opts["min_chars"] = min(CHAT_CHUNKER_DEFAULTS["min_chars"], opts["max_chars"])
        self._chunker_opts = {**CHAT_CHUNKER_DEFAULTS, **opts}
        TextChunker(**self._chunker_opts)  # validate options now (ChunkerConfigError)
        self._chunker_cls = TextChunker
        self._deterministic = deterministic
        self._clock = clock
        self._withheld_types = frozenset(
            t for t, ch in CHANNEL_OF_TYPE.items() if ch not in self.channels)
        self._units: dict[tuple[str | None, str], _Unit] = {}
        self._live: dict[tuple[str | None, str], _Unit] = {}  # units holding a chunker
        self._seen: set[str] = set()
        self._seq = 0
        self._res = 0
        self._out: list[_Group] = []  # groups for the next ChatMessage, in wire order
        self._scanned = 0  # _out[:_scanned] are metadata-only
        self._meta_due: float | None = None  # _out holds only metadata, to go by then
        self._fifo: deque[_Group] = deque()
        self._floor: Any = None
        self._shown_text = False
        self._shown_error = False
        self._finished = False
        self._session_end = False

    # -- public ----------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """True once the final stream_end went out."""
        return self._finished

    @property
    def next_deadline(self) -> float | None:
        """When :meth:`poll` may release buffered text or waiting metadata (None: nothing
        waits)."""
        best = self._meta_due
        for u in self._live.values():
            ch = u.chunker
            if ch is not None:
                d = ch.next_deadline
                if d is not None and (best is None or d < best):
                    best = d
        return best

    def feed(self, msg: Message, now: float) -> list[ChatMessage]:
        """Encode one Message; returns the ChatMessages to send now (often none)."""
        cid = msg.chunk_id
        if cid is not None:
            if cid in self._seen:
                return []  # the assembler ignores a repeated chunk id: so do we
            self._seen.add(cid)
        mtype = msg.type
        if mtype == EVENT:
            name = msg.event
            if name == MESSAGE_START:
                self._message_start(msg)
                return self._pack(now)
            if name == MESSAGE_END:
                self._message_end(msg)
                return self._pack(now)
            if name == STREAM_END:
                self._stream_end(msg)
                return self._pack(now, force=True)
            if name == STREAM_START or (name is not None and msg.is_lifecycle):
                if name == STREAM_START:
                    self._finished = False  # a new reply begins
                self._route(_Group(self._meta_of(msg), []))
                return self._pack(now)
        mid = msg.message_id
        if mid is None:
            self._standalone(msg)
            return self._pack(now)
        key = (msg.thread_id, mid)
        u = self._units.get(key)
        if u is None:
            u = self._units[key] = _Unit(key, mtype, msg.block_id)
        else:
            if u.block_id is None and msg.block_id is not None:
                u.block_id = msg.block_id
            ch = u.chunker  # set only while the message's appends are buffered
            if (ch is not None and msg.delta and not msg.type_change
                    and msg.delta_action is None and msg.delta_path is None):
                props = msg.props
                if props is not None and len(props) == 1:
                    piece = props.get("content")
                    if piece.__class__ is str and piece:
                        # the common case: one more token of a message already streaming
                        u.received += 1
                        chunks = ch.feed(piece, now)
                        if not chunks:
                            due = self._meta_due
                            if due is not None and now >= due:
                                return self._pack(now)
                            return []
                        for c in chunks:
                            self._chunk(u, c)
                        return self._pack(now)
        self._content(u, msg, now)
        return self._pack(now)

    def poll(self, now: float) -> list[ChatMessage]:
        """Release text the chunkers hold past their deadline, and metadata that has waited
        ``meta_delay``."""
        for u in list(self._live.values()):
            ch = u.chunker
            if ch is not None and ch.next_deadline is not None and ch.next_deadline <= now:
                for c in ch.poll(now):
                    self._chunk(u, c)
        return self._pack(now)

    def end_streams(self, now: float) -> list[ChatMessage]:
        """End every open chat stream (buffered text first) without ending the reply; waiting
        metadata goes too."""
        self._end_all()
        return self._pack(now, force=True)

    def close(self, now: float, *, status: str = "completed",
              error: str | None = None) -> list[ChatMessage]:
        """End every open stream and, unless the Messages ended the reply, send stream_end.

        Idempotent: after the final stream_end it returns nothing (unless Messages were fed
        after it).
        """
        if self._finished:
            self._end_all()
            return self._pack(now, force=True)
        data: dict[str, Any] = {"status": status}
        if error is not None:
            data["error"] = error
        self._stream_end(Message(type=EVENT, props={"event": STREAM_END, "data": data}))
        return self._pack(now, force=True)

    # -- lifecycle ------------------------------------------------------------------------------
    def _message_start(self, msg: Message) -> None:
        data = msg.event_data
        mid = data.get("message_id") or msg.message_id
        if not isinstance(mid, str):
            self._route(_Group(self._meta_of(msg), []))
            return
        tid = data.get("thread_id") or msg.thread_id
        key = (tid, mid)
        u = self._units.get(key)
        typ = data.get("type") or TEXT
        if u is None:
            u = self._units[key] = _Unit(key, typ if isinstance(typ, str) else TEXT,
                                         msg.block_id)
        if u.withheld or (not u.sent and u.type in self._withheld_types):
            u.withheld = True
            return
        g = _Group(self._meta_of(msg), [], unit=key)
        if u.type in STREAM_TYPES and not u.sent and u.deferred is None:
            u.deferred = g  # goes out with the first chunk
        else:
            self._gen(u, g)

    def _message_end(self, msg: Message) -> None:
        data = msg.event_data
        mid = data.get("message_id") or msg.message_id
        tid = data.get("thread_id") or msg.thread_id
        u = self._units.pop((tid, mid), None) if isinstance(mid, str) else None
        if u is None:
            self._route(_Group(self._meta_of(msg), []))
            return
        if u.withheld and not u.sent:
            self._drop_chunker(u)
            return
        self._flush_unit(u)
        self._drop_chunker(u)
        reported = data.get("chunk_count")
        if isinstance(reported, int) and not isinstance(reported, bool):
            count = reported - u.received + u.wire
            if reported != u.received and (count < 0 or count == u.wire):
                count = u.wire + 1  # keep the disagreement: chunks were lost before us
            count = max(count, 0)
        else:
            count = u.wire
        new_data = dict(data)
        new_data["chunk_count"] = count
        props = dict(msg.props or {})
        props["data"] = new_data
        g = _Group(self._meta_of(msg, props), [], unit=u.key)
        if u.open:
            assert u.sid is not None
            g.items.append(EndStreamContent.construct(type="end-stream", stream_id=u.sid))
            g.closes = g.floor = True
            u.open = False
        self._gen(u, g)

    def _stream_end(self, msg: Message) -> None:
        self._end_all()
        data = msg.event_data
        items: list[Any] = []
        if data.get("status") == "error" and not self._shown_error:
            items.append(TextContent.construct(type="text", text=self._line(
                _error_line(data.get("error")))))
        self._route(_Group(self._meta_of(msg), items, floor=True))
        self._finished = True
        self._session_end = self.session

    def _end_all(self) -> None:
        # The floor holder first, then the rest in order: every stream ends, buffers flushed.
        units = list(self._units.values())
        if self._floor is not None:
            units.sort(key=lambda u: u.key != self._floor)
        for u in units:
            self._flush_unit(u)
            if u.open:
                self._close_stream(u)
            self._drop_chunker(u)
        self._drain()

    # -- content --------------------------------------------------------------------------------
    def _standalone(self, msg: Message) -> None:
        mtype = msg.type
        if mtype in self._withheld_types:
            return
        props = msg.props
        if (mtype in STREAM_TYPES and not msg.delta and not msg.type_change and props
                and len(props) == 1 and isinstance(props.get("content"), str)):
            meta = self._ids_meta(msg, OP_TEXT)
            self._route(_Group(meta, [self._text_item(props["content"])], floor=True))
            return
        g = _Group(self._meta_of(msg), [])
        self._render_plain(msg, g, None)
        self._route(g)

    def _content(self, u: _Unit, msg: Message, now: float) -> None:
        u.received += 1
        new_type = msg.type if msg.type_change or not msg.delta else u.type
        withheld_now = new_type in self._withheld_types
        if withheld_now:
            if u.withheld or not u.sent:
                u.withheld = True
                u.deferred = None
                u.type = new_type
                self._drop_chunker(u)
                return
            # visible -> withheld: text still buffered is now known to be reasoning and is
            # dropped; the stream ends; the decoder learns the new type; the rest is withheld.
            u.type = new_type
            u.withheld = True
            g = _Group(self._meta_of(Message(
                type=new_type, type_change=True, message_id=msg.message_id,
                thread_id=msg.thread_id, block_id=msg.block_id)), [], unit=u.key)
            if u.open:
                self._end_item(u, g)
            self._drop_chunker(u)
            u.wire += 1
            self._gen(u, g)
            return
        if u.withheld:
            # withheld -> visible: start afresh as a whole message (withheld content stays so)
            u.withheld = False
            props = msg.props if (msg.props is not None and not msg.delta) else {}
            msg = Message(type=new_type, props=props, message_id=msg.message_id,
                          thread_id=msg.thread_id, block_id=msg.block_id, metadata=msg.metadata)
        if new_type != u.type and u.chunker is not None:
            # what is buffered goes out as what it was written as
            self._flush_unit(u)
            self._drop_chunker(u)
        u.type = new_type
        ok = u.text_ok
        u.text_ok = _keeps_text(msg, ok)
        # Appends to props.content are buffered: as chat stream text for the text types, as
        # merged deltas carried as metadata for the others (when the content is a string).
        piece = _text_append(msg) if ok or new_type in STREAM_TYPES else None
        if piece is not None:
            ch = u.chunker
            if ch is None:
                ch = u.chunker = self._chunker_cls(**self._chunker_opts)
                self._live[u.key] = u
            if piece == "" and not u.has_content:
                u.empty_pending = True
            for c in ch.feed(piece, now):
                self._chunk(u, c)
            return
        if new_type in STREAM_TYPES:
            whole = msg.props
            if (not msg.delta and not msg.type_change and not u.shown and whole
                    and len(whole) == 1 and isinstance(whole.get("content"), str)):
                self._flush_unit(u)
                if not u.shown:
                    u.shown = u.has_content = True
                    u.wire += 1
                    meta = self._ids_meta(msg, OP_TEXT)
                    self._gen(u, _Group(meta, [self._text_item(whole["content"])], unit=u.key,
                                        floor=True))
                    return
        # carried as metadata (after any buffered text of the same message)
        self._flush_unit(u)
        g = _Group(self._meta_of(msg), [], unit=u.key)
        self._render_plain(msg, g, u)
        if new_type not in STREAM_TYPES:
            self._drop_chunker(u)
            if u.open:
                self._end_item(u, g)
        u.wire += 1
        u.has_content = True
        self._gen(u, g)

    def _render_plain(self, msg: Message, g: _Group, u: _Unit | None) -> None:
        """Items a plain peer reads for a Message carried as metadata."""
        mtype = msg.type
        props = msg.props or {}
        if mtype == ERROR and not msg.delta:
            g.items.append(self._text_item(self._line(_error_line(props.get("message"),
                                                                  props.get("code")))))
            g.floor = True
            self._shown_error = True
        elif mtype in _MEDIA and not msg.delta and isinstance(props.get("url"), str):
            md = {"mime_type": _mime(mtype, props)}
            alt = props.get("alt")
            if isinstance(alt, str) and alt:
                md["alt"] = alt
            self._res += 1
            rid = _uuid4_from("resource", self.conversation, str(self._res))
            g.items.append(ResourceContent.construct(
                type="resource", resource_id=rid,
                resource=Resource.construct(uri=props["url"], metadata=md)))
        elif (mtype in STREAM_TYPES and (not msg.delta or msg.type_change) and u is not None
              and not u.shown and isinstance(props.get("content"), str)):
            g.items.append(self._text_item(props["content"]))
            g.floor = True
            u.shown = True

    def _line(self, line: str) -> str:
        return ("\n\n" + line) if self._shown_text else line

    def _text_item(self, text: str) -> TextContent:
        if text:
            self._shown_text = True
        return TextContent.construct(type="text", text=text)

    # -- streams --------------------------------------------------------------------------------
    def _drop_chunker(self, u: _Unit) -> None:
        u.chunker = None
        self._live.pop(u.key, None)

    def _flush_unit(self, u: _Unit) -> None:
        ch = u.chunker
        if ch is None:
            return
        chunks = ch.flush()
        if not chunks and u.empty_pending and not u.has_content:
            chunks = [""]
        for c in chunks:
            self._chunk(u, c)

    def _chunk(self, u: _Unit, text: str) -> None:
        u.wire += 1
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
            meta["props"] = _dumps({"content": text})
            meta["delta"] = "true"
            self._gen(u, _Group(meta, [], unit=u.key))
            return
        u.shown = True
        if u.open:
            assert u.sid is not None
            meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_CHUNK, "stream_id": str(u.sid)}
            self._gen(u, _Group(meta, [self._text_item(text)], unit=u.key, floor=True))
            return
        if u.sid is None:
            u.sid = stream_id_for(self.conversation, u.thread_id, u.message_id)
        meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_CHUNK, "stream_id": str(u.sid)}
        meta["message_id"] = u.message_id
        if u.thread_id:
            meta["thread_id"] = u.thread_id
        if u.block_id:
            meta["block_id"] = u.block_id
        meta["type"] = u.type
        u.open = True
        self._gen(u, _Group(meta, [
            StartStreamContent.construct(type="start-stream", stream_id=u.sid),
            self._text_item(text)], unit=u.key, opens=True))

    def _end_item(self, u: _Unit, g: _Group) -> None:
        assert u.sid is not None
        g.items.append(EndStreamContent.construct(type="end-stream", stream_id=u.sid))
        g.closes = g.floor = True
        u.open = False

    def _close_stream(self, u: _Unit) -> None:
        assert u.sid is not None
        meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_END, "stream_id": str(u.sid)}
        g = _Group(meta, [], unit=u.key)
        self._end_item(u, g)
        self._gen(u, g)

    # -- routing (serialisation for plain peers) -------------------------------------------------
    def _gen(self, u: _Unit, g: _Group) -> None:
        u.sent = True
        d = u.deferred
        if d is not None:
            u.deferred = None
            self._route(d)
        self._route(g)

    def _route(self, g: _Group) -> None:
        if self.tagged:
            self._out.append(g)
            return
        floor = self._floor
        if floor is not None and g.unit == floor:
            self._emit(g)  # the floor holder's items overtake what waits
        elif self._fifo or (g.floor and floor is not None):
            self._fifo.append(g)
        else:
            self._emit(g)

    def _emit(self, g: _Group) -> None:
        self._out.append(g)
        if g.opens:
            self._floor = g.unit
        elif g.closes and g.unit == self._floor:
            self._floor = None
            self._drain()

    def _drain(self) -> None:
        q = self._fifo
        while q:
            g = q[0]
            floor = self._floor
            if g.floor and floor is not None and g.unit != floor:
                return
            q.popleft()
            self._out.append(g)
            if g.opens:
                self._floor = g.unit
                self._extract(g.unit)
            elif g.closes and g.unit == self._floor:
                self._floor = None

    def _extract(self, unit: Any) -> None:
        """Emit the new floor holder's waiting items (up to its stream's end)."""
        q = self._fifo
        if not q:
            return
        keep: list[_Group] = []
        while q:
            g = q.popleft()
            if self._floor == unit and g.unit == unit:
                self._out.append(g)
                if g.closes:
                    self._floor = None
            else:
                keep.append(g)
        q.extend(keep)

    # -- metadata -------------------------------------------------------------------------------
    def _ids_meta(self, msg: Message, op: str) -> dict[str, str]:
        meta = {TAG_KEY: PROTOCOL_VERSION, "op": op, **msg.ids()}
        meta["type"] = msg.type
        return meta

    def _meta_of(self, msg: Message, props: dict[str, Any] | None = None) -> dict[str, str]:
        meta = self._ids_meta(msg, OP_MESSAGE)
        p = props if props is not None else msg.props
        if p is not None:
            meta["props"] = _dumps(p)
        if msg.delta:
            meta["delta"] = "true"
        if msg.delta_action:
            meta["delta_action"] = msg.delta_action
        if msg.delta_path:
            meta["delta_path"] = msg.delta_path
        if msg.type_change:
            meta["type_change"] = "true"
        if msg.metadata is not None:
            md = msg.metadata.to_dict()
            if md:
                meta["message_metadata"] = _dumps(md)
        return meta

    def _pack(self, now: float, force: bool = False) -> list[ChatMessage]:
        """The ChatMessage carrying the groups produced so far, if one is to go now.

        Metadata-only groups wait (in order) for the next ChatMessage that carries content, at
        most ``meta_delay`` seconds (``force``: go now).
        """
        out = self._out
        if not out:
            if not self._session_end:
                return []
        elif not force:
            i, n = self._scanned, len(out)
            while i < n and not out[i].items:
                i += 1
            if i == n:
                self._scanned = n
                due = self._meta_due
                if due is None:
                    due = self._meta_due = now + self.meta_delay
                if now < due:
                    return []
        self._out = []
        self._scanned = 0
        self._meta_due = None
        self._seq += 1
        content: list[Any] = []
        first = True
        for g in out:
            meta = g.meta
            if first:
                meta["seq"] = str(self._seq)
                meta["conversation"] = self.conversation
                first = False
            content.append(MetadataContent.construct(type="metadata", metadata=meta))
            content.extend(g.items)
        if self._session_end:
            self._session_end = False
            if first:
                content.append(MetadataContent.construct(type="metadata", metadata={
                    TAG_KEY: PROTOCOL_VERSION, "op": OP_END, "seq": str(self._seq),
                    "conversation": self.conversation}))
            content.append(EndSessionContent.construct(type="end-session"))
        if self._deterministic:
            msg_id = _uuid4_from("msg", self.conversation, str(self._seq))
            ts = _EPOCH
        else:
            msg_id = uuid.uuid4()
            ts = self._clock() if self._clock is not None else datetime.now(timezone.utc)
        return [ChatMessage.construct(timestamp=ts, msg_id=msg_id, content=content)]


# -- decoder --------------------------------------------------------------------------------------
class _Stream:
    __slots__ = ("announced", "block_id", "bytes", "chunks", "conv", "last", "message_id",
                 "rejected", "sid", "tagged", "thread_id", "type")

    def __init__(self, sid: str, message_id: str, thread_id: str | None, block_id: str | None,
                 type_: str, tagged: bool, conv: str | None, now: float) -> None:
        self.sid = sid
        self.message_id = message_id
        self.thread_id = thread_id
        self.block_id = block_id
        self.type = type_
        self.tagged = tagged
        self.conv = conv
        self.bytes = 0
        self.chunks = 0
        self.last = now
        self.rejected = False  # over a limit: the rest of its text is dropped
        self.announced = False  # message_start emitted (untagged streams)


class _Conv:
    __slots__ = ("expected", "finished", "gap_since", "held", "message_bytes", "over")

    def __init__(self) -> None:
        self.expected = 1
        self.held: dict[int, tuple[ChatMessage, int]] = {}  # by seq: (chat, last seq covered)
        self.gap_since: float | None = None
        self.finished = False
        self.message_bytes: dict[tuple[str | None, str], int] = {}
        self.over: set[tuple[str | None, str]] = set()


class _Peer:
    __slots__ = ("convs", "refused", "seen", "streams")

    def __init__(self) -> None:
        self.streams: dict[str, _Stream] = {}  # open streams in order of start
        self.refused: dict[str, None] = {}  # streams refused (too many open), bounded
        self.convs: dict[str, _Conv] = {}
        self.seen: dict[Any, None] = {}  # recent msg_ids, oldest first


_SEEN_MAX = 4096


def _seq_number(s: str | None) -> int | None:
    if s is None or not s.isascii() or not s.isdecimal() or len(s) > 18:
        return None
    return int(s)


class ChatDecoder:
    """ChatMessages in (from any number of senders), Messages out.

    Tagged replies are rebuilt with their ids, types and hierarchy; untagged chat streams from
    agents without agent_stream become text messages with ids of the decoder's own (``U1``...).
    Bad peer input never raises: it is dropped and reported by :meth:`drain_warnings`.

    Limits: ``max_open_streams`` open chat streams per sender (more are refused),
    ``max_stream_bytes`` UTF-8 bytes of text per chat stream and ``max_message_bytes`` per
    logical message (text and metadata-carried props; the rest of it is dropped),
    ``idle_timeout`` seconds without text before an open stream is closed with status error,
    ``reorder_window`` tagged ChatMessages held back waiting for a missing one, for at most
    ``gap_timeout`` seconds; then the gap is reported and decoding goes on.
    """

    def __init__(self, *, reorder_window: int = 64, gap_timeout: float = 2.0,
                 idle_timeout: float = 60.0, max_open_streams: int = 64,
                 max_stream_bytes: int = 8 * 2**20, max_message_bytes: int = 8 * 2**20) -> None:
        for name, v in (("reorder_window", reorder_window), ("gap_timeout", gap_timeout),
                        ("idle_timeout", idle_timeout), ("max_open_streams", max_open_streams),
                        ("max_stream_bytes", max_stream_bytes),
                        ("max_message_bytes", max_message_bytes)):
            if v < 0 or (name.startswith("max_") and v < 1):
                raise ValueError(f"ChatDecoder: {name} must be positive, got {v!r}")
        self.reorder_window = reorder_window
        self.gap_timeout = gap_timeout
        self.idle_timeout = idle_timeout
        self.max_open_streams = max_open_streams
        self.max_stream_bytes = max_stream_bytes
        self.max_message_bytes = max_message_bytes
        self._peers: dict[str, _Peer] = {}
        self._warnings: list[StreamWarning] = []
        self._n = 0

    # -- public ---------------------------------------------------------------------------------
    def feed(self, sender: str, chat: ChatMessage, now: float) -> list[Message]:
        """Decode one ChatMessage from ``sender``; never raises for bad peer input."""
        out: list[Message] = []
        peer = self._peers.get(sender)
        if peer is None:
            peer = self._peers[sender] = _Peer()
        seen = peer.seen
        mid = chat.msg_id
        if mid in seen:
            self._warn("duplicate_chat_message", f"msg_id {mid} seen before; dropped")
            return out
        seen[mid] = None
        if len(seen) > _SEEN_MAX:
            del seen[next(iter(seen))]
        head = None
        for item in chat.content:
            if isinstance(item, MetadataContent) and TAG_KEY in item.metadata:
                head = item.metadata
                break
        if head is None:
            self._untagged(peer, chat, now, out)
            return out
        conv_id = head.get("conversation", "")
        seq_s = head.get("seq")
        seq = _seq_number(seq_s)
        if seq is None:
            self._tagged(peer, conv_id, chat, now, out)
            return out
        last = max(_seq_number(head.get("seq_last")) or seq, seq)
        c = peer.convs.get(conv_id)
        if c is None or (c.finished and seq == 1 and not c.held):
            c = peer.convs[conv_id] = _Conv()  # new, or a new reply reusing the conversation id
        if seq < c.expected:
            self._warn("late_chat_message", f"ChatMessage {seq} of conversation {conv_id!r} "
                       "arrived after its gap was reported; dropped")
            return out
        if seq > c.expected:
            c.held[seq] = (chat, last)
            if c.gap_since is None:
                c.gap_since = now
            if len(c.held) > self.reorder_window or seq - c.expected > self.reorder_window:
                self._skip_gap(peer, conv_id, c, now, out)
            return out
        self._tagged(peer, conv_id, chat, now, out)
        c.expected = last + 1
        self._release(peer, conv_id, c, now, out)
        return out

    def poll(self, now: float) -> list[Message]:
        """Report gaps older than gap_timeout and close streams idle for idle_timeout."""
        out: list[Message] = []
        for peer in self._peers.values():
            for conv_id, c in list(peer.convs.items()):
                if c.gap_since is not None and now - c.gap_since >= self.gap_timeout:
                    self._skip_gap(peer, conv_id, c, now, out)
            for s in list(peer.streams.values()):
                if now - s.last >= self.idle_timeout:
                    self._warn("stream_timeout", f"no text for {self.idle_timeout:g} s; "
                               "stream closed as error", s.message_id, s.thread_id)
                    del peer.streams[s.sid]
                    out.append(self._end_event(s, "error", error="idle timeout"))
        return out

    def drain(self) -> list[Message]:
        """Decode every held-back ChatMessage now, reporting the gaps (end of input)."""
        out: list[Message] = []
        for peer in self._peers.values():
            for conv_id, c in list(peer.convs.items()):
                while c.held:
                    self._skip_gap(peer, conv_id, c, 0.0, out)
        return out

    @property
    def next_deadline(self) -> float | None:
        """When :meth:`poll` has something to do (None: nothing pending)."""
        best: float | None = None
        for peer in self._peers.values():
            for c in peer.convs.values():
                if c.gap_since is not None:
                    d = c.gap_since + self.gap_timeout
                    if best is None or d < best:
                        best = d
            for s in peer.streams.values():
                d = s.last + self.idle_timeout
                if best is None or d < best:
                    best = d
        return best

    def drain_warnings(self) -> list[StreamWarning]:
        """Warnings since the last call (gaps, duplicates, unknown streams, limits)."""
        w = self._warnings
        self._warnings = []
        return w

    def finished(self, sender: str, conversation: str | None = None) -> bool:
        """True when the sender's final stream_end was decoded (of ``conversation``, or of every
        conversation seen from it)."""
        peer = self._peers.get(sender)
        if peer is None:
            return False
        if conversation is not None:
            c = peer.convs.get(conversation)
            return c is not None and c.finished
        return bool(peer.convs) and all(c.finished for c in peer.convs.values())

    def forget(self, sender: str) -> None:
        """Drop every state kept for ``sender``."""
        self._peers.pop(sender, None)

    def open_streams(self, sender: str) -> int:
        """How many chat streams of ``sender`` are open."""
        peer = self._peers.get(sender)
        return len(peer.streams) if peer is not None else 0

    # -- ordering -------------------------------------------------------------------------------
    def _release(self, peer: _Peer, conv_id: str, c: _Conv, now: float,
                 out: list[Message]) -> None:
        held = c.held
        while c.expected in held:
            chat, last = held.pop(c.expected)
            self._tagged(peer, conv_id, chat, now, out)
            c.expected = last + 1
        for stale in [k for k in held if k < c.expected]:  # covered by a coalesced one
            del held[stale]
            self._warn("late_chat_message", f"ChatMessage {stale} of conversation {conv_id!r} "
                       "was already covered; dropped")
        c.gap_since = now if held else None

    def _skip_gap(self, peer: _Peer, conv_id: str, c: _Conv, now: float,
                  out: list[Message]) -> None:
        if not c.held:
            c.gap_since = None
            return
        first = min(c.held)
        missing = f"{c.expected}" if first - 1 == c.expected else f"{c.expected}..{first - 1}"
        self._warn("gap", f"ChatMessage(s) {missing} of conversation {conv_id!r} never "
                   "arrived; going on without them")
        c.expected = first
        self._release(peer, conv_id, c, now, out)

    # -- tagged ---------------------------------------------------------------------------------
    def _tagged(self, peer: _Peer, conv_id: str, chat: ChatMessage, now: float,
                out: list[Message]) -> None:
        c = peer.convs.get(conv_id)
        if c is None:
            c = peer.convs[conv_id] = _Conv()
        meta: dict[str, str] | None = None
        op: str | None = None
        text_parts: list[str] = []
        for item in chat.content:
            try:
                if isinstance(item, TextContent):
                    if op == OP_CHUNK:
                        self._tagged_chunk(peer, c, meta, item.text, now, out)  # type: ignore[arg-type]
                    elif op == OP_TEXT:
                        text_parts.append(item.text)
                    elif op is None:
                        self._untagged_text(peer, item.text, now, out)
                    # OP_MESSAGE: a rendering for plain peers; the metadata is authoritative
                elif isinstance(item, MetadataContent):
                    md = item.metadata
                    if TAG_KEY not in md:
                        continue
                    if op == OP_TEXT and meta is not None:
                        self._tagged_text(c, meta, "".join(text_parts), out)
                        text_parts = []
                    meta = md
                    op = md.get("op")
                    if op == OP_MESSAGE:
                        self._tagged_message(peer, conv_id, c, md, out)
                    elif op not in (OP_CHUNK, OP_TEXT, OP_END):
                        self._warn("bad_metadata", f"unknown op {op!r}; group ignored")
                        op = "?"
                elif isinstance(item, StartStreamContent):
                    self._start(peer, str(item.stream_id), meta if op != "?" else None,
                                conv_id, now, out)
                elif isinstance(item, EndStreamContent):
                    self._end(peer, str(item.stream_id), now, out)
                elif isinstance(item, ResourceContent) and op is None:
                    self._untagged_resource(item, out)
            except Exception as exc:  # bad peer input must not stop the conversation
                self._warn("bad_input", f"{type(exc).__name__}: {exc}")
        if op == OP_TEXT and meta is not None:
            self._tagged_text(c, meta, "".join(text_parts), out)

    def _count(self, c: _Conv, key: tuple[str | None, str], n: int) -> bool:
        """Add n bytes to a message's total; False (and a warning once) when over the limit."""
        if key in c.over:
            return False
        total = c.message_bytes.get(key, 0) + n
        if total > self.max_message_bytes:
            c.over.add(key)
            self._warn("message_too_large", f"message exceeds max_message_bytes="
                       f"{self.max_message_bytes}; the rest of it is dropped", key[1], key[0])
            return False
        c.message_bytes[key] = total
        return True

    def _tagged_chunk(self, peer: _Peer, c: _Conv, meta: dict[str, str], text: str, now: float,
                      out: list[Message]) -> None:
        sid = meta.get("stream_id")
        s = peer.streams.get(sid) if sid is not None else None
        if s is None:
            if sid in peer.refused:
                return
            self._warn("stream_not_open", f"text for stream {sid} which is not open; dropped",
                       meta.get("message_id"), meta.get("thread_id"))
            return
        self._stream_text(c, s, text, now, out)

    def _stream_text(self, c: _Conv | None, s: _Stream, text: str, now: float,
                     out: list[Message]) -> None:
        s.last = now
        if s.rejected:
            return
        n = len(text.encode("utf-8"))
        if s.bytes + n > self.max_stream_bytes:
            s.rejected = True
            self._warn("stream_too_large", f"stream exceeds max_stream_bytes="
                       f"{self.max_stream_bytes}; the rest of it is dropped",
                       s.message_id, s.thread_id)
            return
        if c is not None and not self._count(c, (s.thread_id, s.message_id), n):
            s.rejected = True
            return
        s.bytes += n
        s.chunks += 1
        out.append(Message.model_construct(
            type=s.type, props={"content": text}, message_id=s.message_id,
            block_id=s.block_id, thread_id=s.thread_id, delta=True))

    def _tagged_text(self, c: _Conv, meta: dict[str, str], text: str,
                     out: list[Message]) -> None:
        mid = meta.get("message_id")
        tid = meta.get("thread_id")
        if mid is not None and not self._count(c, (tid, mid), len(text.encode("utf-8"))):
            return
        try:
            out.append(Message(type=meta.get("type") or TEXT, props={"content": text},
                               message_id=mid, thread_id=tid, block_id=meta.get("block_id")))
        except _V2ValidationError as exc:
            self._warn("bad_metadata", f"text group: {exc.errors()[0]['msg']}", mid, tid)

    def _tagged_message(self, peer: _Peer, conv_id: str, c: _Conv, md: dict[str, str],
                        out: list[Message]) -> None:
        mid = md.get("message_id")
        tid = md.get("thread_id")
        try:
            raw = md.get("props")
            props = json.loads(raw) if raw is not None else None
            if props is not None and not isinstance(props, dict):
                raise ValueError("props is not a JSON object")
            mmd = md.get("message_metadata")
            msg = Message(
                type=md["type"], props=props, message_id=mid, thread_id=tid,
                block_id=md.get("block_id"), delta=md.get("delta") == "true",
                delta_path=md.get("delta_path"),
                delta_action=md.get("delta_action"),  # type: ignore[arg-type]  # validated
                type_change=md.get("type_change") == "true",
                metadata=Metadata.model_validate(json.loads(mmd)) if mmd else None)
        except (KeyError, ValueError, TypeError, _V2ValidationError) as exc:
            reason = f"missing {exc}" if isinstance(exc, KeyError) else str(exc).split("\n")[0]
            self._warn("bad_metadata", f"message group unreadable: {reason}", mid, tid)
            return
        if msg.type != EVENT and mid is not None and not self._count(
                c, (tid, mid), len(raw.encode("utf-8")) if raw else 0):
            return
        if msg.type == EVENT and msg.event == STREAM_END:
            c.finished = True
            c.message_bytes.clear()
            c.over.clear()
            left = [s for s in peer.streams.values() if s.conv == conv_id]
            for s in left:
                del peer.streams[s.sid]
            if left:
                self._warn("streams_left_open", f"{len(left)} stream(s) not ended before "
                           "stream_end")
        out.append(msg)

    def _start(self, peer: _Peer, sid: str, meta: dict[str, str] | None, conv_id: str | None,
               now: float, out: list[Message]) -> None:
        s = peer.streams.get(sid)
        if s is not None:
            self._warn("duplicate_stream_start", f"stream {sid} is already open; start ignored",
                       s.message_id, s.thread_id)
            return
        tagged = meta is not None and meta.get("stream_id") == sid and bool(
            meta.get("message_id"))
        if len(peer.streams) >= self.max_open_streams:
            self._warn("too_many_streams", f"more than max_open_streams="
                       f"{self.max_open_streams} open; stream {sid} refused, its text dropped",
                       meta.get("message_id") if tagged else None,  # type: ignore[union-attr]
                       meta.get("thread_id") if tagged else None)  # type: ignore[union-attr]
            peer.refused[sid] = None
            if len(peer.refused) > _SEEN_MAX:
                del peer.refused[next(iter(peer.refused))]
            return
        if tagged:
            assert meta is not None
            s = _Stream(sid, meta["message_id"], meta.get("thread_id"), meta.get("block_id"),
                        meta.get("type") or TEXT, True, conv_id, now)
        else:
            self._n += 1
            s = _Stream(sid, f"U{self._n}", None, None, TEXT, False, None, now)
            s.announced = True
            out.append(Message(type=EVENT, props={"event": MESSAGE_START, "data": {
                "message_id": s.message_id, "type": TEXT}}, message_id=s.message_id))
        peer.refused.pop(sid, None)
        peer.streams[sid] = s

    def _end(self, peer: _Peer, sid: str, now: float, out: list[Message]) -> None:
        s = peer.streams.pop(sid, None)
        if s is None:
            if sid in peer.refused:
                del peer.refused[sid]
                return
            self._warn("unknown_stream_end", f"end of stream {sid} which is not open; ignored")
            return
        if s.announced:
            out.append(self._end_event(s, "error" if s.rejected else "completed"))

    def _end_event(self, s: _Stream, status: str, error: str | None = None) -> Message:
        data: dict[str, Any] = {"message_id": s.message_id, "type": s.type, "status": status}
        if s.thread_id:
            data["thread_id"] = s.thread_id
        if not s.tagged:
            data["chunk_count"] = s.chunks
        if error:
            data["error"] = error
        return Message(type=EVENT, props={"event": MESSAGE_END, "data": data},
                       message_id=s.message_id, thread_id=s.thread_id, block_id=s.block_id)

    # -- untagged -------------------------------------------------------------------------------
    def _untagged(self, peer: _Peer, chat: ChatMessage, now: float, out: list[Message]) -> None:
        for item in chat.content:
            try:
                if isinstance(item, TextContent):
                    self._untagged_text(peer, item.text, now, out)
                elif isinstance(item, StartStreamContent):
                    self._start(peer, str(item.stream_id), None, None, now, out)
                elif isinstance(item, EndStreamContent):
                    self._end(peer, str(item.stream_id), now, out)
                elif isinstance(item, ResourceContent):
                    self._untagged_resource(item, out)
            except Exception as exc:  # bad peer input must not stop the conversation
                self._warn("bad_input", f"{type(exc).__name__}: {exc}")

    def _untagged_text(self, peer: _Peer, text: str, now: float, out: list[Message]) -> None:
        streams = peer.streams
        if streams:
            s = next(reversed(streams.values()))
            self._stream_text(None, s, text, now, out)
            return
        if len(text.encode("utf-8")) > self.max_message_bytes:
            self._warn("message_too_large", f"text exceeds max_message_bytes="
                       f"{self.max_message_bytes}; dropped")
            return
        self._n += 1
        mid = f"U{self._n}"
        out.append(Message(type=TEXT, props={"content": text}, message_id=mid))
        out.append(Message(type=EVENT, props={"event": MESSAGE_END, "data": {
            "message_id": mid, "type": TEXT, "chunk_count": 1, "status": "completed"}},
            message_id=mid))

    def _untagged_resource(self, item: ResourceContent, out: list[Message]) -> None:
        res = item.resource[0] if isinstance(item.resource, list) else item.resource
        mime = res.metadata.get("mime_type", "")
        kind = mime.split("/", 1)[0]
        self._n += 1
        mid = f"U{self._n}"
        if kind in _MEDIA:
            props: dict[str, Any] = {"url": res.uri}
            if kind in (AUDIO, VIDEO) and "/" in mime and not mime.endswith("/*"):
                props["format"] = mime.split("/", 1)[1]
            msg = Message(type=kind, props=props, message_id=mid)
        else:
            msg = Message(type="resource", props={"uri": res.uri, "metadata": dict(res.metadata)},
                          message_id=mid)
        out.append(msg)
        out.append(Message(type=EVENT, props={"event": MESSAGE_END, "data": {
            "message_id": mid, "type": msg.type, "chunk_count": 1, "status": "completed"}},
            message_id=mid))

    def _warn(self, code: str, detail: str, message_id: str | None = None,
              thread_id: str | None = None) -> None:
        self._warnings.append(StreamWarning(code, detail, message_id=message_id,
                                            thread_id=thread_id))


# -- parsing ChatMessage JSON (the edge) -----------------------------------------------------------
_CONTENT_TYPES: dict[str, Any] = {
    "text": TextContent,
    "resource": ResourceContent,
    "metadata": MetadataContent,
    "start-session": StartSessionContent,
    "end-session": EndSessionContent,
    "start-stream": StartStreamContent,
    "end-stream": EndStreamContent,
}
_TOP_KEYS = ("timestamp", "msg_id", "content")
_UNEXPECTED = re.compile(r"unexpected keyword argument '([^']*)'")
_MISSING_ARG = re.compile(r"missing \d+ required positional arguments?: (.*)")


def _v1_errors(exc: _V1ValidationError, where: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"]
        m = _UNEXPECTED.search(msg)
        if m:
            msg = f"unknown field {m.group(1)!r}"
        label = f"{where}.{loc}" if where and loc else (where or loc)
        parts.append(f"{label}: {msg}" if label else msg)
    return "; ".join(dict.fromkeys(parts))


def parse_chat(data: str | bytes | dict[str, Any]) -> ChatMessage:
    """A ChatMessage from its JSON (or decoded JSON), validated as uagents validates it.

    Raises WireError with a readable reason: bad JSON, an unknown key (uagents rejects it), a
    missing field, a content item of an unknown type or with a bad field.
    """
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise WireError(f"not JSON: {exc.msg} at column {exc.colno}") from None
        except UnicodeDecodeError as exc:
            raise WireError(f"not UTF-8: {exc.reason}") from None
    if not isinstance(data, dict):
        raise WireError(f"a ChatMessage must be a JSON object, got {type(data).__name__}")
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise WireError("unknown field(s) " + ", ".join(repr(k) for k in unknown)
                        + " (uagents rejects a ChatMessage with them)")
    if "content" not in data:
        raise WireError("missing field 'content'")
    content = data["content"]
    if not isinstance(content, list):
        raise WireError(f"content must be a list, got {type(content).__name__}")
    for i, item in enumerate(content):
        where = f"content.{i}"
        if not isinstance(item, dict):
            raise WireError(f"{where}: a content item must be an object, "
                            f"got {type(item).__name__}")
        kind = item.get("type")
        cls = _CONTENT_TYPES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise WireError(f"{where}: unknown content type {kind!r} (expected one of "
                            + ", ".join(_CONTENT_TYPES) + ")")
        extra = [k for k in item if k not in cls.__fields__]
        if extra:
            raise WireError(f"{where} ({kind}): unknown field(s) "
                            + ", ".join(repr(k) for k in extra))
        try:
            cls.parse_obj(item)
        except _V1ValidationError as exc:
            raise WireError(f"{_v1_errors(exc, where)}") from None
        except TypeError as exc:
            m = _MISSING_ARG.search(str(exc))
            raise WireError(f"{where} ({kind}): missing field(s) {m.group(1)}" if m
                            else f"{where} ({kind}): {exc}") from None
    try:
        return ChatMessage.parse_obj(data)
    except _V1ValidationError as exc:
        raise WireError(_v1_errors(exc, "")) from None
    except TypeError as exc:  # uagents' positional __init__
        raise WireError(str(exc)) from None


# -- command line ---------------------------------------------------------------------------------
def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """`agent-stream convert --to chat`: one ChatMessage JSON a line, as uagents serialises it.

    Encodes for a recipient that did not declare tag support (streams serialised, thinking
    withheld), the encoder's default chunking, the same ``now`` for every Message (no release on
    time), msg_ids and stream_ids
    derived from ``--conversation``: the output depends only on the input. Every started chat
    stream is ended at the end of input; stream_end is sent only if the input has one.
    """
    conversation = getattr(args, "conversation", None) or "agent-stream"
    enc = ChatEncoder(conversation, deterministic=True)
    for m in messages:
        for chat in enc.feed(m, 0.0):
            yield chat.json() + "\n"
    for chat in enc.end_streams(0.0):
        yield chat.json() + "\n"


class _CliDecoder:
    """`agent-stream decode --from chat`: ChatMessage JSON lines in, Messages out."""

    SENDER = "cli"

    def __init__(self) -> None:
        self.decoder = ChatDecoder()

    def feed_line(self, line: str) -> list[Message]:
        try:
            chat = parse_chat(line)
        except WireError:
            raise
        except StreamError:
            raise
        return self.decoder.feed(self.SENDER, chat, 0.0)

    def finish(self) -> list[Message]:
        return self.decoder.drain()

    def drain_warnings(self) -> list[StreamWarning]:
        return self.decoder.drain_warnings()


def cli_decoder(args: Any) -> _CliDecoder:
    """The line decoder behind `agent-stream decode --from chat`."""
    return _CliDecoder()
