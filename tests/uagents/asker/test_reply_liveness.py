"""A Reply's liveness (agent_stream.uagents.asker._client): silence ends a reply ``lost`` only when the
responder sends keepalives, which it does for a tagged question. A plain question (an untagged
ChatMessage) from an agent_stream asker still gets a tagged reply but no keepalives: a reply
stalled by redelivery under faults was ended ``lost`` while it was being delivered.

Time is a DrivenClock: each silence is exactly as long as it says, with no real sleep."""

from __future__ import annotations

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.adapters.chat.wire import OP_KEEPALIVE, control
from agent_stream.uagents import DrivenClock
from agent_stream.uagents.asker._client import ChatClient, Reply, build_question

PEER = "agent1peer"
IDLE = 0.25
POLICY = DeliveryPolicy(idle_timeout=IDLE)


async def _after_silence(question: ChatMessage, **kw: float) -> tuple[str | None, float | None]:
    clock = DrivenClock(start=0.0)
    client = ChatClient(clock=clock)
    reply = Reply(PEER, question, delivery=POLICY, clock=clock, **kw)
    client.add(reply)
    try:
        reply.feed(control(OP_KEEPALIVE, reply.conversation))  # something came, at 0
        assert reply.tagged  # the reply is tagged, whatever the question was
        await clock.advance(IDLE * 3)  # three idle timeouts of silence
        return reply.status, reply.ended_at
    finally:
        client.cancel_all()


async def test_a_tagged_question_whose_reply_goes_silent_is_lost() -> None:
    status, ended_at = await _after_silence(build_question("hello"))
    assert status == "lost" and ended_at == IDLE  # at the first idle timeout


async def test_a_plain_question_whose_reply_goes_silent_is_not_lost() -> None:
    status, _ = await _after_silence(ChatMessage(content=[TextContent(text="hello")]))
    assert status is None


async def test_a_plain_question_is_watched_when_an_idle_timeout_is_given() -> None:
    question = ChatMessage(content=[TextContent(text="hello")])
    status, ended_at = await _after_silence(question, idle_timeout=IDLE)
    assert status == "lost" and ended_at == IDLE


async def test_messages_that_arrived_keep_a_reply_alive_before_they_are_handled() -> None:
    # The inbox guard reports each ChatMessage as it arrives; handled later (a backed-up
    # inbox), it is still a sign of life from the responder when it came.
    clock = DrivenClock(start=0.0)
    client = ChatClient(clock=clock)
    reply = Reply(PEER, build_question("hello"), delivery=POLICY, clock=clock)
    client.add(reply)
    other = Reply("agent1other", build_question("hello"), delivery=POLICY, clock=clock)
    client.add(other)
    try:
        alive = control(OP_KEEPALIVE, reply.conversation)
        reply.feed(alive)
        other.feed(control(OP_KEEPALIVE, other.conversation))
        for _ in range(6):  # 0.75 s: three idle timeouts, with something arriving all along
            client.arrived(PEER, alive)
            client.arrived(PEER, control(OP_KEEPALIVE, other.conversation))  # not its peer's
            client.arrived(PEER, ChatMessage(content=[TextContent(text="untagged")]))
            await clock.advance(IDLE / 2)
        assert reply.status is None
        assert other.status == "lost" and other.ended_at == IDLE  # not from its responder
        last_heard = clock.now() - IDLE / 2
        await clock.advance(IDLE * 3)  # then nothing arrives: lost, one idle timeout later
        assert reply.status == "lost" and reply.ended_at == last_heard + IDLE
    finally:
        client.cancel_all()
