"""Driving a responder without agents: a real ChatRequest, the StreamWriter, the assembler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.assemble import Transcript, assemble
from agent_stream.message import BLOCK_START, Message
from agent_stream.uagents._request import ChatRequest, Turn
from agent_stream.writer import StreamWriter, collect


def request(
    text: str,
    history: tuple[tuple[str, str], ...] = (),
    session: str | None = None,
    sender: str = "agent1qtest",
) -> ChatRequest:
    return ChatRequest(
        sender=sender,
        message=ChatMessage([TextContent(text=text)]),
        session=session,
        history=tuple(Turn(r, t) for r, t in history),
    )  # type: ignore[arg-type]


async def run(
    responder: Callable[[Any, StreamWriter], Awaitable[None]], req: ChatRequest
) -> tuple[list[Message], Transcript]:
    msgs = await collect(lambda out: responder(req, out))
    return msgs, assemble(msgs)


def of_type(t: Transcript, type_: str) -> list[Any]:
    return [m for m in t.messages if m.type == type_]


def contents(t: Transcript, type_: str) -> list[str]:
    return [m.props.get("content", "") for m in of_type(t, type_)]


def block_starts(msgs: list[Message]) -> list[dict[str, Any]]:
    return [m.event_data for m in msgs if m.event == BLOCK_START]


def stream_end(msgs: list[Message]) -> dict[str, Any]:
    return msgs[-1].event_data
