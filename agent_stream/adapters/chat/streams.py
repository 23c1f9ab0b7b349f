"""The decoder's chat streams and untagged content (from agents without agent_stream).

A chat stream's text becomes appends to one text message; an untagged stream gets an id of the
decoder's own (``U1``...) with a message_start and a message_end around it. Untagged text outside
a stream is a whole text message; a resource is an image/audio/video or ``resource`` message.
"""

from __future__ import annotations

from typing import Any

from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat.cards import CardError, card_message
from agent_stream.adapters.chat.state import (
    OVER,
    Conversation,
    DecoderState,
    OpenStream,
    PeerState,
    ReplySize,
)
from agent_stream.adapters.chat.wire import KEEP_KEY, MEDIA_TYPES, MessageKey, utf8_size
from agent_stream.message import AUDIO, EVENT, MESSAGE_END, MESSAGE_START, TEXT, VIDEO, Message

__all__ = ["StreamDecoder"]


class StreamDecoder:
    """Opens, feeds and ends chat streams, and decodes untagged content, into ``out`` lists.

    Args:
        state: the decoder's state (its limits and warnings too).
    """

    def __init__(self, state: DecoderState) -> None:
        self.state = state
        self.limits = state.limits
        self._warnings = state.warnings
        self._untagged_ids = 0  # U1, U2, ...

    def _next_id(self) -> str:
        self._untagged_ids += 1
        return f"U{self._untagged_ids}"

    # -- streams --------------------------------------------------------------------------------
    def start(
        self,
        peer: PeerState,
        stream_id: str,
        meta: dict[str, str] | None,
        conversation: str | None,
        now: float,
        out: list[Message],
    ) -> None:
        """Open a chat stream.

        Args:
            peer: the sender's state.
            stream_id: the chat stream's id.
            meta: the message it carries, from the tag (None: untagged, a text message of its
                own).
            conversation: the conversation it belongs to (None: untagged).
            now: the current time, in seconds on the caller's monotonic clock.
            out: where the decoded Messages are appended.
        """
        stream = peer.streams.get(stream_id)
        if stream is not None:
            self._warnings.add(
                "duplicate_stream_start",
                f"stream {stream_id} is already open; start ignored",
                stream.message_id,
                stream.thread_id,
            )
            return
        tagged_meta = (
            meta
            if (meta is not None and meta.get("stream_id") == stream_id and meta.get("message_id"))
            else None
        )
        if len(peer.streams) >= self.limits.max_open_streams:
            self._warnings.add(
                "too_many_streams",
                f"more than max_open_streams={self.limits.max_open_streams}"
                f" open; stream {stream_id} refused, its text dropped",
                tagged_meta.get("message_id") if tagged_meta else None,
                tagged_meta.get("thread_id") if tagged_meta else None,
            )
            self.state.refused.put(peer.sender, stream_id, None)
            return
        if tagged_meta is not None:
            stream = OpenStream(
                stream_id,
                tagged_meta["message_id"],
                tagged_meta.get("thread_id"),
                tagged_meta.get("block_id"),
                tagged_meta.get("type") or TEXT,
                True,
                conversation,
                now,
            )
            if tagged_meta.get(KEEP_KEY) == "1":
                stream.kept = []
        else:
            stream = OpenStream(stream_id, self._next_id(), None, None, TEXT, False, None, now)
            stream.announced = True
            out.append(
                Message(
                    type=EVENT,
                    props={
                        "event": MESSAGE_START,
                        "data": {"message_id": stream.message_id, "type": TEXT},
                    },
                    message_id=stream.message_id,
                )
            )
        self.state.refused.discard(peer.sender, stream_id)
        self.state.open_stream(peer, stream)

    def end(self, peer: PeerState, stream_id: str, out: list[Message]) -> None:
        """End a chat stream.

        Args:
            peer: the sender's state.
            stream_id: the chat stream's id.
            out: where the decoded Messages are appended.
        """
        stream = self.state.close_stream(peer, stream_id)
        if stream is None:
            if self.state.refused.has(peer.sender, stream_id):
                self.state.refused.discard(peer.sender, stream_id)
                return
            self._warnings.add(
                "unknown_stream_end", f"end of stream {stream_id} which is not open; ignored"
            )
            return
        if stream.announced:
            out.append(self.end_event(stream, "error" if stream.rejected else "completed"))

    def end_event(self, stream: OpenStream, status: str, error: str | None = None) -> Message:
        """The message_end of a chat stream's message.

        Args:
            stream: the open chat stream.
            status: the message's end status.
            error: what went wrong, when it did.
        """
        data: dict[str, Any] = {
            "message_id": stream.message_id,
            "type": stream.type,
            "status": status,
        }
        if stream.thread_id:
            data["thread_id"] = stream.thread_id
        if not stream.tagged:
            data["chunk_count"] = stream.chunks
        if error:
            data["error"] = error
        return Message(
            type=EVENT,
            props={"event": MESSAGE_END, "data": data},
            message_id=stream.message_id,
            thread_id=stream.thread_id,
            block_id=stream.block_id,
        )

    def text(
        self,
        peer: PeerState,
        conv: Conversation | None,
        stream: OpenStream,
        text: str,
        now: float,
        out: list[Message],
    ) -> None:
        """Text of a chat stream.

        Args:
            peer: the sender's state.
            conv: the conversation, whose message the text is counted against (None:
                untagged).
            stream: the open chat stream.
            text: the text.
            now: the current time, in seconds on the caller's monotonic clock.
            out: where the decoded Messages are appended.
        """
        stream.last = now
        if stream.rejected:
            return
        n = utf8_size(text)
        if stream.bytes + n > self.limits.max_stream_bytes:
            stream.rejected = True
            self._warnings.add(
                "stream_too_large",
                f"stream exceeds max_stream_bytes="
                f"{self.limits.max_stream_bytes}; the rest of it is dropped",
                stream.message_id,
                stream.thread_id,
            )
            return
        if conv is not None:
            counted = self.count(conv, (stream.thread_id, stream.message_id), n)
        else:
            counted = self.count_reply(peer.untagged, n)
        if not counted:
            stream.rejected = True
            return
        stream.bytes += n
        stream.chunks += 1
        if stream.kept is not None:
            self.state.keep(stream, text, n)
        out.append(
            Message.model_construct(
                type=stream.type,
                props={"content": text},
                message_id=stream.message_id,
                block_id=stream.block_id,
                thread_id=stream.thread_id,
                delta=True,
            )
        )

    def count(self, conv: Conversation, key: MessageKey | None, n: int) -> bool:
        """Add bytes to a message's total and to its reply's.

        Args:
            conv: the conversation.
            key: the message (None: an event or a message without id, checked alone).
            n: how many UTF-8 bytes.

        Returns:
            False (and a warning) when over a limit.
        """
        limit = self.limits.max_message_bytes
        if key is None:
            if n > limit:
                self._warnings.add(
                    "message_too_large", f"message exceeds max_message_bytes={limit}; dropped"
                )
                return False
            return self.count_reply(conv.size, n)
        table = self.state.message_bytes
        slot = hash(key)  # a small int whatever the ids' length (a collision: shared counts)
        before = table.get(conv.key, slot) or 0
        if before == OVER:
            return False
        if before + n > limit:
            table.put(conv.key, slot, OVER)
            self._warnings.add(
                "message_too_large",
                f"message exceeds max_message_bytes={limit}; the rest of it is dropped",
                key[1],
                key[0],
            )
            return False
        if not self.count_reply(conv.size, n):
            return False
        table.put(conv.key, slot, before + n)
        return True

    def count_reply(self, size: ReplySize, n: int) -> bool:
        """Add bytes to a reply's total.

        Args:
            size: the reply's size so far.
            n: how many UTF-8 bytes.

        Returns:
            False (and a warning once) when over the limit.
        """
        if size.over:
            return False
        if size.bytes + n > self.limits.max_reply_bytes:
            size.over = True
            self._warnings.add(
                "reply_too_large",
                f"reply exceeds max_reply_bytes="
                f"{self.limits.max_reply_bytes}; the rest of it is dropped",
            )
            return False
        size.bytes += n
        return True

    # -- untagged -------------------------------------------------------------------------------
    def untagged(self, peer: PeerState, chat: ChatMessage, now: float, out: list[Message]) -> None:
        """Decode a ChatMessage without the agent_stream tag.

        Args:
            peer: the sender's state.
            chat: the ChatMessage.
            now: the current time, in seconds on the caller's monotonic clock.
            out: where the decoded Messages are appended.
        """
        for item in chat.content:
            try:
                if isinstance(item, TextContent):
                    self.untagged_text(peer, item.text, now, out)
                elif isinstance(item, StartStreamContent):
                    self.start(peer, str(item.stream_id), None, None, now, out)
                elif isinstance(item, EndStreamContent):
                    self.end(peer, str(item.stream_id), out)
                elif isinstance(item, ResourceContent):
                    self.untagged_resource(item, out)
                elif isinstance(item, MetadataContent):
                    self.untagged_card(item, out)
            except CardError as exc:  # a bad card: said, and the rest of the ChatMessage kept
                self._warnings.add("bad_card", str(exc))
            except Exception as exc:  # bad peer input must not stop the conversation
                self._warnings.add("bad_input", f"{type(exc).__name__}: {exc}")

    def untagged_card(self, item: MetadataContent, out: list[Message]) -> None:
        """A card MetadataContent (the chat protocol's interactive cards): a ``card`` Message;
        other metadata is not ours to read.

        Args:
            item: the content item.
            out: where the decoded Messages are appended.

        Raises:
            CardError: a card uagents-core refuses.
        """
        msg = card_message(item, self._next_id())
        if msg is None:
            return
        self._whole(msg, out)

    def untagged_text(self, peer: PeerState, text: str, now: float, out: list[Message]) -> None:
        """Text outside any tagged group: to the latest open stream, or a whole message.

        Args:
            peer: the sender's state.
            text: the text.
            now: the current time, in seconds on the caller's monotonic clock.
            out: where the decoded Messages are appended.
        """
        streams = peer.streams
        if streams:
            self.text(peer, None, next(reversed(streams.values())), text, now, out)
            return
        n = utf8_size(text)
        if n > self.limits.max_message_bytes:
            self._warnings.add(
                "message_too_large",
                f"text exceeds max_message_bytes={self.limits.max_message_bytes}; dropped",
            )
            return
        if not self.count_reply(peer.untagged, n):
            return
        message_id = self._next_id()
        self._whole(Message(type=TEXT, props={"content": text}, message_id=message_id), out)

    def untagged_resource(self, item: ResourceContent, out: list[Message]) -> None:
        """A ResourceContent: a media message by its MIME type, else a ``resource`` message.

        Args:
            item: the content item.
            out: where the decoded Messages are appended.
        """
        res = item.resource[0] if isinstance(item.resource, list) else item.resource
        mime = res.metadata.get("mime_type", "")
        kind = mime.split("/", 1)[0]
        message_id = self._next_id()
        if kind in MEDIA_TYPES:
            props: dict[str, Any] = {"url": res.uri}
            if kind in (AUDIO, VIDEO) and "/" in mime and not mime.endswith("/*"):
                props["format"] = mime.split("/", 1)[1]
            msg = Message(type=kind, props=props, message_id=message_id)
        else:
            msg = Message(
                type="resource",
                props={"uri": res.uri, "metadata": dict(res.metadata)},
                message_id=message_id,
            )
        self._whole(msg, out)

    def _whole(self, msg: Message, out: list[Message]) -> None:
        """``msg``, a whole message of one chunk, then its message_end (completed)."""
        out.append(msg)
        out.append(
            Message(
                type=EVENT,
                props={
                    "event": MESSAGE_END,
                    "data": {
                        "message_id": msg.message_id,
                        "type": msg.type,
                        "chunk_count": 1,
                        "status": "completed",
                    },
                },
                message_id=msg.message_id,
            )
        )
