"""Adapting an existing, non-streaming chat handler ``(ctx, sender, msg)`` into a responder.

The handler is the one a Fetch.ai-style agent already has under
``@proto.on_message(ChatMessage)``; it runs unchanged. Its ``ctx.send(sender, ChatMessage(...))``
calls become the streamed reply: text as text, resources as image/audio/video messages, its
EndSessionContent as the end of the session; its acknowledgements are dropped (the plugin
acknowledges every question itself).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    MetadataContent,
    ResourceContent,
    TextContent,
)
from uagents_core.models import Model
from uagents_core.types import DeliveryStatus, MsgStatus

from agent_stream.adapters.chat import ChatDecoder
from agent_stream.writer import StreamWriter

if TYPE_CHECKING:
    from agent_stream.uagents._request import ChatRequest

__all__ = ["wrap_chat_handler"]


class _CapturingContext:
    """A Context stand-in for a non-streaming chat handler: what it sends to the asker becomes
    part of the streamed reply; everything else is delegated to the real context."""

    def __init__(self, request: ChatRequest, out: Any, send: Callable[..., Any]) -> None:
        self._ctx = request.ctx
        self._request = request
        self._asker = request.sender
        self._out = out
        self._forward = send

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    async def send(self, destination: str, message: Model, timeout: int = 30) -> Any:
        def status(detail: str) -> MsgStatus:
            return MsgStatus(
                status=DeliveryStatus.DELIVERED,
                detail=detail,
                destination=destination,
                endpoint="",
                session=None,
            )

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
                elif isinstance(item, EndSessionContent):
                    self._request.end_session()
            # its metadata (ASI:One's attachments flag...) goes to the asker as it was sent
            meta = [item for item in message.content if isinstance(item, MetadataContent)]
            if meta:
                await self._forward(self._ctx, destination, ChatMessage(content=meta))
            return status("streamed by the plugin")
        ok, detail = await self._forward(self._ctx, destination, message)
        return MsgStatus(
            status=DeliveryStatus.DELIVERED if ok else DeliveryStatus.FAILED,
            detail=detail,
            destination=destination,
            endpoint="",
            session=None,
        )


Send = Callable[[Any, str, Model], Awaitable[tuple[bool, str]]]


def wrap_chat_handler(
    handler: Callable[[Any, str, ChatMessage], Awaitable[None]],
    send: Send | None = None,
    *,
    label: str | None = None,
) -> Callable[[ChatRequest, StreamWriter], Awaitable[None]]:
    """A responder from an existing, non-streaming chat handler ``(ctx, sender, msg)``.

    The handler runs in the reply's background task with a context whose ``send`` turns the
    ChatMessages it sends back to the asker into messages of the streamed reply (text as text
    messages, resources as image/audio/video, EndSessionContent ending the session); its
    MetadataContent goes to the asker as it is, in a ChatMessage of its own; its
    acknowledgements are dropped (the plugin acknowledges).

    Args:
        handler: the chat handler, ``async (ctx, sender, msg) -> None``.
        send: how its sends to other agents go out, ``async (ctx, destination, message) ->
            (delivered, detail)``, as :meth:`StreamingChat.send` (None: such sends fail).
        label: the reply block's label (None: the agent's name).

    Returns:
        A responder for :class:`StreamingChat`.
    """

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        async def forward(ctx: Any, destination: str, message: Model) -> tuple[bool, str]:
            if send is None:
                return False, "wrap_chat_handler: no send function given for other agents"
            return await send(ctx, destination, message)

        name = label or _agent_name(request.ctx) or "agent"
        async with out.block("agent", label=name) as b:
            ctx = _CapturingContext(request, b, forward)
            await handler(ctx, request.sender, request.message)

    return respond


def _agent_name(ctx: Any) -> str | None:
    agent = getattr(ctx, "agent", None)  # uagents' AgentRepresentation (public)
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else None
