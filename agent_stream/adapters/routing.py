"""Pick the wire by the client's ``accept`` (spec 002's routing table), as a sink or a writer.

| accept                              | format   | encoder          | content type              |
| ----------------------------------- | -------- | ---------------- | ------------------------- |
| ``standard``                        | openai   | OpenAIEncoder    | text/event-stream         |
| ``cui-web``                         | cui      | CUIEncoder (SSE) | text/event-stream         |
| ``cui-native``, ``cui-desktop``     | cui      | CUIEncoder       | application/x-ndjson      |
| ``agui``                            | agui     | AGUIEncoder      | text/event-stream         |
| ``channels``                        | channels | ChannelsEncoder  | application/x-ndjson      |
| ``aisdk``                           | aisdk    | AISDKEncoder     | text/event-stream (*)     |

The format names themselves (``openai``, ``cui``, ``agui``, ``channels``) are accepted too.
(*) The AI SDK UI stream also wants the response header ``aisdk.HEADERS``
(``x-vercel-ai-ui-message-stream: v1``).
``encoder_for`` gives the encoder (wire objects), ``frame_for`` how its objects become text. The
sink is the only part here that awaits anything: it hands each piece of wire text to ``write``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from agent_stream.adapters.framing import Encoder, Framed
from agent_stream.errors import WireError
from agent_stream.message import Message
from agent_stream.writer import StreamWriter

__all__ = ["ACCEPT", "Encoder", "WireSink", "content_type", "encoder_for",
           "format_for", "frame_for", "sink_for", "writer_for"]

ACCEPT: dict[str, str] = {
    "standard": "openai",
    "cui-web": "cui",
    "cui-native": "cui",
    "cui-desktop": "cui",
    "agui": "agui",
    "channels": "channels",
}
_FORMATS = ("openai", "cui", "agui", "channels", "aisdk")
_OPTIONS = {
    "openai": ("model", "include_usage", "completion_id", "created", "tool_calls"),
    "cui": (),
    "agui": ("thread_id", "run_id"),
    "channels": ("channels",),
    "aisdk": ("message_id",),
}
_ALL_OPTIONS = frozenset(o for opts in _OPTIONS.values() for o in opts) | {"sse"}  # sse: cui

Write = Callable[[str], Any]  # sync (e.g. sys.stdout.write) or async (a response's write)


def format_for(accept: str | None) -> str:
    """The wire format for an ``accept`` value (None or "" means ``standard``)."""
    key = (accept or "standard").strip().lower()
    if key in ACCEPT:
        return ACCEPT[key]
    if key in _FORMATS:
        return key
    raise WireError(f"unknown accept {accept!r}; known: {', '.join([*ACCEPT, *_FORMATS])}")


def _cui_sse(accept: str | None, sse: bool | None) -> bool:
    return sse if sse is not None else (accept or "").strip().lower() == "cui-web"


def content_type(accept: str | None, *, sse: bool | None = None) -> str:
    """The HTTP content type of what the selected encoder writes."""
    fmt = format_for(accept)
    if fmt == "cui":
        return "text/event-stream" if _cui_sse(accept, sse) else "application/x-ndjson"
    return "application/x-ndjson" if fmt == "channels" else "text/event-stream"


def frame_for(accept: str | None = "standard", *, sse: bool | None = None
              ) -> Callable[[Any], str]:
    """How the wire objects of ``encoder_for(accept)`` become text (SSE, or JSON lines).

    ``sse`` matters for cui only (default: SSE for cui-web, JSON lines for the others).
    """
    fmt = format_for(accept)
    if fmt == "openai":
        from agent_stream.adapters.openai import frame_sse
        return frame_sse
    if fmt == "cui":
        from agent_stream.adapters import cui
        return cui.frame_sse if _cui_sse(accept, sse) else cui.frame_jsonl
    if fmt == "agui":
        from agent_stream.adapters import agui
        return agui.frame_sse
    if fmt == "aisdk":
        from agent_stream.adapters.aisdk import frame_sse
        return frame_sse
    from agent_stream.adapters.channels import frame_jsonl
    return frame_jsonl


def encoder_for(accept: str | None = "standard", **options: Any) -> Encoder[Any]:
    """A fresh encoder of wire objects for ``accept``; options of other formats are ignored.

    openai: model, include_usage, completion_id, created, tool_calls; cui: sse (a framing
    option, see ``frame_for``); agui: thread_id, run_id; channels: channels; aisdk:
    message_id. Unknown option names raise TypeError.
    """
    unknown = set(options) - _ALL_OPTIONS
    if unknown:
        raise TypeError(f"unknown encoder option(s): {', '.join(sorted(unknown))}")
    fmt = format_for(accept)
    mine = {k: v for k, v in options.items() if k in _OPTIONS[fmt] and v is not None}
    if fmt == "openai":
        from agent_stream.adapters.openai import OpenAIEncoder
        return OpenAIEncoder(**mine)
    if fmt == "cui":
        from agent_stream.adapters.cui import CUIEncoder
        return CUIEncoder()
    if fmt == "agui":
        from agent_stream.adapters.agui import AGUIEncoder
        return AGUIEncoder(**mine)
    if fmt == "aisdk":
        from agent_stream.adapters.aisdk import AISDKEncoder
        return AISDKEncoder(**mine)
    from agent_stream.adapters.channels import ChannelsEncoder
    return ChannelsEncoder(**mine)


class WireSink:
    """An async Message sink (for StreamWriter) that writes the ``accept`` wire through ``write``.

    ``close()`` ends the wire (finish chunk, RUN_FINISHED, stream.end ...) when the Messages did
    not; a StreamWriter's stream_end already does, so with ``writer_for`` it is a no-op.
    """

    def __init__(self, accept: str | None, write: Write, **options: Any) -> None:
        self.accept = accept or "standard"
        self.format = format_for(accept)
        self.content_type = content_type(accept, sse=options.get("sse"))
        self.encoder = Framed(encoder_for(accept, **options),
                              frame_for(accept, sse=options.get("sse")))
        self._write = write

    @property
    def finished(self) -> bool:
        return self.encoder.finished

    async def __call__(self, msg: Message) -> None:
        for text in self.encoder.feed(msg):
            await self._put(text)

    async def close(self, *, status: str | None = None, error: str | None = None) -> None:
        """End the wire if the Messages did not (no status: the stream was cut)."""
        for text in self.encoder.close(status=status, error=error):
            await self._put(text)

    async def _put(self, text: str) -> None:
        result = self._write(text)
        if inspect.isawaitable(result):
            await result


def sink_for(accept: str | None, write: Write, **options: Any) -> WireSink:
    """A sink writing the wire selected by ``accept``."""
    return WireSink(accept, write, **options)


def writer_for(accept: str | None, write: Write, *, request_id: str | None = None,
               trace_id: str | None = None, **options: Any) -> StreamWriter:
    """A StreamWriter whose Messages go out in the wire selected by ``accept``.

    ``async with writer_for("standard", send) as out: ...`` streams OpenAI SSE through ``send``
    (a plain or an async function taking a string);
    the stream's end (also on error or cancellation) ends the wire.
    """
    return StreamWriter(WireSink(accept, write, **options), request_id=request_id,
                        trace_id=trace_id)

