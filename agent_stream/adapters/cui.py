"""Native (CUI) out: the Message JSON itself, exactly the spec's shape. Pure.

One Message a line (JSONL), or one Server-Sent Event per Message (``data: <json>\\n\\n``) with
``sse=True``. Nothing is translated: the receiver merges deltas with the DSL's own rules, and a
stream_end closes every message still open. ``close()`` sends the final stream_end when the input
did not end the stream itself (and something was sent).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agent_stream.adapters._common import opt, run_encoder
from agent_stream.message import STREAM_END, Message, StreamEndData, lifecycle

__all__ = ["CUIEncoder", "cli_encode", "encode_messages"]


class CUIEncoder:
    """Messages in, native Message JSON out (JSONL lines, or SSE events with ``sse=True``)."""

    def __init__(self, *, sse: bool = False) -> None:
        self.sse = sse
        self.finished = False
        self._sent = False

    def feed(self, msg: Message) -> list[str]:
        """The Message as one JSONL line or SSE event (nothing after the stream ended)."""
        if self.finished:
            return []
        self._sent = True
        if msg.type == "event" and msg.event == STREAM_END:
            self.finished = True
        j = msg.to_json()
        return ["data: " + j + "\n\n" if self.sse else j + "\n"]

    def close(self, *, status: str = "completed", error: str | None = None) -> list[str]:
        """The final stream_end, when the stream has not ended yet (idempotent)."""
        if self.finished or not self._sent:
            self.finished = True
            return []
        end = lifecycle(STREAM_END, StreamEndData(status=status,  # type: ignore[arg-type]
                                                  error=error))
        out = self.feed(end)
        self.finished = True
        return out


def encode_messages(messages: Iterable[Message], **options: Any) -> list[str]:
    """Encode a whole Message stream (``CUIEncoder`` options)."""
    return list(run_encoder(CUIEncoder(**options), messages))


def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """``agent-stream convert --to cui [--sse]``."""
    enc = CUIEncoder(sse=bool(opt(args, "sse", False)))
    yield from run_encoder(enc, messages)
