"""A reply waits for its asker's acknowledgement as long as that asker has lately needed before
sending a ChatMessage again (RFC 6298's estimator, Karn's rule), within the policy's bounds."""

from __future__ import annotations

import asyncio

from inprocess_agents import Pair

from agent_stream.adapters.chat.ack_clock import AckClock
from agent_stream.adapters.chat.delivery import DeliveryPolicy, Redelivery
from agent_stream.uagents import StreamingChat
from agent_stream.uagents._request import ChatRequest
from agent_stream.writer import StreamWriter

# a budget long enough that no wait is cut to its share of it
POLICY = DeliveryPolicy(ack_timeout=1.0, max_delay=8.0, jitter=0.0, within=600.0, tries=9)
PEER = "agent1" + "q" * 59


def redelivery(clock: AckClock) -> Redelivery[str, str]:
    return Redelivery(POLICY, peer_acks=True, timer=clock.of(PEER))


def test_a_chatmessage_to_a_slow_asker_waits_its_time_before_going_again() -> None:
    clock = AckClock()
    clock.sample(PEER, 1.0)  # this asker lately acknowledged after 1 s: wait 1 + 4 * 0.5 s
    rd = redelivery(clock)
    rd.sent("m", "chat", True, now=100.0)
    assert rd.due(101.5) == []  # the fixed 1 s would have sent it again here
    assert rd.due(103.0) == [("m", "chat")]


def test_the_wait_stays_within_the_policys_bounds() -> None:
    quick, slow = AckClock(), AckClock()
    quick.sample(PEER, 0.01)
    slow.sample(PEER, 60.0)
    for clock, expected in ((quick, POLICY.ack_timeout), (slow, POLICY.max_delay)):
        rd = redelivery(clock)
        rd.sent("m", "chat", True, now=0.0)
        assert rd.next_deadline == expected
    rd = Redelivery[str, str](POLICY, peer_acks=True)  # no clock: the policy's timeout
    rd.sent("m", "chat", True, now=0.0)
    assert rd.next_deadline == POLICY.ack_timeout


def test_only_what_was_acknowledged_after_one_send_teaches_the_clock() -> None:
    clock = AckClock()
    rd = redelivery(clock)
    rd.sent("resent", "a", True, now=0.0)
    assert rd.due(1.0) == [("resent", "a")]
    rd.sent("resent", "a", True, now=1.0)
    assert rd.acknowledged("resent", now=1.2)
    assert clock.patience(PEER) == 0.0  # which send it answers is unknown (Karn)
    rd.sent("failed", "b", False, now=2.0)  # the transport refused it: no round trip
    assert rd.acknowledged("failed", now=2.5)
    assert clock.patience(PEER) == 0.0
    rd.sent("once", "c", True, now=3.0)
    assert rd.acknowledged("once", now=3.4)
    assert abs(clock.patience(PEER) - 3 * 0.4) < 1e-9
    assert not rd.acknowledged("once", now=3.5)  # again: nothing waited, nothing learnt
    assert abs(clock.patience(PEER) - 3 * 0.4) < 1e-9


async def respond(request: ChatRequest, out: StreamWriter) -> None:
    for i in range(3):
        await out.text(f"Sentence number {i} of the answer. ")
        await asyncio.sleep(0.05)


async def test_a_responder_learns_its_askers_acknowledgement_time_from_a_reply(pair: Pair) -> None:
    chat = StreamingChat(respond)
    server = pair.add("reply ack clock server", chat)
    asker_chat = StreamingChat()
    asker = pair.add("reply ack clock asker", asker_chat)
    assert chat.delivery.ack_clock.patience(asker.address) == 0.0
    reply = await asker_chat.ask(asker._build_context(), server.address, "hello")
    await asyncio.wait_for(reply.wait(), 10)
    assert reply.completed
    for _ in range(100):  # the last acknowledgements arrive just after the reply ends
        if chat.delivery.ack_clock.patience(asker.address) > 0.0:
            break
        await asyncio.sleep(0.02)
    assert 0.0 < chat.delivery.ack_clock.patience(asker.address) < 5.0
    assert chat.delivery.ack_clock.patience(server.address) == 0.0  # per asker
