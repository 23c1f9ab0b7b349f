"""An existing Fetch.ai-style chat agent streams after a one-line change; its other protocols keep
working, a plain chat peer still gets the handler's session end, and a second chat protocol is
refused with an error that names the fix."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any
from uuid import uuid4

import pytest
from inprocess_agents import Pair
from uagents import Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    TextContent,
    chat_protocol_spec,
)
from uagents_core.models import Model

from agent_stream.uagents import ChatProtocolConflict, StreamingChat


class Ping(Model):
    text: str


class Pong(Model):
    text: str


def fetch_style_protocols() -> tuple[Protocol, Protocol]:
    """A chat protocol and a protocol of its own, built the way Fetch.ai's docs build them."""
    chat_proto = Protocol(spec=chat_protocol_spec)

    @chat_proto.on_message(ChatMessage)
    async def handle_message(ctx: Context, sender: str, msg: ChatMessage) -> None:
        await ctx.send(
            sender,
            ChatAcknowledgement(
                timestamp=datetime.now(timezone.utc), acknowledged_msg_id=msg.msg_id
            ),
        )
        text = "".join(i.text for i in msg.content if isinstance(i, TextContent))
        await ctx.send(
            sender,
            ChatMessage(
                timestamp=datetime.now(timezone.utc),
                msg_id=uuid4(),
                content=[
                    TextContent(type="text", text=f"You said: {text}"),
                    EndSessionContent(type="end-session"),
                ],
            ),
        )

    @chat_proto.on_message(ChatAcknowledgement)
    async def handle_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    ping_proto = Protocol(name="ping", version="0.1.0")

    @ping_proto.on_message(Ping, replies=Pong)
    async def on_ping(ctx: Context, sender: str, msg: Ping) -> None:
        await ctx.send(sender, Pong(text=msg.text.upper()))

    return chat_proto, ping_proto


async def _until(check: Any, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out waiting")


async def test_an_existing_chat_agent_streams_and_keeps_its_other_protocols(pair: Pair) -> None:
    chat_proto, ping_proto = fetch_style_protocols()
    server = pair.add("retrofit server agent", name="weather")
    server.include(StreamingChat.from_protocol(chat_proto), publish_manifest=True)  # the change
    server.include(ping_proto, publish_manifest=True)

    # A streaming asker: the handler's text arrives as a streamed, completed reply labelled
    # with the agent's name.
    asker_chat = StreamingChat()
    asker = pair.add("retrofit streaming asker", asker_chat)
    reply = await asker_chat.ask(asker._build_context(), server.address, "hello", timeout=10)
    transcript = await reply
    assert reply.completed
    assert reply.text() == "You said: hello"
    assert [b.label for b in transcript.blocks] == ["weather"]

    # A plain chat peer (no agent_stream): the text, and the session end the handler sent.
    got: list[ChatMessage] = []
    plain_proto = Protocol(spec=chat_protocol_spec)

    @plain_proto.on_message(ChatMessage)
    async def plain_in(ctx: Context, sender: str, msg: ChatMessage) -> None:
        got.append(msg)
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))

    @plain_proto.on_message(ChatAcknowledgement)
    async def plain_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    plain = pair.add("retrofit plain peer", plain_proto)
    await plain._build_context().send(
        server.address, ChatMessage(content=[TextContent(type="text", text="hi")])
    )
    await _until(lambda: any(isinstance(i, EndSessionContent) for m in got for i in m.content))
    text = "".join(i.text for m in got for i in m.content if isinstance(i, TextContent))
    assert text == "You said: hi"

    # The agent's own protocol still answers, the uagents way.
    pongs: list[str] = []
    pong_proto = Protocol(name="pong", version="0.1.0")

    @pong_proto.on_message(Pong)
    async def on_pong(ctx: Context, sender: str, msg: Pong) -> None:
        pongs.append(msg.text)

    pinger = pair.add("retrofit pinger", pong_proto)
    await pinger._build_context().send(server.address, Ping(text="ping"))
    await _until(lambda: pongs == ["PING"])


async def test_a_second_chat_protocol_is_refused_naming_the_fix(pair: Pair) -> None:
    chat_proto, _ = fetch_style_protocols()
    agent = pair.add("retrofit twice", chat_proto)
    with pytest.raises(ChatProtocolConflict, match=r"StreamingChat\.from_protocol"):
        agent.include(StreamingChat(), publish_manifest=True)
    other = pair.add("retrofit twice other", StreamingChat())
    with pytest.raises(ChatProtocolConflict, match="already has a chat protocol"):
        other.include(chat_proto)


