"""An acknowledgement counts only from the asker of the reply it names: a third agent that
knows (or guesses) a reply's msg_ids cannot stop its redelivery, alone or in a coalesced list."""

from __future__ import annotations

import asyncio
from typing import Any

from inprocess_agents import Pair
from uagents import Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    TextContent,
    chat_protocol_spec,
)

from agent_stream.adapters.chat.acks import ack_for
from agent_stream.adapters.chat.wire import request_tags
from agent_stream.uagents import StreamingChat, _compat
from agent_stream.uagents._request import ChatRequest
from agent_stream.writer import StreamWriter


def silent_asker(got: list[Any]) -> Protocol:
    """Records what reaches it and acknowledges nothing (so the reply waits for its acks)."""
    proto = Protocol(spec=chat_protocol_spec)

    @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        got.append(msg)

    @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        got.append(msg)

    return proto


async def respond(request: ChatRequest, out: StreamWriter) -> None:
    await out.text("An answer. ")
    await asyncio.sleep(5)  # the reply stays open while the test runs


async def until(check: Any, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out")


async def test_another_agent_cannot_acknowledge_an_askers_chatmessages(pair: Pair) -> None:
    chat = StreamingChat(respond)
    server = pair.add("ack owner server seed", chat)
    got: list[Any] = []
    asker = pair.add("ack owner asker seed", silent_asker(got))
    evil = pair.add("ack owner evil seed", silent_asker([]))
    question = ChatMessage(content=[request_tags(), TextContent(text="hi")])
    await _compat.build_context(asker).send(server.address, question)
    await until(lambda: any(isinstance(m, ChatMessage) for m in got))
    await until(lambda: len(chat._in_flight) >= 1)
    keys = sorted(chat._in_flight)
    evil_ctx = _compat.build_context(evil)
    await evil_ctx.send(server.address, ChatAcknowledgement(acknowledged_msg_id=keys[0]))
    await evil_ctx.send(server.address, ack_for([keys[0], *keys]))  # coalesced, tagged
    await asyncio.sleep(0.3)
    assert sorted(chat._in_flight) == keys  # still waiting for the asker's own acks
    await _compat.build_context(asker).send(server.address, ack_for(keys))
    await until(lambda: not set(keys) & set(chat._in_flight))  # the asker's own count
