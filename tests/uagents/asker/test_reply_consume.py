"""Reply.consume: a relay reads each Message once and the reply keeps none it read (the
gateway's memory at a thousand replies); plain iteration still replays from the start."""

from __future__ import annotations

import asyncio

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat import ChatEncoder
from agent_stream.message import Message
from agent_stream.uagents.asker._client import Reply


def _reply_and_chats() -> tuple[Reply, list[ChatMessage]]:
    reply = Reply("agent1peer", ChatMessage(content=[TextContent(text="q")]), timeout=30)
    enc = ChatEncoder(
        reply.conversation,
        tagged=True,
        chunker={"min_chars": 1, "max_chars": 8, "first_chars": None},
    )
    chats: list[ChatMessage] = []
    for i in range(12):
        msg = Message(type="text", props={"content": f"part {i}. "}, delta=True, message_id="M")
        chats += enc.feed(msg, float(i))
    return reply, chats + enc.close(20.0)


async def test_consume_yields_what_iteration_yields_and_keeps_none_read() -> None:
    reply, chats = _reply_and_chats()
    read: list[Message] = []
    held: list[int] = []

    async def reader() -> None:
        async for m in reply.consume():
            read.append(m)
            held.append(len(reply.messages))

    task = asyncio.create_task(reader())
    for chat in chats:
        reply.feed(chat)
        await asyncio.sleep(0)
    await asyncio.wait_for(task, 5)
    assert reply.status == "completed" and reply.messages == []
    assert max(held) <= 1  # what it holds is only what arrived since the last read

    again, chats = _reply_and_chats()
    for chat in chats:
        again.feed(chat)
    replayed = [m async for m in again]  # iterating keeps them: a second reader sees them all
    assert [m async for m in again] == replayed == again.messages
    assert [m.to_json() for m in read] == [m.to_json() for m in replayed] and len(read) > 12
    assert reply.text() == again.text() == "".join(f"part {i}. " for i in range(12))