def test_from_protocol_needs_a_chat_message_handler() -> None:
    bare = Protocol(spec=chat_protocol_spec)
    with pytest.raises(ValueError, match=r"no @on_message\(ChatMessage\) handler"):
        StreamingChat.from_protocol(bare)


def asi_one_style_protocol(block_for: float) -> Protocol:
    """A chat protocol as ASI:One-facing agents write it: acknowledge, the attachments flag, a
    synchronous (loop-blocking) model call, the answer."""
    import time

    from uagents_core.contrib.protocols.chat import MetadataContent

    proto = Protocol(spec=chat_protocol_spec)

    @proto.on_message(ChatMessage)
    async def handle(ctx: Context, sender: str, msg: ChatMessage) -> None:
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))
        await ctx.send(
            sender, ChatMessage(content=[MetadataContent(metadata={"attachments": "true"})])
        )
        time.sleep(block_for)  # a synchronous model call inside the async handler
        await ctx.send(sender, ChatMessage(content=[TextContent(text="The answer.")]))

    @proto.on_message(ChatAcknowledgement)
    async def handle_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    return proto


def plain_asker(pair: Pair, name: str, got: list[tuple[float, Any]]) -> Any:
    """A plain chat peer that records (when, what) for every ChatMessage and acknowledgement."""
    proto = Protocol(spec=chat_protocol_spec)
    loop = asyncio.get_running_loop()

    @proto.on_message(ChatMessage)
    async def plain_in(ctx: Context, sender: str, msg: ChatMessage) -> None:
        got.append((loop.time(), msg))
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))

    @proto.on_message(ChatAcknowledgement)
    async def plain_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        got.append((loop.time(), msg))

    return pair.add(name, proto)


async def test_the_handlers_metadata_reaches_the_asker_and_the_question_is_acknowledged_first(
    pair: Pair,
) -> None:
    from uagents_core.contrib.protocols.chat import MetadataContent

    server = pair.add("retrofit asi-one server")
    server.include(StreamingChat.from_protocol(asi_one_style_protocol(1.0)), publish_manifest=True)
    got: list[tuple[float, Any]] = []
    asker = plain_asker(pair, "retrofit asi-one plain asker", got)
    loop = asyncio.get_running_loop()
    asked = loop.time()
    await asker._build_context().send(server.address, ChatMessage(content=[TextContent(text="hi")]))
    await _until(lambda: any(isinstance(m, ChatMessage) and m.text() for _, m in got))
    (ack_at,) = [t for t, m in got if isinstance(m, ChatAcknowledgement)]
    assert ack_at - asked < 0.5, "acknowledged before the handler blocked the loop for 1 s"
    flags = [
        i.metadata
        for _, m in got
        if isinstance(m, ChatMessage)
        for i in m.content
        if isinstance(i, MetadataContent) and "attachments" in i.metadata
    ]
    assert flags == [{"attachments": "true"}]
    text = "".join(
        i.text
        for _, m in got
        if isinstance(m, ChatMessage)
        for i in m.content
        if isinstance(i, TextContent)
    )
    assert text == "The answer."


async def test_an_acknowledgement_that_cannot_go_holds_the_handler_half_a_second_at_most(
    pair: Pair,
) -> None:
    from agent_stream.uagents._streaming_chat import ACK_FIRST_WAIT

    ran_at: list[float] = []
    loop = asyncio.get_running_loop()
    proto = Protocol(spec=chat_protocol_spec)

    @proto.on_message(ChatMessage)
    async def handle(ctx: Context, sender: str, msg: ChatMessage) -> None:
        ran_at.append(loop.time())
        await ctx.send(sender, ChatMessage(content=[TextContent(text="ok")]))

    @proto.on_message(ChatAcknowledgement)
    async def handle_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    chat = StreamingChat.from_protocol(proto)

    async def hanging(*_args: Any) -> None:  # the asker's endpoint never answers the post
        await asyncio.sleep(30)

    chat._acknowledge = hanging  # type: ignore[method-assign]
    server = pair.add("retrofit server with a hanging asker")
    server.include(chat, publish_manifest=True)
    got: list[tuple[float, Any]] = []
    asker = plain_asker(pair, "retrofit hanging asker", got)
    asked = loop.time()
    await asker._build_context().send(server.address, ChatMessage(content=[TextContent(text="hi")]))
    await _until(lambda: bool(ran_at))
    assert ran_at[0] - asked < ACK_FIRST_WAIT + 0.4
    for task in list(chat._tasks):  # the acknowledgement still "posting"
        task.cancel()
