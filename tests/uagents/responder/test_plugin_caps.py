"""The plugin's caps: question size, replies at once per sender and in all. Each request over a
cap is answered with a readable error reply, never silence; the agent goes on answering."""

from __future__ import annotations

import asyncio

from caps_helpers import Gate, asker, error_of
from inprocess_agents import Pair
from uagents import Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    TextContent,
    chat_protocol_spec,
)

from agent_stream.uagents import ChatSettings, StreamingChat


async def test_a_question_over_the_size_cap_gets_an_error_reply(pair: Pair) -> None:
    gate = Gate()
    gate.open.set()
    server = pair.add(
        "caps size server",
        StreamingChat(gate, settings=ChatSettings().with_caps(max_question_bytes=1000)),
    )
    chat, ctx = await asker(pair, "size")
    big = await chat.ask(ctx, server.address, "é" * 600, timeout=5)  # 1,200 bytes
    await big.wait(6)
    assert big.status == "error" and not big.completed
    err = error_of(big)
    assert err["code"] == "question_too_large"
    size = int(err["message"].split()[3])  # "The question is N bytes; ..."
    assert size >= 1200 and "of at most 1000 bytes" in err["message"]
    assert gate.asked == []  # the responder never saw it
    small = await chat.ask(ctx, server.address, "short", timeout=5)
    await small.wait(6)
    assert small.completed and small.text() == "Answer to short."


async def test_over_the_per_sender_cap_a_question_gets_busy_and_others_go_on(pair: Pair) -> None:
    gate = Gate()
    server = pair.add(
        "caps sender server",
        StreamingChat(gate, settings=ChatSettings().with_caps(max_replies_per_sender=2)),
    )
    chat, ctx = await asker(pair, "flooder")
    first = [await chat.ask(ctx, server.address, f"q{i}", timeout=5) for i in range(2)]
    while len(gate.asked) < 2:
        await asyncio.sleep(0.01)
    third = await chat.ask(ctx, server.address, "q2", timeout=5)
    await third.wait(6)
    assert third.status == "error" and error_of(third)["code"] == "busy"
    assert "at most 2 of yours" in error_of(third)["message"]
    other_chat, other_ctx = await asker(pair, "other")  # another sender is not refused
    other = await other_chat.ask(other_ctx, server.address, "mine", timeout=5)
    gate.open.set()
    for r in [*first, other]:
        await r.wait(6)
        assert r.completed
    again = await chat.ask(ctx, server.address, "later", timeout=5)  # the cap was released
    await again.wait(6)
    assert again.completed and gate.asked == ["q0", "q1", "mine", "later"]


async def test_over_the_total_cap_a_new_sender_gets_busy(pair: Pair) -> None:
    gate = Gate()
    server = pair.add(
        "caps total server", StreamingChat(gate, settings=ChatSettings().with_caps(max_replies=2))
    )
    open_replies = []
    for name in ("a", "b"):
        chat, ctx = await asker(pair, f"total {name}")
        open_replies.append(await chat.ask(ctx, server.address, name, timeout=5))
    while len(gate.asked) < 2:
        await asyncio.sleep(0.01)
    chat, ctx = await asker(pair, "total c")
    refused = await chat.ask(ctx, server.address, "c", timeout=5)
    await refused.wait(6)
    assert refused.status == "error" and error_of(refused)["code"] == "busy"
    assert "as many questions as it can (2)" in error_of(refused)["message"]
    gate.open.set()
    for r in open_replies:
        await r.wait(6)
        assert r.completed


async def test_a_plain_peer_reads_the_refusal_as_text(pair: Pair) -> None:
    """A peer written with uagents alone (no tags) gets "Error (code): ..." as TextContent."""
    server = pair.add(
        "caps plain server",
        StreamingChat(Gate(), settings=ChatSettings().with_caps(max_question_bytes=10)),
    )
    texts: list[str] = []
    proto = Protocol(spec=chat_protocol_spec)

    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        texts.append(msg.text())

    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        pass

    proto.on_message(ChatMessage)(on_chat)
    proto.on_message(ChatAcknowledgement)(on_ack)
    plain = pair.add("caps plain peer", proto)
    await plain._build_context().send(
        server.address, ChatMessage(content=[TextContent(text="a question longer than ten bytes")])
    )
    for _ in range(200):
        if "".join(texts):
            break
        await asyncio.sleep(0.01)
    assert "".join(texts).startswith("Error (question_too_large): The question is 32 bytes")
