"""Adapting an existing, non-streaming chat handler ``(ctx, sender, msg)`` into a responder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    MetadataContent,
    ResourceContent,
    StartSessionContent,
    TextContent,
)
from uagents_core.models import Model
from uagents_core.types import DeliveryStatus, MsgStatus

from agent_stream.adapters.chat import ChatDecoder
from agent_stream.writer import StreamWriter

if TYPE_CHECKING:
    from agent_stream.uagents.plugin import ChatRequest, StreamingChat

__all__ = ["wrap_chat_handler"]


class _CapturingContext:
    """A Context stand-in for a non-streaming chat handler: what it sends to the asker becomes
    part of the streamed reply; everything else is delegated to the real context."""

    def __init__(self, ctx: Any, asker: str, out: StreamWriter, send: Callable[..., Any]) -> None:
        self._ctx = ctx
        self._asker = asker
        self._out = out
        self._forward = send

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    async def send(self, destination: str, message: Model, timeout: int = 30) -> Any:
        def status(detail: str) -> MsgStatus:
            return MsgStatus(status=DeliveryStatus.DELIVERED, detail=detail,
                             destination=destination, endpoint="", session=None)

        if destination == self._asker and isinstance(message, ChatAcknowledgement):
            return status("acknowledged by the streaming plugin")
        if destination == self._asker and isinstance(message, ChatMessage):
            for item in message.content:
                if isinstance(item, TextContent) and item.text:
                    await self._out.text(item.text)
                elif isinstance(item, ResourceContent):
                    dec = ChatDecoder()
                    for m in dec.feed("handler", ChatMessage(content=[item]), 0.0):
                        if m.type != "event":
                            await self._out.send(m.model_copy(update={"message_id": None}))
                elif isinstance(item, (StartSessionContent, EndSessionContent,
                                       MetadataContent)):
                    continue
            return status("streamed by the plugin")
        ok, detail = await self._forward(self._ctx, destination, message)
        return MsgStatus(status=DeliveryStatus.DELIVERED if ok else DeliveryStatus.FAILED,
                         detail=detail, destination=destination, endpoint="", session=None)


def wrap_chat_handler(
    handler: Callable[[Any, str, ChatMessage], Awaitable[None]],
    plugin: StreamingChat | None = None,
) -> Callable[[ChatRequest, StreamWriter], Awaitable[None]]:
    """A responder from an existing, non-streaming chat handler ``(ctx, sender, msg)``.

    The handler runs in the reply's background task with a context whose ``send`` turns the
    ChatMessages it sends back to the asker into messages of the streamed reply (text as text
    messages, resources as image/audio/video); its acknowledgements are dropped (the plugin
    acknowledges). Sends to other agents go out through ``plugin`` when given.
    """

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        async def forward(ctx: Any, destination: str, message: Model) -> tuple[bool, str]:
            if plugin is None:
                return False, "wrap_chat_handler: no plugin given to send to other agents"
            return await plugin._send(ctx, destination, message)

        ctx = _CapturingContext(request._ctx, request.sender, out, forward)
        async with out.block("agent") as b:
            ctx._out = b  # type: ignore[assignment]
            await handler(ctx, request.sender, request.message)

    return respond
