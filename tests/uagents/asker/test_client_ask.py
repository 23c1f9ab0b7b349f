"""ask_with, driven with a plain send function: what the asker sends when it is stopped early."""

from __future__ import annotations

import asyncio
import contextlib
import types
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent

from agent_stream.adapters.chat.wire import OP_CANCEL, TAG_KEY
from agent_stream.uagents.asker._client import ChatClient, ask_with

PEER = "agent1q" + "p" * 58


def ops(sent: list[ChatMessage]) -> list[tuple[str | None, str | None]]:
    """(op, conversation) of every tagged control item sent."""
    out = []
    for chat in sent:
        for item in chat.content:
            if isinstance(item, MetadataContent) and TAG_KEY in item.metadata:
                out.append((item.metadata.get("op"), item.metadata.get("conversation")))
    return out


async def test_an_ask_stopped_while_the_question_is_on_its_way_tells_the_responder() -> None:
    sent: list[ChatMessage] = []
    question_posted = asyncio.Event()

    async def sender(ctx: Any, destination: str, chat: ChatMessage) -> tuple[bool, str]:
        sent.append(chat)
        if len(sent) == 1:  # the question: posted, then its delivery hangs
            question_posted.set()
            await asyncio.Event().wait()
        return True, ""

    client = ChatClient()
    asking = asyncio.create_task(
        ask_with(sender, types.SimpleNamespace(), PEER, "hello?", client, channels={"reasoning"})
    )
    await asyncio.wait_for(question_posted.wait(), 5)
    asking.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asking
    conversation = str(sent[0].msg_id)
    for _ in range(100):  # bounded: the cancel op goes out from the reply's watch task
        if (OP_CANCEL, conversation) in ops(sent[1:]):
            break
        await asyncio.sleep(0.02)
    assert (OP_CANCEL, conversation) in ops(sent[1:])
    client.cancel_all()
