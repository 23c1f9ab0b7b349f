"""Decoding one tagged ChatMessage, group by group, into Messages.

A tagged group is a MetadataContent holding the tag and the items after it: ``chunk`` (stream
text of ``stream_id``, each TextContent a chunk; with ``cuts``, the first one is cut into the
chunks of those lengths), ``text`` (a whole text message), ``message`` (a Message in the metadata
itself; the items after it are only a rendering for plain peers) or ``end``; an unnumbered
``keepalive`` tells the last seq the sender sent (a missing tail is then a gap).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as _V2ValidationError
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    StartStreamContent,
    TextContent,
)

from agent_stream import jsontext
from agent_stream.adapters.chat.fold import (
    FOLD_IDS,
    JSON_FIELDS,
    LEAN_PARTS_KEY,
    REL_KEY,
    expand,
    infer_ids,
    lean_parts,
    read_parts,
)
from agent_stream.adapters.chat.messages import plain_append
from agent_stream.adapters.chat.reorder import seq_number
from agent_stream.adapters.chat.state import Conversation, DecoderState, PeerState
from agent_stream.adapters.chat.streams import StreamDecoder
from agent_stream.adapters.chat.wire import (
    CUTS_KEY,
    EXTRA_KEY,
    EXTRA_STREAM,
    KEEP_KEY,
    OP_CHUNK,
    OP_END,
    OP_FOLD,
    OP_KEEPALIVE,
    OP_MESSAGE,
    OP_TEXT,
    TAG_KEY,
    content_class,
    stream_id_for,
    utf8_size,
)
from agent_stream.message import EVENT, MESSAGE_END, STREAM_END, TEXT, Message, Metadata

__all__ = ["TaggedDecoder"]

_UNKNOWN_OP = "?"
_ID_KEYS = ("message_id", "thread_id", "block_id", "stream_id", "type")


class TaggedDecoder:
    """Decodes tagged ChatMessages of a sender's conversations into ``out`` lists.

    Args:
        streams: opens, feeds and ends the chat streams.
        state: the decoder's state.
    """

    def __init__(self, streams: StreamDecoder, state: DecoderState) -> None:
        self._streams = streams
        self._state = state
        self._warnings = state.warnings

    def decode(
        self,
        peer: PeerState,
        conv_id: str,
        chat: ChatMessage,
        now: float,
        out: list[Message],
        ordered: bool = True,
    ) -> None:
        """Decode a tagged ChatMessage, in its turn.

        Args:
            peer: the sender's state.
            conv_id: its conversation.
            chat: the ChatMessage.
            now: the current time, in seconds on the caller's monotonic clock.
            out: where the decoded Messages are appended.
            ordered: it is decoded in its conversation's order (numbered, after the ones
                before it), so a chunk group naming no stream is of the previous chunk
                group's stream; False: such a group's text is dropped.
        """
        conv = self._state.conversation(peer, conv_id)
        streams = self._streams
        meta: dict[str, str] | None = None
        op: str | None = None
        stream_id: str | None = None  # the stream of the chunk group being read
        cuts: str | None = None  # its ``cuts``, until its first TextContent is cut by them
        text_parts: list[str] = []
        content = chat.content
        for index, item in enumerate(content):
            try:
                kind = content_class(item)
                if kind is TextContent:
                    if op == OP_CHUNK and meta is not None:
                        if cuts is None:
                            self._chunk(peer, conv, stream_id, meta, item.text, now, out)
                        else:
                            raw, cuts = cuts, None
                            for piece in self._cut(item.text, raw, meta):
                                self._chunk(peer, conv, stream_id, meta, piece, now, out)
                    elif op == OP_TEXT:
                        text_parts.append(item.text)
                    elif op is None:
                        streams.untagged_text(peer, item.text, now, out)
                    # OP_MESSAGE: a rendering for plain peers; the metadata is authoritative;
                    # OP_FOLD: read with its group
                elif kind is MetadataContent:
                    md = item.metadata
                    if TAG_KEY not in md:
                        continue
                    if op == OP_TEXT and meta is not None:
                        self._text(conv, meta, "".join(text_parts), out)
                        text_parts = []
                    meta = md
                    op = md.get("op")
                    cuts = None
                    if not self._ids_ok(md):
                        if op == OP_CHUNK and ordered:
                            conv.last_stream = None  # what follows it cannot be inferred
                        op = _UNKNOWN_OP
                    elif op == OP_CHUNK:
                        stream_id = self._stream_of(conv, md, ordered)
                        cuts = md.get(CUTS_KEY)
                    elif op == OP_MESSAGE:
                        self._message(peer, conv_id, conv, md, out)
                    elif op == OP_FOLD:
                        self._fold(peer, conv_id, conv, md, _texts_after(content, index), out)
                    elif op == OP_KEEPALIVE:
                        conv.keepalives += 1
                        high = seq_number(md.get("high"))
                        if high is not None and not conv.finished:
                            conv.order.announce(high, now)
                    elif op not in (OP_CHUNK, OP_TEXT, OP_END, OP_FOLD):
                        self._warnings.add("bad_metadata", f"unknown op {op!r}; group ignored")
                        op = _UNKNOWN_OP
                elif kind is StartStreamContent:
                    streams.start(
                        peer,
                        str(item.stream_id),
                        meta if op != _UNKNOWN_OP else None,
                        conv_id,
                        now,
                        out,
                    )
                elif kind is EndStreamContent:
                    streams.end(peer, str(item.stream_id), out)
                elif kind is ResourceContent and op is None:
                    streams.untagged_resource(item, out)
            except Exception as exc:  # bad peer input must not stop the conversation
                self._warnings.add("bad_input", f"{type(exc).__name__}: {exc}")
        if op == OP_TEXT and meta is not None:
            self._text(conv, meta, "".join(text_parts), out)

    def _fold(
        self,
        peer: PeerState,
        conv_id: str,
        conv: Conversation,
        md: dict[str, str],
        texts: list[str],
        out: list[Message],
    ) -> None:
        """Decode a folded group into the Messages its unfolded groups give (see .fold)."""
        raw = md.get("parts")
        lean = md.get(LEAN_PARTS_KEY)
        # the lean wire's: ids relative (``p``: quotes swapped too; see .fold)
        rel = lean is not None or md.get(REL_KEY) == "1"
        try:
            if lean is not None:
                if raw is not None:
                    raise ValueError("both parts and p")
                raw = lean_parts(lean)
            parts = read_parts(raw, rel)
        except ValueError as exc:
            self._warnings.add(
                "bad_metadata",
                f"fold group unreadable: {exc}",
                md.get("message_id"),
                md.get("thread_id"),
            )
            return
        ids = {k: md[k] for k in FOLD_IDS if k in md}
        message_id = ids.get("message_id")
        thread_id = ids.get("thread_id")
        previous = ids
        limits = self._state.limits
        streamed = 0  # the text's UTF-8 bytes, as its chat stream would have counted them
        rejected = False
        next_text = iter(texts)
        folded_text: str | None = None
        for part in parts:
            if isinstance(part, dict):
                if rel:
                    part = expand(part)
                    previous = infer_ids(part, previous)
                    fields = {
                        **previous,
                        **{
                            k: v
                            for k, v in part.items()
                            if k not in JSON_FIELDS and k not in FOLD_IDS
                        },
                    }
                else:
                    fields = {**ids, **{k: v for k, v in part.items() if k not in JSON_FIELDS}}
                if self._ids_ok(fields):
                    if fields.get(EXTRA_KEY) == EXTRA_STREAM and folded_text is None and texts:
                        folded_text = "".join(texts)
                    self._message(peer, conv_id, conv, fields, out, part, folded_text)
                continue
            if len(part) > limits.max_id_chars:
                self._warnings.add(
                    "bad_metadata", "fold group: a text part's type is too long", message_id
                )
                return
            text = next(next_text, None)
            if text is None:
                self._warnings.add(
                    "bad_metadata",
                    "fold group: a text part without its text",
                    message_id,
                    thread_id,
                )
                return
            if message_id is None:
                self._warnings.add("bad_metadata", "fold group: a text part without a message")
                return
            if rejected:
                continue
            n = utf8_size(text)
            if streamed + n > limits.max_stream_bytes:
                rejected = True
                self._warnings.add(
                    "stream_too_large",
                    f"stream exceeds max_stream_bytes={limits.max_stream_bytes}; "
                    "the rest of it is dropped",
                    message_id,
                    thread_id,
                )
                continue
            if not self._streams.count(conv, (thread_id, message_id), n):
                rejected = True
                continue
            streamed += n
            out.append(
                Message.model_construct(
                    type=part,
                    props={"content": text},
                    message_id=message_id,
                    block_id=ids.get("block_id"),
                    thread_id=thread_id,
                    delta=True,
                )
            )

    def _rebuild(
        self, peer: PeerState, conv_id: str, conv: Conversation, msg: Message, text: str | None
    ) -> None:
        """Put back the extra.content a message_end left out: its stream's text (kept by the
        decoder), its folded message's, or the appends carried as metadata it kept."""
        data = (msg.props or {}).get("data")
        if not isinstance(data, dict) or EXTRA_KEY in data:
            raise ValueError("extra=stream on a message without data, or with extra")
        if text is None:
            sid = str(stream_id_for(conv_id, msg.thread_id, msg.message_id))
            stream = peer.streams.get(sid)
            merged = (
                conv.kept.get((msg.thread_id, msg.message_id))
                if stream is None and msg.message_id is not None
                else None
            )
            if merged:
                text = "".join(merged)
            elif stream is None or stream.kept is None:
                self._warnings.add(
                    "message_too_large",
                    "the text of message_end's extra.content was not kept "
                    f"(max_kept_bytes_total={self._state.limits.max_kept_bytes_total}); left out",
                    msg.message_id,
                    msg.thread_id,
                )
                return
            else:
                text = "".join(stream.kept)
        data[EXTRA_KEY] = {"content": text}

    def _ids_ok(self, md: dict[str, str]) -> bool:
        """Whether every id of a group is at most max_id_chars long (else a warning)."""
        limit = self._state.limits.max_id_chars
        for key in _ID_KEYS:
            value = md.get(key)
            if value is not None and len(value) > limit:
                self._warnings.add(
                    "bad_metadata", f"{key} longer than max_id_chars={limit}; group ignored"
                )
                return False
        return True

    def _stream_of(self, conv: Conversation, md: dict[str, str], ordered: bool) -> str | None:
        """The stream a chunk group's text is of (None: none can be told; warned)."""
        stream_id = md.get("stream_id")
        if stream_id is None and "message_id" in md:  # to an asker that reads folds: named
            # by its message (the stream_id derives from the conversation and the message's ids)
            stream_id = str(stream_id_for(conv.key[1], md.get("thread_id"), md["message_id"]))
        if stream_id is None and "thread_id" not in md:  # to a lean asker: the stream of the
            last = conv.last_stream  # previous chunk group, unless a gap was skipped since
            if ordered and last is not None and last[1] == conv.order.skipped:
                stream_id = last[0]
        if stream_id is None:
            self._warnings.add(
                "bad_metadata",
                "chunk group names no stream and follows no chunk group of this reply in "
                "order; its text is dropped",
            )
        if ordered:
            conv.last_stream = None if stream_id is None else (stream_id, conv.order.skipped)
        return stream_id

    def _cut(self, text: str, raw: str, meta: dict[str, str]) -> list[str]:
        """A chunk group's text cut into its chunks by its ``cuts``: their lengths in characters
        (code points), comma-separated, each a positive decimal, at most ``max_cuts`` of them,
        summing to the text's length. Anything else: the whole text as one chunk, warned (the
        text is never lost, only its chunk boundaries)."""
        most = self._state.limits.max_cuts
        problem = None
        lengths: list[int] = []
        if raw.count(",") >= most:
            problem = f"more than max_cuts={most} chunks"
        else:
            for n in raw.split(","):
                if not (0 < len(n) <= 12 and n.isascii() and n.isdecimal() and n[0] != "0"):
                    problem = f"{n[:20]!r} is not a positive length"
                    break
                lengths.append(int(n))
            else:
                total = sum(lengths)
                if total != len(text):
                    problem = f"lengths sum to {total}, not the text's {len(text)} characters"
        if problem is not None:
            self._warnings.add(
                "bad_metadata",
                f"chunk group: bad cuts ({problem}); its text is one chunk",
                meta.get("message_id"),
                meta.get("thread_id"),
            )
            return [text]
        pieces: list[str] = []
        at = 0
        for length in lengths:
            pieces.append(text[at : at + length])
            at += length
        return pieces

    def _chunk(
        self,
        peer: PeerState,
        conv: Conversation,
        stream_id: str | None,
        meta: dict[str, str],
        text: str,
        now: float,
        out: list[Message],
    ) -> None:
        if stream_id is None:
            return  # warned by _stream_of
        stream = peer.streams.get(stream_id)
        if stream is None:
            if self._state.refused.has(peer.sender, stream_id):
                return
            self._warnings.add(
                "stream_not_open",
                f"text for stream {stream_id} which is not open; dropped",
                meta.get("message_id"),
                meta.get("thread_id"),
            )
            return
        self._streams.text(peer, conv, stream, text, now, out)

    def _text(
        self, conv: Conversation, meta: dict[str, str], text: str, out: list[Message]
    ) -> None:
        message_id = meta.get("message_id")
        thread_id = meta.get("thread_id")
        key = (thread_id, message_id) if message_id is not None else None
        if not self._streams.count(conv, key, utf8_size(text)):
            return
        try:
            out.append(
                Message(
                    type=meta.get("type") or TEXT,
                    props={"content": text},
                    message_id=message_id,
                    thread_id=thread_id,
                    block_id=meta.get("block_id"),
                )
            )
        except _V2ValidationError as exc:
            self._warnings.add(
                "bad_metadata", f"text group: {exc.errors()[0]['msg']}", message_id, thread_id
            )

    def _message(
        self,
        peer: PeerState,
        conv_id: str,
        conv: Conversation,
        md: dict[str, str],
        out: list[Message],
        parsed: dict[str, Any] | None = None,
        text: str | None = None,
    ) -> None:
        """Decode a ``message`` group (``parsed``: a folded part's JSON fields, already read;
        ``text``: a folded message's text, for a message_end whose extra.content was left out).
        """
        message_id = md.get("message_id")
        thread_id = md.get("thread_id")
        # sized before it is parsed: events and messages without id are checked alone
        key = (
            (thread_id, message_id) if message_id is not None and md.get("type") != EVENT else None
        )
        if parsed is None:
            raw = md.get("props")
            mmd = md.get("message_metadata")
            size = utf8_size(raw) if raw else 0
            if mmd:
                size += utf8_size(mmd)
        else:  # the bytes of the JSON the unfolded group would have carried: the same count
            raw = None
            size = sum(
                jsontext.dumped_size(v)
                for v in (parsed.get("props"), parsed.get("message_metadata"))
                if v is not None
            )
        kept_key = key if md.get(KEEP_KEY) == "1" else None
        if not self._streams.count(conv, key, size):
            if kept_key is not None:
                self._state.spoil_kept(conv, kept_key)  # the text kept is not whole
            return
        try:
            msg = _message_of(md, raw, parsed)
            if md.get(EXTRA_KEY) == EXTRA_STREAM:
                self._rebuild(peer, conv_id, conv, msg, text)
        except (KeyError, ValueError, TypeError, _V2ValidationError) as exc:
            reason = f"missing {exc}" if isinstance(exc, KeyError) else str(exc).split("\n")[0]
            self._warnings.add(
                "bad_metadata", f"message group unreadable: {reason}", message_id, thread_id
            )
            if kept_key is not None:
                self._state.spoil_kept(conv, kept_key)
            return
        if kept_key is not None:  # an append carried as metadata: its message_end may leave
            piece = plain_append(msg)  # its text out
            if piece is not None:
                self._state.keep_append(conv, kept_key, piece)
            else:
                self._state.spoil_kept(conv, kept_key)
        elif msg.type == EVENT and msg.event == MESSAGE_END and msg.message_id is not None:
            self._state.drop_kept(conv, (msg.thread_id, msg.message_id))
        elif key is not None and key in conv.kept:
            self._state.spoil_kept(conv, key)  # other content: the appends are not its text
        if msg.type == EVENT and msg.event == STREAM_END:
            conv.finished = True
            self._state.clear_kept(conv)
            self._state.message_bytes.forget(conv.key)
            left = [s for s in peer.streams.values() if s.conversation == conv_id]
            for stream in left:
                self._state.close_stream(peer, stream.stream_id)
            if left:
                self._warnings.add(
                    "streams_left_open", f"{len(left)} stream(s) not ended before stream_end"
                )
        out.append(msg)


