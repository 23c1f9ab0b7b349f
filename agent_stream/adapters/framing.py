"""Encoders return typed wire objects; this is how a caller frames them as text.

Every encoder here has one shape (``Encoder``): ``feed(msg)`` and ``close(status=, error=)``
return a list of its wire objects (OpenAI chunks, AG-UI event models, channel event dicts,
Messages), ``finished`` says whether the wire has ended, ``drain_warnings()`` hands over what it
could not carry. ``close()`` without a status means the Messages ended without stream_end: the
stream was cut, and every wire ends it as not completed. Text is made at the edge, by a frame
function: ``sse`` (one Server-Sent Event) or ``jsonl`` (one JSON line), as each adapter's
``frame_*`` functions do for its objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from agent_stream import jsontext
from agent_stream.errors import StreamWarning, WireError
from agent_stream.message import Message

__all__ = ["Encoder", "Framed", "dumps", "frame_all", "jsonl", "run_encoder", "sse", "sse_payload"]

T = TypeVar("T")


dumps = jsontext.dumps  # compact JSON, UTF-8 characters kept as they are (every wire here)


def sse(data: str) -> str:
    """One Server-Sent Event.

    Args:
        data: its data, one line.
    """
    return "data: " + data + "\n\n"


def jsonl(obj: Any) -> str:
    """One JSON line.

    Args:
        obj: a JSON value.
    """
    return dumps(obj) + "\n"


class Encoder(Protocol[T]):
    """Messages in, wire objects out; ``close`` ends whatever the Messages did not."""

    @property
    def finished(self) -> bool: ...

    def feed(self, msg: Message) -> list[T]:
        """The wire objects one Message makes.

        Args:
            msg: the next Message of the stream.
        """
        ...

    def close(self, *, status: str | None = None, error: str | None = None) -> list[T]:
        """The wire objects that end what the Messages left open.

        Args:
            status: how the stream ended, as its stream_end says (None: it was cut).
            error: what went wrong, when it did.
        """
        ...

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call."""
        ...


def run_encoder(enc: Encoder[T], messages: Iterable[Message]) -> Iterator[T]:
    """Every wire object an encoder makes of the Messages, then those of its ``close()``.

    Args:
        enc: the encoder.
        messages: the stream's Messages, in order.

    Yields:
        The wire objects, in order.
    """
    for m in messages:
        yield from enc.feed(m)
    yield from enc.close()


def frame_all(items: Iterable[T], frame: Callable[[T], str]) -> list[str]:
    """The text of each wire object.

    Args:
        items: the wire objects.
        frame: makes one into text (``sse``, ``jsonl`` or a wire's own).
    """
    return [frame(i) for i in items]


class Framed:
    """An encoder whose wire objects come out as text (what a socket or stdout is given).

    Args:
        encoder: the encoder of wire objects.
        frame: makes one wire object into text.
    """

    def __init__(self, encoder: Encoder[Any], frame: Callable[[Any], str]) -> None:
        self.encoder = encoder
        self.frame = frame

    @property
    def finished(self) -> bool:
        return self.encoder.finished

    def feed(self, msg: Message) -> list[str]:
        """The text one Message makes.

        Args:
            msg: the next Message of the stream.
        """
        frame = self.frame
        return [frame(i) for i in self.encoder.feed(msg)]

    def close(self, *, status: str | None = None, error: str | None = None) -> list[str]:
        """The text that ends what the Messages left open.

        Args:
            status: how the stream ended, as its stream_end says (None: it was cut).
            error: what went wrong, when it did.
        """
        frame = self.frame
        return [frame(i) for i in self.encoder.close(status=status, error=error)]

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call."""
        return self.encoder.drain_warnings()


_SSE_FIELDS = ("event", "id", "retry")


def sse_payload(line: str) -> str | None:
    """The data of one line of SSE text, read by a client.

    Args:
        line: one line of the stream.

    Returns:
        The data; None for a line that carries none (blank, a comment, an
        ``event:``/``id:``/``retry:`` field); a bare JSON object line is its own data.

    Raises:
        WireError: anything else.
    """
    s = line.strip()
    if not s or s.startswith(":"):
        return None
    if s.startswith("data:"):
        return s[5:].strip()
    if s.startswith("{"):
        return s
    if s.split(":", 1)[0] in _SSE_FIELDS:
        return None
    raise WireError(f"not an SSE line: {s[:40]!r}")
