"""What the chat decoder holds at most, whatever any number of senders send, and its warnings.

Every piece of state a peer can make the decoder keep has a cap per sender and a cap in total.
State past a total cap is shed oldest-first with a warning; input past a size cap is dropped with
a warning. With the defaults, the decoder's whole state stays under
:meth:`DecoderLimits.state_bound` (about 50 MiB; documented as 64 MiB).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, fields

from agent_stream.adapters.chat.wire import MAX_CUTS
from agent_stream.errors import StreamWarning

__all__ = ["DecoderLimits", "WarningQueue"]

KiB = 2**10
MiB = 2**20

# Upper bounds (bytes, 64-bit CPython) of what one item of each kind of state costs, ids at their
# longest (max_id_chars characters of up to 4 bytes each). Measured with tracemalloc, rounded up.
_ID = 64 + 4 * 256  # one id string at max_id_chars=256
_SENDER_COST = 1 * KiB + _ID
_SEEN_ID_COST = 320
_REFUSED_COST = 400
_STREAM_COST = 1 * KiB + 6 * _ID
_CONVERSATION_COST = 2 * KiB + 2 * _ID  # its id, and its last chunk group's stream's
_TRACKED_COST = 320
_HELD_COST = 256  # ledger entry; the ChatMessage itself is counted by its estimated size
_WARNING_COST = 1 * KiB + 4 * 600  # detail at most 600 characters


@dataclass(frozen=True)
class DecoderLimits:
    """The chat decoder's caps (per sender and in total) and timeouts.

    Counts are per sender unless the name ends in ``_total``; sizes are UTF-8 bytes, except the
    estimated in-memory size of ChatMessages (``max_chat_bytes``, ``max_held_bytes``).
    """

    # ordering: held-back ChatMessages per conversation (more: the gap is reported at once)
    reorder_window: int = 64
    gap_timeout: float = 2.0  # seconds a gap is waited for, then reported
    idle_timeout: float = 60.0  # seconds an open stream may go without text (then: error)
    max_seq_ahead: int = 1024  # a seq further ahead of the expected one: dropped, warned
    # senders with state (past it: the least recently active is forgotten)
    max_senders: int = 4096
    max_open_streams: int = 64  # per sender: more are refused
    max_open_streams_total: int = 1024  # past it: the oldest open stream is shed
    max_conversations: int = 64  # per sender: past it its oldest conversation is shed
    max_conversations_total: int = 1024  # past it: the oldest conversation is shed
    max_held_total: int = 1024  # held-back ChatMessages; past it the oldest is dropped
    max_held_bytes: int = 16 * MiB  # their estimated size; past it the oldest are dropped
    max_seen_ids: int = 4096  # msg_ids remembered to drop duplicates (oldest forgotten)
    max_seen_ids_total: int = 16384  # the same, for all senders together
    max_refused_total: int = 4096  # ids of refused or shed streams (their text is dropped)
    max_tracked_messages: int = 1024  # per conversation: messages whose bytes are counted
    max_tracked_total: int = 16384  # messages whose bytes are counted, in all conversations
    max_chat_bytes: int = 8 * MiB  # one ChatMessage (estimated; raw JSON in parse_chat)
    max_message_bytes: int = 8 * MiB  # a message, event or message without id
    max_stream_bytes: int = 8 * MiB  # the text of one chat stream
    max_reply_bytes: int = 32 * MiB  # a conversation (untagged: everything from a sender)
    # text kept to rebuild message_ends' extra.content (``keep``: open streams' and appends), in all
    max_kept_bytes_total: int = 8 * MiB
    max_id_chars: int = 256  # an id (message, thread, block, stream, type, conversation)
    # chunks one chunk group's text may be cut into (``cuts``); more: the text is one chunk, warned
    max_cuts: int = MAX_CUTS
    max_warnings: int = 1024  # undrained warnings; past it the oldest are dropped, counted

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if (
                not isinstance(value, (int, float))
                or value != value
                or value < 0
                or (f.name.startswith("max_") and value < 1)
            ):
                raise ValueError(f"ChatDecoder: {f.name} must be positive, got {value!r}")

    def state_bound(self) -> int:
        """Bytes the decoder's whole state stays under with these caps (64-bit CPython)."""
        id_cost = 64 + 4 * self.max_id_chars
        return (
            self.max_senders * (_SENDER_COST - _ID + id_cost)
            + self.max_seen_ids_total * _SEEN_ID_COST
            + self.max_refused_total * _REFUSED_COST
            + self.max_open_streams_total * (_STREAM_COST - 6 * _ID + 6 * id_cost)
            + self.max_conversations_total * (_CONVERSATION_COST - 2 * _ID + 2 * id_cost)
            + self.max_tracked_total * _TRACKED_COST
            + self.max_held_total * _HELD_COST
            + self.max_held_bytes
            + self.max_kept_bytes_total
            + self.max_warnings * _WARNING_COST
        )


_DETAIL_CHARS = 600


class WarningQueue:
    """Warnings waiting for :meth:`drain_warnings`: at most ``size``, oldest dropped and counted.

    Args:
        size: how many warnings wait at most.
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._queue: deque[StreamWarning] = deque(maxlen=size)
        self._dropped = 0
        self._pending_codes: set[str] = set()  # codes added with ``once``, not yet drained

    def add(
        self,
        code: str,
        detail: str,
        message_id: str | None = None,
        thread_id: str | None = None,
        *,
        once: bool = False,
    ) -> None:
        """Queue a warning.

        Args:
            code: the warning's code (see :class:`~agent_stream.errors.WarningCode`).
            detail: what happened (cut to 600 characters).
            message_id: the message concerned, if any.
            thread_id: the thread concerned, if any.
            once: not when a warning with this code waits already.
        """
        if once:
            if code in self._pending_codes:
                return
            self._pending_codes.add(code)
        if len(detail) > _DETAIL_CHARS:
            detail = detail[:_DETAIL_CHARS] + "..."
        if len(self._queue) == self.size:
            self._dropped += 1
        self._queue.append(StreamWarning(code, detail, message_id=message_id, thread_id=thread_id))

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings queued since the last call (first, a count of those dropped, if any)."""
        out = list(self._queue)
        if self._dropped:
            out.insert(
                0,
                StreamWarning(
                    "warnings_dropped",
                    f"{self._dropped} older warning(s) "
                    f"dropped: more than max_warnings={self.size} waited",
                ),
            )
        self._queue.clear()
        self._dropped = 0
        self._pending_codes.clear()
        return out
