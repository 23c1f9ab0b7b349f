"""Command-line glue: `agent-stream convert --to chat` and `agent-stream decode --from chat`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agent_stream.adapters.chat.decoder import ChatDecoder
from agent_stream.adapters.chat.encoder import ChatEncoder
from agent_stream.adapters.chat.parse import parse_chat
from agent_stream.errors import StreamWarning
from agent_stream.message import Message

__all__ = ["cli_decoder", "cli_encode"]


def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """`agent-stream convert --to chat`: one ChatMessage JSON a line, as uagents serialises it.

    Encodes for a recipient that did not declare tag support (streams serialised, thinking
    withheld), the encoder's default chunking, the same ``now`` for every Message (no release on
    time), msg_ids and stream_ids derived from ``--conversation``: the output depends only on the
    input. Every started chat stream is ended at the end of input; stream_end is sent only if the
    input has one.
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
        """Decode one line (raises WireError for a line that is not a valid ChatMessage)."""
        chat = parse_chat(line, max_bytes=self.decoder.limits.max_chat_bytes)
        return self.decoder.feed(self.SENDER, chat, 0.0)

    def finish(self) -> list[Message]:
        """What is still held back, at the end of input."""
        return self.decoder.drain()

    def drain_warnings(self) -> list[StreamWarning]:
        """The decoder's warnings since the last call."""
        return self.decoder.drain_warnings()


def cli_decoder(args: Any) -> _CliDecoder:
    """The line decoder behind `agent-stream decode --from chat` (``args`` is not used)."""
    return _CliDecoder()
