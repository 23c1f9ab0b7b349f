"""A chat-protocol payload is parsed once: uagents' own parse of it returns the model the inbox
guard built (the same value uagents' parse would build), for the guarded agent only; payloads
the guard refuses are not kept; what is not kept any more is parsed by uagents as before."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from inprocess_agents import Pair
from uagents import Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    MetadataContent,
    TextContent,
    chat_protocol_spec,
)
from uagents_core.models import Model

from agent_stream.uagents import _compat
from agent_stream.uagents._protection import guard_of
from agent_stream.uagents.transport._parsed_payloads import Handover, base_of

CHAT = Model.build_schema_digest(ChatMessage)
ACK = Model.build_schema_digest(ChatAcknowledgement)


def recording_protocol(got: list[Any]) -> Protocol:
    proto = Protocol(spec=chat_protocol_spec)

    @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        got.append(msg)
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))

    @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        got.append(msg)

    return proto


async def until(check: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_chat_messages_and_acks_are_parsed_once_for_the_guarded_agent_only() -> None:
    pair = Pair()
    try:
        got_server: list[Any] = []
        got_client: list[Any] = []
        server = pair.add("handover server seed", recording_protocol(got_server))
        client = pair.add("handover client seed", recording_protocol(got_client))
        sent = [
            ChatMessage(
                content=[MetadataContent(metadata={"n": str(i)}), TextContent(text=f"hi {i}")]
            )
            for i in range(5)
        ]
        ctx = _compat.build_context(client)
        for msg in sent:
            await ctx.send(server.address, msg)
        await until(lambda: len(got_server) == 5 and len(got_client) == 5)
        # the handlers got what was sent, as chat models
        assert [type(m) for m in got_server] == [ChatMessage] * 5
        assert [m.dict() for m in got_server] == [m.dict() for m in sent]
        assert [type(m) for m in got_client] == [ChatAcknowledgement] * 5
        assert [m.acknowledged_msg_id for m in got_client] == [m.msg_id for m in sent]
        # ... and uagents did not parse them again
        for agent, digest in ((server, CHAT), (client, ACK)):
            guard = guard_of(agent)
            assert guard is not None
            assert guard.handover.taken == 5
            assert len(guard.handover) == 0
            model = _compat.models_of(agent)[digest]
            assert model is not base_of(model)
            assert issubclass(model, base_of(model))
        # nothing outside those two agents' own tables changed
        assert "parse_raw" not in vars(ChatMessage)
        assert "parse_raw" not in vars(ChatAcknowledgement)
        assert _compat.models_of(server)[ACK] is ChatAcknowledgement  # it got no ack
    finally:
        await pair.close()


async def test_a_refused_payload_is_not_kept() -> None:
    pair = Pair()
    try:
        got: list[Any] = []
        server = pair.add("handover refused seed", recording_protocol(got))
        guard = guard_of(server)
        assert guard is not None
        for bad in ('{"content": [{"type": "text"}]}', "not json", '{"content": [], "x": 1}'):
            await guard.handle_message("agent1sender", CHAT, bad, uuid.uuid4())
        assert guard.stats["dropped"] == 3
        assert len(guard.handover) == 0
    finally:
        await pair.close()


def test_what_is_no_longer_kept_is_parsed_as_uagents_parses_it() -> None:
    handover = Handover(limit=2)
    model = handover.model_for(ChatMessage)
    chats = [ChatMessage(content=[TextContent(text=str(i))]) for i in range(3)]
    payloads = [c.json() for c in chats]
    for chat, payload in zip(chats, payloads, strict=True):
        handover.put(payload, chat)
    assert len(handover) == 2  # the oldest went
    first = model.parse_raw(payloads[0])  # parsed afresh
    assert type(first) is ChatMessage and first == chats[0]
    assert model.parse_raw(payloads[2]) is chats[2]  # taken
    assert handover.taken == 1
    assert handover.model_for(ChatMessage) is model


U4 = "8d4c1a56-3c2f-4b8e-9f51-0b6a3c7d2e10"
ITEMS = [
    {"type": "text", "text": "hi"},
    {"type": "text", "text": ""},
    {"type": "metadata", "metadata": {"a": "b", "n": 1}},
    {"type": "start-session"},
    {"type": "end-session"},
    {"type": "start-stream", "stream_id": U4},
    {"type": "end-stream", "stream_id": U4},
    {"type": "resource", "resource_id": U4, "resource": {"uri": "u", "metadata": {}}},
    {"type": "resource", "resource_id": U4, "resource": [{"uri": "u", "metadata": {"k": "v"}}]},
]


def test_the_model_handed_over_is_the_one_uagents_would_build() -> None:
    async def run() -> None:
        pair = Pair()
        try:
            agent = pair.add("handover equal seed", recording_protocol([]))
            guard = guard_of(agent)
            assert guard is not None

            @settings(max_examples=200, deadline=None)
            @given(
                st.lists(st.sampled_from(ITEMS), max_size=5),
                st.sampled_from(["2026-01-01T00:00:00+00:00", "2026-01-01T12:30:00Z", 1.5e9]),
            )
            def same(items: list[dict[str, Any]], ts: Any) -> None:
                payload = json.dumps({"timestamp": ts, "msg_id": U4, "content": items})
                reason, parsed = guard._inspect(CHAT, payload)
                assert reason is None
                expected = ChatMessage.parse_raw(payload)
                assert type(parsed) is ChatMessage
                assert parsed.dict() == expected.dict()
                assert parsed.json() == expected.json()

            same()
        finally:
            await pair.close()

    asyncio.run(run())
