"""Helpers of the plugin's caps tests (tests/uagents/responder/test_plugin_caps.py and
tests/uagents/transport/test_trusted_caps.py): a responder that answers once released, the
error a refused reply carries, an asker agent."""

from __future__ import annotations

import asyncio
from typing import Any

from inprocess_agents import Pair

from agent_stream.uagents import ChatRequest, Reply, StreamingChat
from agent_stream.writer import StreamWriter


class Gate:
    """A responder that answers once released (so replies stay open as long as a test needs)."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.asked: list[str] = []

    async def __call__(self, request: ChatRequest, out: StreamWriter) -> None:
        self.asked.append(request.text)
        await self.open.wait()
        await out.text(f"Answer to {request.text}.")


def error_of(reply: Reply) -> dict[str, Any]:
    (err,) = [m for m in reply.transcript.messages if m.type == "error"]
    return dict(err.props)


async def asker(pair: Pair, name: str) -> tuple[StreamingChat, Any]:
    chat = StreamingChat()
    agent = pair.add(f"caps asker {name}", chat)
    return chat, agent._build_context()
