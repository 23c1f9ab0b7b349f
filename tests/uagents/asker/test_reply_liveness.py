"""A Reply's liveness (agent_stream.uagents.asker._client): silence ends a reply ``lost`` only when the
responder sends keepalives, which it does for a tagged question. A plain question (an untagged
ChatMessage) from an agent_stream asker still gets a tagged reply but no keepalives: a reply
stalled by redelivery under faults was ended ``lost`` while it was being delivered."""

from __future__ import annotations

import asyncio

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.adapters.chat.wire import OP_KEEPALIVE, control
from agent_stream.uagents.asker._client import ChatClient, Reply, build_question

PEER = "agent1peer"
POLICY = DeliveryPolicy(idle_timeout=0.2)


async def _after_silence(reply: Reply) -> str | None:
    client = ChatClient()
    client.add(reply)
    try:
        reply.feed(control(OP_KEEPALIVE, reply.conversation))  # something came
        assert reply.tagged  # the reply is tagged, whatever the question was
        await asyncio.sleep(0.6)  # three idle timeouts of silence
        return reply.status
    finally:
        client.cancel_all()


async def test_a_tagged_question_whose_reply_goes_silent_is_lost() -> None:
    question = build_question("hello")
    assert await _after_silence(Reply(PEER, question, delivery=POLICY)) == "lost"


async def test_a_plain_question_whose_reply_goes_silent_is_not_lost() -> None:
    question = ChatMessage(content=[TextContent(text="hello")])
    assert await _after_silence(Reply(PEER, question, delivery=POLICY)) is None


async def test_a_plain_question_is_watched_when_an_idle_timeout_is_given() -> None:
    question = ChatMessage(content=[TextContent(text="hello")])
    reply = Reply(PEER, question, delivery=POLICY, idle_timeout=0.2)
    assert await _after_silence(reply) == "lost"


async def test_messages_that_arrived_keep_a_reply_alive_before_they_are_handled() -> None:
    # The inbox guard reports each ChatMessage as it arrives; handled later (a backed-up
    # inbox), it is still a sign of life from the responder when it came.
    client = ChatClient()
    reply = Reply(PEER, build_question("hello"), delivery=POLICY)
    client.add(reply)
    other = Reply("agent1other", build_question("hello"), delivery=POLICY)
    client.add(other)
    try:
        alive = control(OP_KEEPALIVE, reply.conversation)
        reply.feed(alive)
        other.feed(control(OP_KEEPALIVE, other.conversation))
        for _ in range(6):  # 0.6 s: three idle timeouts, with something arriving all along
            client.arrived(PEER, alive)
            client.arrived(PEER, control(OP_KEEPALIVE, other.conversation))  # not its peer's
            client.arrived(PEER, ChatMessage(content=[TextContent(text="untagged")]))
            await asyncio.sleep(0.1)
        assert reply.status is None
        assert other.status == "lost"  # what arrived was not from its responder
        await asyncio.sleep(0.6)  # then nothing arrives: lost
        assert reply.status == "lost"
    finally:
        client.cancel_all()
