"""Everything the chat decoder keeps, with its caps: senders, open streams, conversations,
held-back ChatMessages, remembered ids and byte counts.

Each kind of state has a cap per sender and a cap in total (:class:`DecoderLimits`); past a total
cap the oldest state is shed with a warning, so the whole stays under
:meth:`DecoderLimits.state_bound` whatever any number of senders send.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from agent_stream.adapters.chat.bounded import BoundedTable
from agent_stream.adapters.chat.limits import DecoderLimits, WarningQueue
from agent_stream.adapters.chat.reorder import HeldLedger, ReorderWindow
from agent_stream.adapters.chat.wire import MessageKey, utf8_size

__all__ = ["Conversation", "DecoderState", "OpenStream", "PeerState", "ReplySize"]

OVER = -1  # a message's byte count once it went past max_message_bytes


_KEPT_COST = 64  # a kept chunk beyond its text: its str object and list slot


@dataclass(slots=True, eq=False)
class OpenStream:
    """An open chat stream: the message its text belongs to, and what it has received.

    Attributes:
        stream_id: the chat stream's id.
        message_id: the message its text belongs to.
        thread_id: the message's thread (None: none).
        block_id: the message's block (None: none).
        type: the message's type.
        tagged: it was opened by a tagged group (else untagged text).
        conversation: the conversation it belongs to (None: untagged).
        bytes: UTF-8 bytes of text received.
        chunks: text chunks received.
        kept: its text so far, kept when its opening group says ``keep`` (its message_end
            then leaves extra.content out); None: not kept.
    """

    stream_id: str
    message_id: str
    thread_id: str | None
    block_id: str | None
    type: str
    tagged: bool
    conversation: str | None
    last: float  # when text last arrived (at first, when the stream opened)
    bytes: int = 0
    chunks: int = 0
    rejected: bool = False  # over a limit: the rest of its text is dropped
    kept: list[str] | None = None  # its text, kept to rebuild its message_end (``keep``)
    kept_cost: int = 0  # what ``kept`` counts against max_kept_bytes_total
    announced: bool = False  # message_start emitted (untagged streams)


class ReplySize:
    """UTF-8 bytes decoded so far of one reply, and whether it went past max_reply_bytes."""

    __slots__ = ("bytes", "over")

    def __init__(self) -> None:
        self.bytes = 0
        self.over = False


class Conversation:
    """One tagged reply from a sender: its ordering, whether it ended, its size so far.

    Args:
        sender: the sender key.
        conversation: the conversation's id.
        ledger: the decoder's ledger of held-back ChatMessages.
    """

    __slots__ = (
        "finished",
        "keepalives",
        "kept",
        "kept_costs",
        "key",
        "last_stream",
        "order",
        "size",
    )

    def __init__(self, sender: str, conversation: str, ledger: HeldLedger) -> None:
        self.key = (sender, conversation)  # owner of its per-message byte counts
        self.order = ReorderWindow(conversation, ledger)
        self.finished = False
        self.size = ReplySize()
        self.keepalives = 0
        # per message carried as metadata whose appends say ``keep``: their text, to rebuild its
        # message_end's extra.content (None: one was refused, the text is not whole). Counted
        # against max_kept_bytes_total with the streams' (DecoderState.keep_append); dropped at
        # the message's end, the reply's and the conversation's.
        self.kept: dict[MessageKey, list[str] | None] = {}
        self.kept_costs: dict[MessageKey, int] = {}  # what each counts against the total
        # the stream of the last chunk group decoded in order, and the gaps skipped then: a lean
        # follow-on chunk group (no ids) is of it, unless a gap was skipped since
        self.last_stream: tuple[str, int] | None = None


class PeerState:
    """What the decoder keeps for one sender.

    Args:
        sender: the sender key.
    """

    __slots__ = ("conversations", "sender", "streams", "untagged")

    def __init__(self, sender: str) -> None:
        self.sender = sender
        self.streams: dict[str, OpenStream] = {}  # open streams in order of start
        self.conversations: dict[str, Conversation] = {}  # in order of creation
        self.untagged = ReplySize()  # everything untagged from the sender counts as one reply


class DecoderState:
    """The decoder's state under its caps. Shedding is oldest-first and warned about.

    Args:
        limits: the caps.
        warnings: where warnings are queued.
    """

    def __init__(self, limits: DecoderLimits, warnings: WarningQueue) -> None:
        self.limits = limits
        self.warnings = warnings
        self.peers: dict[str, PeerState] = {}  # least recently active first
        self.seen: BoundedTable[None] = BoundedTable(limits.max_seen_ids, limits.max_seen_ids_total)
        self.refused: BoundedTable[None] = BoundedTable(
            limits.max_refused_total, limits.max_refused_total
        )
        self.message_bytes: BoundedTable[int] = BoundedTable(
            limits.max_tracked_messages, limits.max_tracked_total
        )
        self.held = HeldLedger(limits.max_held_total, limits.max_held_bytes)
        self._streams: dict[tuple[str, str], None] = {}  # open streams, oldest first
        self._conversations: dict[tuple[str, str], None] = {}  # oldest first
        self._seen_shed = 0
        self.kept_bytes = 0  # stream text kept in all (max_kept_bytes_total)

    # -- senders --------------------------------------------------------------------------------
    def sender_key(self, sender: str) -> str:
        """A sender's key: its address, or a digest of it when longer than max_id_chars.

        Args:
            sender: the sender's address.
        """
        if len(sender) <= self.limits.max_id_chars:
            return sender
        return "sha256:" + hashlib.sha256(sender.encode("utf-8", "replace")).hexdigest()

    def peer(self, sender: str) -> PeerState:
        """The state of a sender, now the most recently active.

        Args:
            sender: a sender key (see :meth:`sender_key`).
        """
        peers = self.peers
        peer = peers.pop(sender, None)
        if peer is None:
            peer = PeerState(sender)
            if len(peers) >= self.limits.max_senders:
                oldest = next(iter(peers))
                self.forget(oldest)
                self.warnings.add(
                    "sender_shed",
                    f"more than max_senders="
                    f"{self.limits.max_senders}; the least recently active "
                    "sender's state was dropped",
                    once=True,
                )
        peers[sender] = peer
        return peer

    def forget(self, sender: str) -> None:
        """Drop every state kept for a sender.

        Args:
            sender: a sender key (see :meth:`sender_key`).
        """
        peer = self.peers.pop(sender, None)
        self.seen.forget(sender)
        self.refused.forget(sender)
        if peer is None:
            return
        for stream_id, stream in peer.streams.items():
            self._streams.pop((sender, stream_id), None)
            self.release_kept(stream)
        for conv in list(peer.conversations.values()):
            self._drop_conversation(peer, conv)

    def remember(self, sender: str, msg_id: object) -> bool:
        """Remember a msg_id of a sender; False if it was seen before.

        Args:
            sender: a sender key (see :meth:`sender_key`).
            msg_id: the ChatMessage's msg_id.
        """
        seen = self.seen
        if seen.has(sender, msg_id):
            return False
        seen.put(sender, msg_id, None)
        if seen.shed != self._seen_shed:
            self._seen_shed = seen.shed
            self.warnings.add(
                "seen_ids_shed",
                f"more than max_seen_ids_total="
                f"{self.limits.max_seen_ids_total} msg_ids remembered; the "
                "oldest are forgotten (duplicates of them are not caught)",
                once=True,
            )
        return True

    # -- conversations ----------------------------------------------------------------------------
    def conversation(self, peer: PeerState, conv_id: str, fresh: bool = False) -> Conversation:
        """A conversation of a sender, made when new.

        Args:
            peer: the sender's state.
            conv_id: the conversation's id.
            fresh: a new one replaces the old.
        """
        conv = peer.conversations.get(conv_id)
        if conv is not None and not fresh:
            return conv
        if conv is not None:
            self._drop_conversation(peer, conv)
        limits = self.limits
        if len(peer.conversations) >= limits.max_conversations:
            self._shed_conversation(
                peer,
                next(iter(peer.conversations.values())),
                f"more than max_conversations={limits.max_conversations} from one sender",
            )
        if len(self._conversations) >= limits.max_conversations_total:
            sender, oldest = next(iter(self._conversations))
            victim = self.peers[sender]
            self._shed_conversation(
                victim,
                victim.conversations[oldest],
                f"more than max_conversations_total={limits.max_conversations_total}",
            )
        conv = peer.conversations[conv_id] = Conversation(peer.sender, conv_id, self.held)
        self._conversations[conv.key] = None
        return conv

    def _shed_conversation(self, peer: PeerState, conv: Conversation, why: str) -> None:
        self._drop_conversation(peer, conv)
        self.warnings.add(
            "conversation_shed",
            f"{why}: the oldest conversation ({conv.key[1]!r}) was dropped with what it held back",
        )

    def _drop_conversation(self, peer: PeerState, conv: Conversation) -> None:
        peer.conversations.pop(conv.key[1], None)
        self._conversations.pop(conv.key, None)
        conv.order.clear()
        self.message_bytes.forget(conv.key)
        self.clear_kept(conv)

    # -- streams ----------------------------------------------------------------------------------
    def open_stream(self, peer: PeerState, stream: OpenStream) -> None:
        """Register a stream as open (shedding the oldest open stream past the total).

        Args:
            peer: the sender's state.
            stream: the stream.
        """
        total = self.limits.max_open_streams_total
        if len(self._streams) >= total:
            sender, stream_id = next(iter(self._streams))
            victim = self.peers[sender].streams[stream_id]
            self.close_stream(self.peers[sender], stream_id)
            self.refused.put(sender, stream_id, None)
            self.warnings.add(
                "stream_shed",
                f"more than max_open_streams_total={total} open; "
                f"the oldest (stream {stream_id}) was dropped",
                victim.message_id,
                victim.thread_id,
            )
        peer.streams[stream.stream_id] = stream
        self._streams[(peer.sender, stream.stream_id)] = None

    def close_stream(self, peer: PeerState, stream_id: str) -> OpenStream | None:
        """Forget an open stream; the stream, if it was open.

        Args:
            peer: the sender's state.
            stream_id: the chat stream's id.
        """
        self._streams.pop((peer.sender, stream_id), None)
        stream = peer.streams.pop(stream_id, None)
        if stream is not None:
            self.release_kept(stream)
        return stream

    def keep(self, stream: OpenStream, text: str, n: int) -> None:
        """Keep a stream's text to rebuild its message_end (it stops keeping past
        max_kept_bytes_total: its message_end then goes without the text, warned).

        Args:
            stream: the open stream, keeping its text.
            text: its next chunk.
            n: the chunk's UTF-8 bytes.
        """
        kept = stream.kept
        if kept is None:
            return
        cost = n + _KEPT_COST
        if self.kept_bytes + cost > self.limits.max_kept_bytes_total:
            self.release_kept(stream)
            stream.kept = None
            return
        kept.append(text)
        stream.kept_cost += cost
        self.kept_bytes += cost

    def keep_append(self, conv: Conversation, key: MessageKey, piece: str) -> None:
        """Keep an append carried as metadata to rebuild its message_end (past
        max_kept_bytes_total, counted with the streams' text, its text is no longer whole: the
        message_end then goes without it, warned).

        Args:
            conv: the conversation.
            key: the message's (thread_id, message_id).
            piece: the append's text.
        """
        kept = conv.kept.setdefault(key, [])
        if kept is None:
            return
        cost = utf8_size(piece) + _KEPT_COST
        if self.kept_bytes + cost > self.limits.max_kept_bytes_total:
            self.spoil_kept(conv, key)
            return
        kept.append(piece)
        conv.kept_costs[key] = conv.kept_costs.get(key, 0) + cost
        self.kept_bytes += cost

    def spoil_kept(self, conv: Conversation, key: MessageKey) -> None:
        """A message's kept appends are no longer its whole text: forget them, keep nothing more.

        Args:
            conv: the conversation.
            key: the message's (thread_id, message_id).
        """
        conv.kept[key] = None
        self.kept_bytes -= conv.kept_costs.pop(key, 0)

    def drop_kept(self, conv: Conversation, key: MessageKey) -> None:
        """Forget a message's kept appends (its message_end came).

        Args:
            conv: the conversation.
            key: the message's (thread_id, message_id).
        """
        conv.kept.pop(key, None)
        self.kept_bytes -= conv.kept_costs.pop(key, 0)

    def clear_kept(self, conv: Conversation) -> None:
        """Forget every message's kept appends of a conversation (it ended or was dropped).

        Args:
            conv: the conversation.
        """
        conv.kept.clear()
        self.kept_bytes -= sum(conv.kept_costs.values())
        conv.kept_costs.clear()

    def release_kept(self, stream: OpenStream) -> None:
        """Forget the text a stream kept.

        Args:
            stream: the stream.
        """
        self.kept_bytes -= stream.kept_cost
        stream.kept_cost = 0
        if stream.kept is not None:
            stream.kept = []