def _texts_after(content: list[Any], index: int) -> list[str]:
    """The texts of the TextContent items after item ``index``, up to the next tagged group."""
    texts: list[str] = []
    for item in content[index + 1 :]:
        kind = content_class(item)
        if kind is TextContent:
            texts.append(item.text)
        elif kind is MetadataContent and TAG_KEY in item.metadata:
            break
    return texts


def _message_of(md: dict[str, str], raw: str | None, parsed: dict[str, Any] | None) -> Message:
    """The Message a ``message`` group (or a folded part, ``parsed``) carries (raises on a bad
    one)."""
    if parsed is None:
        props = jsontext.loads(raw) if raw is not None else None  # InvalidJSON is a ValueError
        mmd_raw = md.get("message_metadata")
        mmd = jsontext.loads(mmd_raw) if mmd_raw else None
    else:
        props = parsed.get("props")
        mmd = parsed.get("message_metadata")
    if props is not None and not isinstance(props, dict):
        raise ValueError("props is not a JSON object")
    return Message(
        type=md["type"],
        props=props,
        message_id=md.get("message_id"),
        thread_id=md.get("thread_id"),
        block_id=md.get("block_id"),
        delta=md.get("delta") == "true",
        delta_path=md.get("delta_path"),
        delta_action=md.get("delta_action"),  # type: ignore[arg-type]  # validated
        type_change=md.get("type_change") == "true",
        metadata=Metadata.model_validate(mmd) if mmd else None,
    )
