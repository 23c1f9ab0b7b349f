"""Pick the wire by the client's ``accept`` (the spec's routing table), as a sink or a writer.

| accept                              | wire     | encoder          | content type              |
| ----------------------------------- | -------- | ---------------- | ------------------------- |
| ``standard``                        | openai   | OpenAIEncoder    | text/event-stream         |
| ``cui-web``                         | cui      | CUIEncoder (SSE) | text/event-stream         |
| ``cui-native``, ``cui-desktop``     | cui      | CUIEncoder       | application/x-ndjson      |
| ``agui``                            | agui     | AGUIEncoder      | text/event-stream         |
| ``channels``                        | channels | ChannelsEncoder  | application/x-ndjson      |

Every wire's own name is accepted too (``openai``, ``cui``, ``aisdk``, ``a2a``, ``chat`` ...):
the table is :mod:`agent_stream.adapters.registry`, which lists each wire once. The AI SDK
stream also wants its response header (``Wire.headers``). ``encoder_for`` gives the encoder
(wire objects), ``frame_for`` how its objects become text. The sink is the only part here that
awaits anything: it hands each piece of wire text to ``write``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from agent_stream.adapters import registry
from agent_stream.adapters.framing import Encoder, Framed
from agent_stream.adapters.registry import Framing, Wire
from agent_stream.message import Message
from agent_stream.writer import StreamWriter

__all__ = [
    "ACCEPT",
    "Encoder",
    "WireSink",
    "content_type",
    "encoder_for",
    "format_for",
    "frame_for",
    "sink_for",
    "wire_for",
    "writer_for",
]

ACCEPT: dict[str, str] = registry.aliases()
_ALL_OPTIONS = frozenset(o.name for w in registry.wires() for o in w.options) | {"sse"}

Write = Callable[[str], Any]  # sync (e.g. sys.stdout.write) or async (a response's write)


def wire_for(accept: str | None, *, sse: bool | None = None) -> tuple[Wire, Framing]:
    """The wire and framing for ``accept``.

    Args:
        accept: the spec's ``accept`` value or a wire's name (None or "": ``standard``).
        sse: picks the framing of a wire written both ways (cui; None: SSE for cui-web, JSON
            lines for the others); ignored for the rest.

    Raises:
        WireError: an unknown ``accept`` (the message lists the known ones).
    """
    wire, framing = registry.resolve(accept)
    if sse is not None:
        wanted: Framing = "sse" if sse else "jsonl"
        if wanted in wire.frames:
            framing = wanted
    return wire, framing


def format_for(accept: str | None) -> str:
    """The wire's name for an ``accept`` value.

    Args:
        accept: the spec's ``accept`` value or a wire's name (None or "": ``standard``).

    Raises:
        WireError: an unknown ``accept``.
    """
    return registry.resolve(accept)[0].name


def content_type(accept: str | None, *, sse: bool | None = None) -> str:
    """The HTTP content type of what the selected encoder writes.

    Args:
        accept: the spec's ``accept`` value or a wire's name (None or "": ``standard``).
        sse: the framing of a wire written both ways (cui): True SSE, False JSON lines
            (None: its default).
    """
    wire, framing = wire_for(accept, sse=sse)
    return wire.content_type(framing)


def frame_for(accept: str | None = "standard", *, sse: bool | None = None) -> Callable[[Any], str]:
    """How the wire objects of ``encoder_for(accept)`` become text (SSE, or JSON lines).

    Args:
        accept: the spec's ``accept`` value or a wire's name (None or "": ``standard``).
        sse: the framing of a wire written both ways (cui): True SSE, False JSON lines
            (None: its default).
    """
    wire, framing = wire_for(accept, sse=sse)
    return wire.frame(framing)


def encoder_for(accept: str | None = "standard", **options: Any) -> Encoder[Any]:
    """A fresh encoder of wire objects for ``accept``; options of other wires are ignored.

    openai: model, include_usage, completion_id, created, tool_calls; cui: sse (a framing
    option, see ``frame_for``); agui: thread_id, run_id; channels: channels; aisdk:
    message_id, ai_version, approvals, reply_id;
    a2a: task_id, context_id; chat: conversation.

    Args:
        accept: the spec's ``accept`` value or a wire's name (None or "": ``standard``).
        **options: the encoder's options (above); None leaves one to its default.

    Raises:
        TypeError: an option no wire takes.
        WireError: an unknown ``accept``.
    """
    unknown = set(options) - _ALL_OPTIONS
    if unknown:
        raise TypeError(f"unknown encoder option(s): {', '.join(sorted(unknown))}")
    wire = registry.resolve(accept)[0]
    enc: Encoder[Any] = wire.make_encoder(
        **{k: v for k, v in options.items() if k in wire.option_names}
    )
    return enc


class WireSink:
    """An async Message sink (for StreamWriter) that writes the ``accept`` wire through ``write``.

    ``close()`` ends the wire (finish chunk, RUN_FINISHED, stream.end ...) when the Messages did
    not; a StreamWriter's stream_end already does, so with ``writer_for`` it is a no-op.

    Args:
        accept: the spec's ``accept`` value or a wire's name (None or "": ``standard``).
        write: takes each piece of wire text; a plain or an async function.
        **options: the encoder's options (see :func:`encoder_for`) and ``sse``.
    """

    def __init__(self, accept: str | None, write: Write, **options: Any) -> None:
        self.accept = accept or "standard"
        wire, framing = wire_for(accept, sse=options.get("sse"))
        self.format = wire.name
        self.content_type = wire.content_type(framing)
        self.headers = dict(wire.headers)
        self.encoder = Framed(encoder_for(accept, **options), wire.frame(framing))
        self._write = write

    @property
    def finished(self) -> bool:
        return self.encoder.finished

    async def __call__(self, msg: Message) -> None:
        for text in self.encoder.feed(msg):
            await self._put(text)

    async def close(self, *, status: str | None = None, error: str | None = None) -> None:
        """End the wire if the Messages did not.

        Args:
            status: how the stream ended (None: it was cut).
            error: what went wrong, when it did.
        """
        for text in self.encoder.close(status=status, error=error):
            await self._put(text)

    async def _put(self, text: str) -> None:
        result = self._write(text)
        if inspect.isawaitable(result):
            await result


def sink_for(accept: str | None, write: Write, **options: Any) -> WireSink:
    """A sink writing the wire selected by ``accept``.

    Args:
        accept: the spec's ``accept`` value or a wire's name (None or "": ``standard``).
        write: takes each piece of wire text; a plain or an async function.
        **options: the encoder's options (see :func:`encoder_for`) and ``sse``.
    """
    return WireSink(accept, write, **options)


def writer_for(
    accept: str | None,
    write: Write,
    *,
    request_id: str | None = None,
    trace_id: str | None = None,
    **options: Any,
) -> StreamWriter:
    """A StreamWriter whose Messages go out in the wire selected by ``accept``.

    ``async with writer_for("standard", send) as out: ...`` streams OpenAI SSE through ``send``
    (a plain or an async function taking a string);
    the stream's end (also on error or cancellation) ends the wire.

    Args:
        accept: the spec's ``accept`` value or a wire's name (None or "": ``standard``).
        write: takes each piece of wire text; a plain or an async function.
        request_id: the stream's ``request_id``.
        trace_id: the stream's ``trace_id``.
        **options: the encoder's options (see :func:`encoder_for`) and ``sse``.
    """
    return StreamWriter(
        WireSink(accept, write, **options), request_id=request_id, trace_id=trace_id
    )
