"""The chat wire's vocabulary: tags, ops, ids, groups, the asker's request helpers, coalesce."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, cast

from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)

from agent_stream import jsontext
from agent_stream.jsontext import utf8_size
from agent_stream.message import AUDIO, IMAGE, REFUSAL, TEXT, THINKING, VIDEO

__all__ = [
    "ACKS_KEY",
    "ACKS_MANY",
    "CHANNEL_OF_TYPE",
    "CHAT_CHUNKER_DEFAULTS",
    "CONTROL_OPS",
    "CUTS_KEY",
    "EXTRA_KEY",
    "EXTRA_STREAM",
    "FOLD_KEY",
    "HISTORY_KEY",
    "KEEP_KEY",
    "LEAN_GATHER",
    "LEAN_KEY",
    "MAX_CUTS",
    "MEDIA_TYPES",
    "OP_CANCEL",
    "OP_CHUNK",
    "OP_END",
    "OP_FOLD",
    "OP_KEEPALIVE",
    "OP_MESSAGE",
    "OP_RESEND",
    "OP_TEXT",
    "PROTOCOL_VERSION",
    "STREAM_TYPES",
    "TAG_KEY",
    "Group",
    "MessageKey",
    "chain_of",
    "chat_of",
    "coalesce",
    "content_class",
    "control",
    "control_of",
    "conversation_of",
    "ends_session",
    "is_tagged_request",
    "max_hops_of",
    "opens_session",
    "request_tags",
    "requested_channels",
    "sent_history",
    "seq_span",
    "stream_id_for",
    "tagged_items",
    "utf8_size",
]

TAG_KEY = "agent_stream"
PROTOCOL_VERSION = "1"
# A question's tag saying its asker reads coalesced acknowledgements (see adapters.chat.acks).
ACKS_KEY = "acks"
ACKS_MANY = "many"
# A question's tag saying its asker decodes folded items (``op`` ``fold``; see .fold).
FOLD_KEY = "fold"
# A question's tag saying its asker reads the lean wire (see the package docstring, Lean):
# text gathered into fewer ChatMessages within the chunker's bounds, and leaner groups.
LEAN_KEY = "lean"
# A question's tag saying its asker reads cut text (``cuts=1``, with ``lean=1``): to it, a lean
# chunk group's chunks go as one TextContent, their concatenation, and the group's ``cuts``
# (this key too) says where it is cut: the chunks' lengths in characters (code points),
# comma-separated, e.g. ``"57,120,31"``; absent when the group carries one chunk.
CUTS_KEY = "cuts"
# The most chunks one chunk group's text is cut into (the encoder starts another group past it;
# the decoder's default :attr:`~.limits.DecoderLimits.max_cuts`).
MAX_CUTS = 1024

# Types whose content is the user-facing text: streamed as TextContent.
STREAM_TYPES = frozenset((TEXT, REFUSAL))
# Types withheld unless the recipient's channels include theirs.
CHANNEL_OF_TYPE: dict[str, str] = {THINKING: "reasoning"}
MEDIA_TYPES = (IMAGE, AUDIO, VIDEO)

# Each ChatMessage is a signed envelope (~1 ms to sign, ~4 ms to verify, ~10 ms per hop on
# loopback), so the chat wire buffers more than the chunker's UI-minded defaults: chunks of at
# least two short sentences, released at most half a second after their first character.
CHAT_CHUNKER_DEFAULTS: dict[str, Any] = {"min_chars": 120, "max_delay": 0.5}
# To a lean asker (its tag says ``lean=1``), the gather window: seconds, from its oldest
# character's arrival, text the chunker released may wait to go with later text in one
# ChatMessage (never less than the chunker's own deadline; a message's first text never waits).
# At a cut the chunker still holds ~0.3 s of text, which is due sooner, so ChatMessages come
# ~0.3 s more often than this: at 1.5 s the bench's reply took 16 envelopes, at 1.75 s 14.
LEAN_GATHER = 1.75

# The ``op`` of a tagged group (see the package docstring).
OP_CHUNK = "chunk"
OP_TEXT = "text"
OP_MESSAGE = "message"
OP_END = "end"
OP_FOLD = "fold"  # a message complete at cut time: its start, deltas and end in one group
# To an asker that reads folds: a stream's opening group says ``keep=1`` (the decoder keeps its
# text) and its message_end's group ``extra=stream`` when extra.content, left out, is that text.
KEEP_KEY = "keep"
EXTRA_KEY = "extra"
EXTRA_STREAM = "stream"
# Delivery ops: a ChatMessage of one unnumbered tagged MetadataContent naming a conversation.
OP_KEEPALIVE = "keepalive"  # responder -> asker: the reply is open; ``high``: last seq sent
OP_RESEND = "resend"  # asker -> responder: send ``from``..``to`` again (no ``to``: to the end)
OP_CANCEL = "cancel"  # asker -> responder: stop the reply
CONTROL_OPS = frozenset((OP_RESEND, OP_CANCEL))  # what an asker sends to a responder

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

_CONTENT_CLASSES = (
    TextContent,
    MetadataContent,
    StartStreamContent,
    EndStreamContent,
    ResourceContent,
    StartSessionContent,
    EndSessionContent,
)
_EXACT = frozenset(_CONTENT_CLASSES)


def content_class(item: Any) -> type[Any] | None:
    """Which of the chat protocol's content classes ``item`` is (None: none of them).

    ``isinstance`` on a pydantic v1 model runs its metaclass's check in Python, about a
    microsecond each: a decoder asking it up to five times per item of every ChatMessage spent
    more there than on the item. The exact class is a set lookup; a subclass still counts.

    Args:
        item: a content item.
    """
    t: type[Any] = type(item)
    if t in _EXACT:
        return t
    for c in _CONTENT_CLASSES:
        if isinstance(item, c):
            return cast("type[Any]", c)
    return None


# A logical message: (thread_id, message_id).
MessageKey = tuple[str | None, str]


dumps = jsontext.dumps  # compact JSON, as metadata values carry it


@dataclass(slots=True, eq=False)
class Group:
    """A tagged MetadataContent's dict and the content items it describes, as they go on the wire.

    Args:
        meta: the MetadataContent's dict.
        items: the content items it describes.
        owner: the key of the message it belongs to (None: no message).
        needs_turn: a plain peer would read it, so it waits while another message's stream
            is open (always so when it opens or closes a stream).
        opens: it starts its message's chat stream.
        closes: it ends its message's chat stream.
        part: ``"start"``/``"end"`` when it carries its message's message_start/message_end
            (what a fold looks for), else None.
        due: to a lean asker, the latest time it may wait to gather with later groups (the
            chunker's deadline for the text it carries); None: the batcher's own rule.
    """

    meta: dict[str, str]
    items: list[Any]
    owner: MessageKey | None = None
    needs_turn: bool = False
    opens: bool = False
    closes: bool = False
    part: str | None = None
    due: float | None = None

    def __post_init__(self) -> None:
        self.needs_turn = self.needs_turn or self.opens or self.closes


# -- ids ------------------------------------------------------------------------------------------
def uuid4_from(*parts: str | None) -> uuid.UUID:
    """A valid UUID4 (version 4, RFC 4122 variant) derived from ``parts``."""
    key = json.dumps(parts, ensure_ascii=False).encode("utf-8")
    digest = bytearray(hashlib.blake2b(key, digest_size=16).digest())
    digest[6] = (digest[6] & 0x0F) | 0x40
    digest[8] = (digest[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(digest))


def stream_id_for(conversation: str, thread_id: str | None, message_id: str | None) -> uuid.UUID:
    """The chat stream_id of a message (a UUID4).

    Args:
        conversation: the conversation's id.
        thread_id: the message's thread (None: none).
        message_id: the message's id.
    """
    return uuid4_from("stream", conversation, thread_id or None, message_id or None)


# -- request side ---------------------------------------------------------------------------------
def request_tags(
    channels: Iterable[str] = (),
    *,
    chain: Sequence[str] = (),
    max_hops: int | None = None,
    history: str | None = None,
) -> MetadataContent:
    """The MetadataContent an asker adds to its request to declare it understands tags.

    ``channels`` are extra channels it would like (e.g. ``"reasoning"``); the sender decides.
    ``acks=many``: the asker reads coalesced acknowledgements (:mod:`.acks`); ``fold=1``: it
    decodes folded items (:mod:`.fold`); ``lean=1``: it reads the lean wire (text gathered into
    fewer ChatMessages within the chunker's bounds; see the package docstring); ``cuts=1``: it
    reads a lean chunk group's chunks as one TextContent cut by the group's ``cuts``.
    ``chain`` (key ``chain``, comma-separated): the agents that asked so far, origin first,
    the asker last, when the request delegates part of another (see :mod:`agent_stream.relay`);
    ``max_hops`` (key ``max_hops``): the hop limit that travels with it. ``history`` (key
    ``history``): the conversation so far as the asker keeps it, JSON from
    :func:`agent_stream.conversation.history_to_json`; the responder uses it instead of the
    turns it remembers. With tracing on, the asker adds ``traceparent`` and ``tracestate`` (W3C
    trace context, checked by the responder: :mod:`agent_stream.telemetry`).

    Args:
        channels: extra channels the asker would like.
        chain: the delegation chain, origin first, the asker last (empty: not a delegation).
        max_hops: the hop limit that travels with the chain (None: not sent).
        history: the conversation so far, as JSON (None: not sent).
    """
    md = {
        TAG_KEY: PROTOCOL_VERSION,
        "accept": "tags",
        ACKS_KEY: ACKS_MANY,
        FOLD_KEY: "1",
        LEAN_KEY: "1",
        CUTS_KEY: "1",
    }
    if history is not None:
        md[HISTORY_KEY] = history
    chans = sorted(set(channels))
    if chans:
        md["channels"] = ",".join(chans)
    if chain:
        md[CHAIN_KEY] = ",".join(chain)
    if max_hops is not None:
        md[MAX_HOPS_KEY] = str(max_hops)
    return MetadataContent(metadata=md)


CHAIN_KEY = "chain"
MAX_HOPS_KEY = "max_hops"
HISTORY_KEY = "history"


def chain_of(chat: ChatMessage) -> tuple[str, ...]:
    """The delegation chain a request carries (empty when none).

    Args:
        chat: the ChatMessage.
    """
    for md in tagged_items(chat):
        value = md.get(CHAIN_KEY)
        if value:
            return tuple(a for a in value.split(",") if a)
    return ()


def max_hops_of(chat: ChatMessage) -> int | None:
    """The hop limit a request carries (None when none or not a positive integer).

    Args:
        chat: the ChatMessage.
    """
    for md in tagged_items(chat):
        value = md.get(MAX_HOPS_KEY, "")
        if value.isdigit() and len(value) <= 4 and int(value) > 0:
            return int(value)
    return None


def tagged_items(chat: ChatMessage) -> Iterator[dict[str, str]]:
    """The dicts of a ChatMessage's tagged MetadataContent items, in order.

    Args:
        chat: the ChatMessage.

    Yields:
        Each tagged item's metadata dict.
    """
    for item in chat.content:
        if isinstance(item, MetadataContent) and TAG_KEY in item.metadata:
            yield item.metadata


def is_tagged_request(chat: ChatMessage) -> bool:
    """True when a ChatMessage carries the agent_stream tag (the asker decodes tagged replies).

    Args:
        chat: the ChatMessage.
    """
    return next(tagged_items(chat), None) is not None


def requested_channels(chat: ChatMessage) -> frozenset[str]:
    """The extra channels the asker asked for in its tag (a wish; the sender decides).

    Args:
        chat: the request.
    """
    out: set[str] = set()
    for md in tagged_items(chat):
        out.update(c for c in md.get("channels", "").split(",") if c)
    return frozenset(out)


def sent_history(chat: ChatMessage) -> str | None:
    """The history (raw JSON text, unchecked) the asker sent in its tag, if any.

    Args:
        chat: the request.
    """
    for md in tagged_items(chat):
        raw = md.get(HISTORY_KEY)
        if raw is not None:
            return raw
    return None


def ends_session(chat: ChatMessage) -> bool:
    """True when a ChatMessage has an EndSessionContent.

    Args:
        chat: the ChatMessage.
    """
    return any(isinstance(item, EndSessionContent) for item in chat.content)


def opens_session(chat: ChatMessage) -> bool:
    """True when a ChatMessage has a StartSessionContent.

    Args:
        chat: the ChatMessage.
    """
    return any(isinstance(item, StartSessionContent) for item in chat.content)


def conversation_of(chat: ChatMessage) -> str | None:
    """The conversation a tagged reply ChatMessage belongs to (None when untagged).

    Args:
        chat: the ChatMessage.
    """
    for md in tagged_items(chat):
        conv = md.get("conversation")
        if conv is not None:
            return conv
    return None


def chat_of(content: list[Any], msg_id: uuid.UUID | None = None) -> ChatMessage:
    """A new ChatMessage (now, a fresh id unless given) of content items already built as their
    own models: what ``ChatMessage(content=...)`` makes, without pydantic's walk of the content
    union, which tries each member in turn and leaves a TypeError, its traceback and its frames
    behind for every one that does not match (at a gateway's thousand questions, a fifth of its
    time went to collecting them).

    Args:
        content: the content items (TextContent, MetadataContent...).
        msg_id: the message id (None: a new one).
    """
    return ChatMessage.construct(
        timestamp=datetime.now(timezone.utc), msg_id=msg_id or uuid.uuid4(), content=content
    )


# -- delivery ops ---------------------------------------------------------------------------------
def control(op: str, conversation: str, **fields: str) -> ChatMessage:
    """A delivery-op ChatMessage.

    Args:
        op: ``keepalive``, ``resend`` or ``cancel``.
        conversation: the conversation it is about.
        **fields: the op's other metadata (``from``, ``high``...).
    """
    md = {TAG_KEY: PROTOCOL_VERSION, "op": op, "conversation": conversation, **fields}
    return chat_of([MetadataContent(metadata=md)])


def control_of(chat: ChatMessage) -> dict[str, str] | None:
    """The op dict of an asker's ``resend``/``cancel`` ChatMessage (None for anything else).

    Args:
        chat: the ChatMessage.
    """
    head = next(tagged_items(chat), None)
    if head is None or head.get("op") not in CONTROL_OPS or "conversation" not in head:
        return None
    return head


def seq_span(chat: ChatMessage) -> tuple[int, int] | None:
    """The sequence numbers ``(seq, seq_last)`` a tagged reply ChatMessage covers.

    None when it is not numbered.

    Args:
        chat: the ChatMessage.
    """
    head = next(tagged_items(chat), None)
    if head is None:
        return None
    first = _number(head.get("seq"))
    if first is None:
        return None
    return first, max(first, _number(head.get("seq_last")) or first)


def _number(text: str | None) -> int | None:
    if text is None or not text.isascii() or not text.isdecimal() or len(text) > 18:
        return None
    return int(text)


# -- coalesce -------------------------------------------------------------------------------------
def coalesce(chats: Sequence[ChatMessage]) -> ChatMessage:
    """One ChatMessage carrying what ``chats`` (consecutive output of one encoder) carry.

    For a transport whose sends are slower than the encoder: ChatMessages waiting to be sent go
    as one. A plain peer reads the same text in the same order; the decoder learns the range of
    sequence numbers covered (``seq``..``seq_last``), so nothing looks lost.

    Args:
        chats: consecutive output of one encoder, in order.
    """
    if not chats:
        raise ValueError("coalesce needs at least one ChatMessage")
    if len(chats) == 1:
        return chats[0]
    content: list[Any] = []
    first_seq: str | None = None
    last_seq: str | None = None
    ends: list[Any] = []
    for chat in chats:
        head = True
        for item in chat.content:
            kind = content_class(item)
            if kind is EndSessionContent:
                ends.append(item)  # it stays last: it ends the reply
                continue
            if head and kind == MetadataContent and TAG_KEY in item.metadata:
                head = False
                md = dict(item.metadata)
                if "seq" in md:
                    if first_seq is None:
                        first_seq = md["seq"]
                    last_seq = md.get("seq_last", md["seq"])
                    md = {
                        k: v for k, v in md.items() if k not in ("seq", "seq_last", "conversation")
                    }
                    conv = item.metadata.get("conversation")
                    if not content and conv is not None:
                        md["conversation"] = conv
                item = MetadataContent.construct(type="metadata", metadata=md)
            content.append(item)
    for item in content:
        if content_class(item) is MetadataContent and TAG_KEY in item.metadata:
            if first_seq is not None:
                item.metadata["seq"] = first_seq
                if last_seq != first_seq:
                    item.metadata["seq_last"] = last_seq
            break
    content += ends[-1:]  # EndSessionContent (if any) stays last: it ends the reply
    return ChatMessage.construct(
        timestamp=chats[-1].timestamp, msg_id=chats[0].msg_id, content=content
    )
