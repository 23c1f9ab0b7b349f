"""ChatDecoder: ChatMessages in (from any number of senders), Messages out.

Each sender's ChatMessages are deduplicated by msg_id; tagged ones are put back in order per
conversation (:mod:`.reorder`) and decoded group by group (:mod:`.tagged`); untagged ones and
chat streams are decoded by :mod:`.streams`. One exception to the order: a reply's final
``stream_end``, alone in a ChatMessage numbered as one already decoded, ends a reply that has not
ended at once (a fleet replica ending a dead replica's reply numbers it after the reply's
mirror, which may lag what reached the asker).
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream import jsontext
from agent_stream.adapters.chat.delivery import Gap
from agent_stream.adapters.chat.limits import DecoderLimits, WarningQueue
from agent_stream.adapters.chat.reorder import seq_number
from agent_stream.adapters.chat.sizes import estimated_size, size_bound
from agent_stream.adapters.chat.state import Conversation, DecoderState, PeerState
from agent_stream.adapters.chat.streams import StreamDecoder
from agent_stream.adapters.chat.tagged import TaggedDecoder
from agent_stream.adapters.chat.wire import OP_MESSAGE, tagged_items
from agent_stream.errors import StreamWarning
from agent_stream.message import EVENT, STREAM_END, Message

__all__ = ["ChatDecoder"]

_DEFAULT_LIMITS = DecoderLimits()


@functools.lru_cache(maxsize=64)
def _with(base: DecoderLimits, changed: tuple[tuple[str, Any], ...]) -> DecoderLimits:
    """``base`` with ``changed`` fields (checked by DecoderLimits; an error is not cached)."""
    return replace(base, **dict(changed))


class ChatDecoder:
    """ChatMessages in (from any number of senders), Messages out.

    Tagged replies are rebuilt with their ids, types and hierarchy; untagged chat streams from
    agents without agent_stream become text messages with ids of the decoder's own (``U1``...).
    Bad peer input never raises: it is dropped and reported by :meth:`drain_warnings`.

    Limits (:class:`DecoderLimits`; keyword arguments override ``limits``): per sender and in
    total, on everything a peer can make the decoder hold, so that its whole state stays under
    :meth:`DecoderLimits.state_bound`. Among them: ``max_open_streams`` open chat streams per
    sender (more are refused), ``max_stream_bytes`` UTF-8 bytes of text per chat stream and
    ``max_message_bytes`` per logical message (text and metadata-carried props; the rest of it
    is dropped), ``idle_timeout`` seconds without text before an open stream is closed with
    status error, ``reorder_window`` tagged ChatMessages held back waiting for a missing one,
    for at most ``gap_timeout`` seconds; then the gap is reported and decoding goes on.

    Args:
        limits: every cap and timeout (None: the defaults of DecoderLimits).
        reorder_window: overrides ``limits.reorder_window`` (None: keep it); likewise the
            others below.
        gap_timeout: seconds a gap is waited for, then reported.
        idle_timeout: seconds an open stream may go without text.
        max_open_streams: open chat streams per sender.
        max_stream_bytes: UTF-8 bytes of text per chat stream.
        max_message_bytes: UTF-8 bytes per logical message.

    Raises:
        ValueError: a limit that is not a positive number.
    """

    def __init__(
        self,
        *,
        limits: DecoderLimits | None = None,
        reorder_window: int | None = None,
        gap_timeout: float | None = None,
        idle_timeout: float | None = None,
        max_open_streams: int | None = None,
        max_stream_bytes: int | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        given: dict[str, Any] = {
            "reorder_window": reorder_window,
            "gap_timeout": gap_timeout,
            "idle_timeout": idle_timeout,
            "max_open_streams": max_open_streams,
            "max_stream_bytes": max_stream_bytes,
            "max_message_bytes": max_message_bytes,
        }
        base = limits or _DEFAULT_LIMITS
        changed = tuple((k, v) for k, v in given.items() if v is not None and getattr(base, k) != v)
        # one decoder per reply: the same limits are checked once, not again for each
        self.limits = _with(base, changed) if changed else base
        self._warnings = WarningQueue(self.limits.max_warnings)
        self._state = DecoderState(self.limits, self._warnings)
        self._streams = StreamDecoder(self._state)
        self._tagged = TaggedDecoder(self._streams, self._state)

    # -- public ---------------------------------------------------------------------------------
    def feed(self, sender: str, chat: ChatMessage, now: float) -> list[Message]:
        """Decode one ChatMessage; never raises for bad peer input.

        Args:
            sender: the sender's address.
            chat: the ChatMessage.
            now: the current time, in seconds on a monotonic clock (the one ``poll`` is given).

        Returns:
            The Messages it completes, possibly none.
        """
        out: list[Message] = []
        state = self._state
        limits = self.limits
        size = size_bound(chat)
        if size > limits.max_chat_bytes and (size := estimated_size(chat)) > limits.max_chat_bytes:
            self._warnings.add(
                "chat_too_large",
                f"ChatMessage of ~{size} bytes exceeds "
                f"max_chat_bytes={limits.max_chat_bytes}; dropped",
            )
            return out
        sender = state.sender_key(sender)
        peer = state.peer(sender)
        msg_id = chat.msg_id
        if not state.remember(sender, _id_key(msg_id)):
            self._warnings.add("duplicate_chat_message", f"msg_id {msg_id} seen before; dropped")
            return out
        head = next(tagged_items(chat), None)
        if head is None:
            self._streams.untagged(peer, chat, now, out)
            return out
        conv_id = head.get("conversation", "")
        if len(conv_id) > limits.max_id_chars:
            self._warnings.add(
                "bad_metadata",
                f"conversation longer than max_id_chars={limits.max_id_chars}; ChatMessage dropped",
            )
            return out
        seq = seq_number(head.get("seq"))
        if seq is None:
            self._tagged.decode(peer, conv_id, chat, now, out, ordered=False)
            return out
        last = max(seq_number(head.get("seq_last")) or seq, seq)
        conv = peer.conversations.get(conv_id)
        if conv is None or (conv.finished and seq == 1 and not conv.order.held):
            # new, or a new reply reusing the conversation id
            conv = state.conversation(peer, conv_id, fresh=True)
        elif seq == last < conv.order.expected and not conv.finished and _ends_reply(chat):
            # The reply's end, numbered as a ChatMessage already decoded that did not end it:
            # a fleet replica ending a dead replica's reply numbers its end after the reply's
            # mirror, which may lack the last ChatMessages that reached the asker. Dropped as
            # late, the reply would wait for its idle timeout; it ends now.
            conv.order.clear()
            self._tagged.decode(peer, conv_id, chat, now, out, ordered=False)
            return out
        conv.order.offer(
            chat,
            seq,
            last,
            now,
            limits.reorder_window,
            limits.max_seq_ahead,
            self._decoder(peer, conv_id, now, out),
            self._warnings,
        )
        return out

    def poll(self, now: float) -> list[Message]:
        """Report gaps older than gap_timeout and close streams idle for idle_timeout.

        Args:
            now: the current time, in seconds on the clock ``feed`` was given.

        Returns:
            The Messages this releases or ends, possibly none.
        """
        out: list[Message] = []
        limits = self.limits
        for peer in self._state.peers.values():
            for conv_id, conv in list(peer.conversations.items()):
                order = conv.order
                if order.gap_since is not None and now - order.gap_since >= limits.gap_timeout:
                    order.skip_gap(now, self._decoder(peer, conv_id, now, out), self._warnings)
            for stream in list(peer.streams.values()):
                if now - stream.last >= limits.idle_timeout:
                    self._warnings.add(
                        "stream_timeout",
                        f"no text for {limits.idle_timeout:g} s; stream closed as error",
                        stream.message_id,
                        stream.thread_id,
                    )
                    self._state.close_stream(peer, stream.stream_id)
                    out.append(self._streams.end_event(stream, "error", error="idle timeout"))
        return out

    def close(self) -> list[Message]:
        """End of input: decode every held-back ChatMessage now, reporting the gaps."""
        out: list[Message] = []
        for peer in self._state.peers.values():
            for conv_id, conv in list(peer.conversations.items()):
                while conv.order.held:
                    conv.order.skip_gap(0.0, self._decoder(peer, conv_id, 0.0, out), self._warnings)
        return out

    @property
    def next_deadline(self) -> float | None:
        """When :meth:`poll` has something to do (None: nothing pending)."""
        best: float | None = None
        for peer in self._state.peers.values():
            for conv in peer.conversations.values():
                since = conv.order.gap_since
                if since is not None:
                    d = since + self.limits.gap_timeout
                    if best is None or d < best:
                        best = d
            for stream in peer.streams.values():
                d = stream.last + self.limits.idle_timeout
                if best is None or d < best:
                    best = d
        return best

    def drain_warnings(self) -> list[StreamWarning]:
        """Warnings since the last call (gaps, duplicates, unknown streams, limits)."""
        return self._warnings.drain_warnings()

    def finished(self, sender: str, conversation: str | None = None) -> bool:
        """True when the sender's final stream_end was decoded.

        Args:
            sender: the sender's address.
            conversation: the conversation (None: every conversation seen from the sender).
        """
        peer = self._state.peers.get(self._state.sender_key(sender))
        if peer is None:
            return False
        if conversation is not None:
            conv = peer.conversations.get(conversation)
            return conv is not None and conv.finished
        convs = peer.conversations.values()
        return bool(convs) and all(c.finished for c in convs)

    def whole(self, sender: str, conversation: str) -> bool:
        """True when the final stream_end was decoded with no gap given up.

        Every ChatMessage of the reply was decoded.

        Args:
            sender: the sender's address.
            conversation: the conversation.
        """
        conv = self._conversation(sender, conversation)
        return conv is not None and conv.finished and conv.order.skipped == 0

    def gaps(self, sender: str | None = None) -> list[Gap]:
        """The open gaps of unfinished conversations: the first missing range of each.

        For a repair request.

        Args:
            sender: the sender's address (None: every sender).
        """
        out: list[Gap] = []
        for peer in self._state.peers.values():
            if sender is not None and peer.sender != self._state.sender_key(sender):
                continue
            for conv_id, conv in peer.conversations.items():
                missing = conv.order.missing() if not conv.finished else None
                if missing is not None:
                    lo, hi, since = missing
                    out.append(Gap(peer.sender, conv_id, lo, hi, since, conv.order.skipped))
        return out

    def skipped(self, sender: str, conversation: str) -> int:
        """Gaps of a conversation given up so far.

        Args:
            sender: the sender's address.
            conversation: the conversation.
        """
        conv = self._conversation(sender, conversation)
        return conv.order.skipped if conv is not None else 0

    def keepalives(self, sender: str, conversation: str) -> int:
        """Keepalives received in a conversation.

        Args:
            sender: the sender's address.
            conversation: the conversation.
        """
        conv = self._conversation(sender, conversation)
        return conv.keepalives if conv is not None else 0

    def _conversation(self, sender: str, conversation: str) -> Conversation | None:
        peer = self._state.peers.get(self._state.sender_key(sender))
        return peer.conversations.get(conversation) if peer is not None else None

    def forget(self, sender: str) -> None:
        """Drop every state kept for a sender.

        Args:
            sender: the sender's address.
        """
        self._state.forget(self._state.sender_key(sender))

    def open_streams(self, sender: str) -> int:
        """How many chat streams of a sender are open.

        Args:
            sender: the sender's address.
        """
        peer = self._state.peers.get(self._state.sender_key(sender))
        return len(peer.streams) if peer is not None else 0

    # -- limits, as attributes --------------------------------------------------------------------
    @property
    def reorder_window(self) -> int:
        """Tagged ChatMessages held back per conversation waiting for a missing one."""
        return self.limits.reorder_window

    @property
    def gap_timeout(self) -> float:
        """Seconds a gap is waited for before it is reported."""
        return self.limits.gap_timeout

    @property
    def idle_timeout(self) -> float:
        """Seconds without text before an open stream is closed with status error."""
        return self.limits.idle_timeout

    @property
    def max_open_streams(self) -> int:
        """Open chat streams per sender."""
        return self.limits.max_open_streams

    @property
    def max_stream_bytes(self) -> int:
        """UTF-8 bytes of text per chat stream."""
        return self.limits.max_stream_bytes

    @property
    def max_message_bytes(self) -> int:
        """UTF-8 bytes per logical message."""
        return self.limits.max_message_bytes

    def _decoder(
        self, peer: PeerState, conv_id: str, now: float, out: list[Message]
    ) -> Callable[[ChatMessage], None]:
        return lambda chat: self._tagged.decode(peer, conv_id, chat, now, out)


def _ends_reply(chat: ChatMessage) -> bool:
    """Whether a tagged ChatMessage carries its reply's final ``stream_end``."""
    for md in tagged_items(chat):
        if md.get("op") != OP_MESSAGE or md.get("type") != EVENT:
            continue
        try:
            props = jsontext.loads(md.get("props") or "null")
        except (ValueError, RecursionError):
            continue
        if isinstance(props, dict) and props.get("event") == STREAM_END:
            return True
    return False


def _id_key(msg_id: object) -> Hashable:
    """What is remembered of a msg_id: the UUID itself, else a digest (of bounded size)."""
    if isinstance(msg_id, uuid.UUID):
        return msg_id
    return hashlib.blake2b(str(msg_id).encode("utf-8", "replace"), digest_size=16).digest()
