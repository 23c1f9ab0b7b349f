"""The chat wire as text: ChatMessage JSON, one a line, written and read like every other wire.

:class:`ChatStream` gives :class:`~agent_stream.adapters.chat.ChatEncoder` the shape of every
encoder (``feed(msg)``, ``close(status=, error=)``): a recipient that did not declare tag
support (streams serialised, thinking withheld), the default chunking, one ``now`` for every
Message (no release on time) and msg_ids and stream_ids derived from the conversation, so the
output depends only on the input. :func:`chat_lines` reads the lines back (one sender), each
checked strictly first (:func:`check_chat_line`).
"""

from __future__ import annotations

from typing import Any

from agent_stream import jsontext
from agent_stream.adapters.chat.decoder import ChatDecoder
from agent_stream.adapters.chat.encoder import ChatEncoder
from agent_stream.adapters.chat.parse import parse_chat
from agent_stream.adapters.lines import Checked
from agent_stream.errors import StreamWarning, WarningCode, WireError
from agent_stream.message import Message

__all__ = ["ChatLines", "ChatStream", "chat_lines", "check_chat_line", "frame_jsonl"]

NOW = 0.0  # one clock value for every Message: nothing is released on time


class ChatStream:
    """Messages in, ChatMessages out, deterministically (the ``chat`` wire's encoder).

    ``close()`` ends every started chat stream and sends the reply's stream_end, unless the
    Messages did: with the given status, or without one (the Messages ended without
    stream_end: the stream was cut) status ``error`` saying so, with an ``incomplete`` warning,
    so a peer can tell the reply is not whole.

    Args:
        conversation: the conversation's id the ChatMessages carry.
    """

    INCOMPLETE_TEXT = "the stream ended before it was complete"

    def __init__(self, conversation: str = "agent-stream") -> None:
        self.encoder = ChatEncoder(conversation, deterministic=True)
        self._warnings: list[StreamWarning] = []

    @property
    def finished(self) -> bool:
        return self.encoder.finished

    def feed(self, msg: Message) -> list[Any]:
        """The ChatMessages one Message makes.

        Args:
            msg: the next Message of the stream.
        """
        return self.encoder.feed(msg, NOW)

    def close(self, *, status: str | None = None, error: str | None = None) -> list[Any]:
        """The ChatMessages that end the reply, unless the Messages did.

        Args:
            status: how the stream ended, as its stream_end says (None: it was cut).
            error: what went wrong, when it did.
        """
        if status is None and not self.encoder.finished:
            self._warnings.append(
                StreamWarning(
                    WarningCode.INCOMPLETE,
                    "the stream ended without stream_end; the chat peer "
                    "gets stream_end with status error",
                )
            )
            status, error = "error", error or self.INCOMPLETE_TEXT
        return self.encoder.close(NOW, status=status or "error", error=error)

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call."""
        w, self._warnings = self._warnings, []
        return w


def frame_jsonl(chat: Any) -> str:
    """One ChatMessage as its JSON line, as uagents serialises it.

    Args:
        chat: the ChatMessage.
    """
    text: str = chat.json()
    return text + "\n"


class ChatLines:
    """ChatMessage JSON lines in, Messages out (one sender, ``now`` 0)."""

    SENDER = "cli"

    def __init__(self) -> None:
        self.decoder = ChatDecoder()

    def feed_line(self, line: str) -> list[Message]:
        """Decode one line.

        Args:
            line: one ChatMessage's JSON.

        Raises:
            WireError: the line is not a valid ChatMessage.
        """
        chat = parse_chat(line, max_bytes=self.decoder.limits.max_chat_bytes)
        return self.decoder.feed(self.SENDER, chat, NOW)

    def close(self) -> list[Message]:
        """What is still held back, at the end of input."""
        return self.decoder.close()

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call."""
        return self.decoder.drain_warnings()


def chat_lines() -> Checked:
    """The ``chat`` wire's line decoder: each line checked strictly, then decoded."""
    return Checked(ChatLines(), check_chat_line)


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if v is None:
        return "null"
    if isinstance(v, dict):
        return "an object"
    return "an array" if isinstance(v, list) else "a string"


# Content fields uagents (pydantic v1) would coerce from a number: they must be strings.
_CHAT_STRINGS = {
    "text": ("text",),
    "start-stream": ("stream_id",),
    "end-stream": ("stream_id",),
    "resource": ("resource_id",),
}
_CHAT_JSON_KEYS = ("props", "message_metadata")  # agent_stream metadata values holding JSON


def _string(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise WireError(f"{where} must be a string, got {_kind(value)}")


def check_chat_line(line: str) -> None:
    """Strict JSON, and no number where a ChatMessage has a string (uagents would coerce it).

    agent_stream's JSON-in-metadata values are read strictly too, so none can nest too deep or
    carry NaN; one that is merely not JSON is left to the decoder (a warning there).

    Args:
        line: one ChatMessage's JSON.

    Raises:
        WireError: the line is not so.
    """
    data = jsontext.loads(line, WireError)
    if not isinstance(data, dict):
        return  # parse_chat says what is wrong
    for key in ("msg_id", "timestamp"):
        if key in data:
            _string(data[key], key)
    content = data.get("content")
    if not isinstance(content, list):
        return
    for i, item in enumerate(content):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        for f in _CHAT_STRINGS.get(kind, ()) if isinstance(kind, str) else ():
            if f in item:
                _string(item[f], f"content.{i}.{f}")
        meta = item.get("metadata")
        if kind != "metadata" or not isinstance(meta, dict):
            continue
        for k, v in meta.items():
            _string(v, f"content.{i}.metadata.{k}")
            if k in _CHAT_JSON_KEYS:
                try:
                    jsontext.loads(v, WireError)
                except WireError as exc:
                    if not str(exc).startswith("not JSON"):
                        raise WireError(f"content.{i}.metadata.{k}: {exc}") from None
