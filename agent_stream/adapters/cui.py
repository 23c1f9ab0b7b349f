"""Native (CUI) out: the Message JSON itself, exactly the spec's shape. Pure.

The wire objects are the Messages: ``frame_jsonl`` writes one a line (JSONL), ``frame_sse`` one
Server-Sent Event each (``data: <json>\\n\\n``). Nothing is translated: the receiver merges deltas
with the DSL's own rules, and a stream_end closes every message still open. ``close()`` sends the
final stream_end when the input did not end the stream itself: status ``error``, "the stream is
incomplete", when it was closed without a status (and nothing when nothing was sent); the status
given otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_stream.adapters._tracking import Warnings
from agent_stream.adapters.framing import run_encoder, sse
from agent_stream.errors import WarningCode
from agent_stream.message import EVENT, STREAM_END, Message, StreamEndData, lifecycle

__all__ = ["CUIEncoder", "encode_messages", "frame_jsonl", "frame_sse"]


def frame_jsonl(msg: Message) -> str:
    """The Message as one JSON line.

    Args:
        msg: the Message.
    """
    return msg.to_json() + "\n"


def frame_sse(msg: Message) -> str:
    """The Message as one Server-Sent Event.

    Args:
        msg: the Message.
    """
    return sse(msg.to_json())


INCOMPLETE_TEXT = "the stream is incomplete: it ended before stream_end"


class CUIEncoder(Warnings):
    """Messages in, the same Messages out, until the stream ends."""

    def __init__(self) -> None:
        super().__init__()
        self.finished = False
        self._sent = False

    def feed(self, msg: Message) -> list[Message]:
        """The Message itself (nothing after the stream ended).

        Args:
            msg: the next Message of the stream.
        """
        if self.finished:
            return []
        self._sent = True
        if msg.type == EVENT and msg.event == STREAM_END:
            self.finished = True
        return [msg]

    def close(self, *, status: str | None = None, error: str | None = None) -> list[Message]:
        """The final stream_end, when the stream has not ended yet (idempotent).

        Without ``status`` the Messages had no stream_end: it has status ``error`` and says the
        stream is incomplete (with a warning); nothing at all when nothing was sent. With
        ``status`` it is sent even when no Message was (a reply cancelled before it began says
        so).

        Args:
            status: how the stream ended, as its stream_end says (None: it was cut).
            error: what went wrong, when it did.
        """
        if self.finished or (not self._sent and status is None):
            self.finished = True
            return []
        if status is None:
            self._warn(
                WarningCode.INCOMPLETE,
                "the stream ended without stream_end; the "
                "receiver gets a stream_end with status error",
            )
            status, error = "error", error or INCOMPLETE_TEXT
        end = lifecycle(
            STREAM_END,
            StreamEndData(
                status=status,  # type: ignore[arg-type]
                error=error,
            ),
        )
        out = self.feed(end)
        self.finished = True
        return out


def encode_messages(messages: Iterable[Message], **options: Any) -> list[Message]:
    """Encode a whole Message stream.

    Args:
        messages: the stream's Messages, in order.
        **options: ``CUIEncoder``'s options.
    """
    return list(run_encoder(CUIEncoder(**options), messages))
