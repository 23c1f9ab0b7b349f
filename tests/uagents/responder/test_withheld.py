"""Reasoning an agent writes but does not share is never silently missing: the reply says which
channels were withheld, and the agent's author is told once why an asker did not get them."""

from __future__ import annotations

import logging

import pytest
from inprocess_agents import Pair

from agent_stream import assemble, thinking
from agent_stream.adapters import ChatDecoder, ChatEncoder
from agent_stream.uagents import ChatRequest, StreamingChat
from agent_stream.writer import StreamWriter, collect


async def think_then_answer(out: StreamWriter) -> None:
    async with out.block("llm") as b:
        await b.send(thinking("Let me think."))
        await b.text("Answer.")


async def _through_chat(channels: set[str]) -> list[str]:
    enc = ChatEncoder("c1", tagged=True, channels=channels)
    chats = []
    for m in await collect(think_then_answer):
        chats += enc.feed(m, 0.0)
    chats += enc.close(1.0)
    dec = ChatDecoder()
    out = [m for c in chats for m in dec.feed("peer", c, 1.0)]
    return assemble(out).withheld


async def test_the_chat_wire_says_which_channels_were_withheld() -> None:
    assert await _through_chat(set()) == ["reasoning"]
    assert await _through_chat({"reasoning"}) == []  # shared: nothing withheld


async def test_the_asker_and_the_author_learn_why_reasoning_is_missing(
    pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        await think_then_answer(out)

    server = pair.add("withheld server agent", StreamingChat(respond))  # shares nothing
    asker_chat = StreamingChat()
    asker = pair.add("withheld asking agent", asker_chat)
    with caplog.at_level(logging.INFO, logger="agent_stream.uagents"):
        for _ in range(2):
            reply = await asker_chat.ask(
                asker._build_context(), server.address, "why?", channels={"reasoning"}, timeout=10
            )
            transcript = await reply
            assert reply.completed and transcript.text() == "Answer."
            assert transcript.withheld == ["reasoning"]
            assert transcript.to_dict()["withheld"] == ["reasoning"]
    told = [r for r in caplog.records if "does not share" in r.getMessage()]
    assert len(told) == 1  # once, not per reply
    assert "channels={'reasoning'}" in told[0].getMessage()
