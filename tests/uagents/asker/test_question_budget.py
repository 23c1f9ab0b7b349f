"""A question's resend budget: every try even to a peer slow to acknowledge, then a prompt
``lost`` end when nothing ever came back (real agents in one process, on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

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

from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.errors import WarningCode
from agent_stream.uagents import ChatSettings, DrivenClock, StreamingChat
from agent_stream.uagents.asker._delivery import resend_question

# 4 tries within 1 s: 0, 0.1, 0.3, 0.7 s by the policy alone
POLICY = DeliveryPolicy(tries=4, within=1.0, ack_timeout=0.1, max_delay=0.8, jitter=0.0)
TIMEOUT = 20.0


def peer_protocol(got: list[str], ack_after: float | None) -> Protocol:
    """A plain chat peer: records each question received; with ``ack_after``, acknowledges
    every one that many seconds later and answers the first of each msg_id; else swallows
    them (as an endpoint that takes the post and never hands it on)."""
    proto = Protocol(spec=chat_protocol_spec)

    @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        first = str(msg.msg_id) not in got
        got.append(str(msg.msg_id))
        if ack_after is None:
            return
        await asyncio.sleep(ack_after)
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))
        if first:
            await ctx.send(
                sender,
                ChatMessage(content=[TextContent(text="late but here"), EndSessionContent()]),
            )

    @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        pass

    return proto


def asker(pair: Pair, name: str) -> tuple[StreamingChat, Any]:
    chat = StreamingChat(settings=ChatSettings(delivery=POLICY))
    return chat, pair.add(name, chat)


async def test_a_question_nothing_answers_ends_lost_after_its_budget_not_the_timeout(
    pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    got: list[str] = []
    peer = pair.add("question budget swallowing peer", peer_protocol(got, None))
    chat, agent = asker(pair, "question budget asker one")
    caplog.set_level(logging.WARNING, logger="agent_stream.uagents")
    reply = await chat.ask(agent._build_context(), peer.address, "anyone there?", timeout=TIMEOUT)
    await asyncio.wait_for(reply.wait(), 5)
    assert reply.status == "lost"
    assert not reply.completed
    assert reply.ended_at is not None and reply.ended_at - reply.asked_at < 3.0
    assert got == [reply.conversation] * POLICY.tries  # every try was made
    assert reply.question_resends == POLICY.tries - 1
    (warning,) = [w for w in reply.warnings if w.code == WarningCode.QUESTION_UNACKNOWLEDGED]
    assert peer.address in warning.detail
    assert f"after {POLICY.tries} sends" in warning.detail
    assert "its endpoint took every send" in warning.detail
    assert "local_resolver()" in warning.detail
    logged = [r for r in caplog.records if "never acknowledged" in r.getMessage()]
    assert len(logged) == 1


async def test_a_peer_slow_to_acknowledge_still_gets_every_try(pair: Pair) -> None:
    got: list[str] = []
    peer = pair.add("question budget slow swallowing peer", peer_protocol(got, None))
    chat, agent = asker(pair, "question budget asker two")
    chat.client.ack_clock.sample(peer.address, 0.5)  # it lately took 0.5 s: wait 0.8 s (cap)
    reply = await chat.ask(agent._build_context(), peer.address, "anyone there?", timeout=TIMEOUT)
    await asyncio.wait_for(reply.wait(), 10)
    # 0, 0.8, 1.6, 2.4 s: the fixed 1 s budget would have stopped after the second
    assert got == [reply.conversation] * POLICY.tries
    assert reply.status == "lost"
    assert reply.ended_at is not None
    assert 2.4 <= reply.ended_at - reply.asked_at < 6.0  # and the last one's 0.8 s wait


async def test_an_acknowledgement_later_than_the_policys_budget_is_still_waited_for(
    pair: Pair,
) -> None:
    got: list[str] = []
    peer = pair.add("question budget slow acknowledging peer", peer_protocol(got, 2.0))
    chat, agent = asker(pair, "question budget asker three")
    chat.client.ack_clock.sample(peer.address, 0.5)
    started = time.monotonic()
    reply = await chat.ask(agent._build_context(), peer.address, "take your time", timeout=TIMEOUT)
    await asyncio.wait_for(reply.wait(), 10)
    assert reply.status == "completed", reply.warnings
    assert reply.acknowledged
    assert reply.text() == "late but here"
    assert time.monotonic() - started >= 2.0
    assert not [w for w in reply.warnings if w.code == WarningCode.QUESTION_UNACKNOWLEDGED]


async def test_the_stretched_budget_is_bounded_and_says_whether_it_was_spent() -> None:
    # On a driven clock: each resend waits the peer's pace (9 s, capped at max_delay 0.15 s)
    # instead of the policy's, so every try is made and the budget stretches, exactly.
    policy = DeliveryPolicy(tries=3, within=0.2, ack_timeout=0.05, max_delay=0.15, jitter=0.0)
    question = ChatMessage(content=[TextContent(text="hi")])
    clock = DrivenClock(start=0.0)
    sends: list[float] = []

    async def send(chat: ChatMessage) -> tuple[bool, str]:
        sends.append(clock.now())
        return True, "delivered"

    spending = asyncio.create_task(
        resend_question(send, question, lambda: False, policy, lambda: None, lambda: 9.0, clock)
    )
    took = await clock.run_until(spending.done, step=0.01, limit=5.0)
    assert spending.result() is True  # spent, never answered
    assert sends == pytest.approx([0.15, 0.30])  # every resend, at the peer's (capped) pace
    assert took <= policy.within + policy.tries * policy.max_delay
    answered = await resend_question(
        send, question, lambda: True, policy, lambda: None, None, clock
    )
    assert answered is False and len(sends) == 2


async def test_the_idle_timeout_also_bounds_the_wait_for_an_acknowledgement(pair: Pair) -> None:
    got: list[str] = []
    peer = pair.add("question budget swallowing peer three", peer_protocol(got, None))
    slow = DeliveryPolicy(tries=5, within=20.0, ack_timeout=2.0, max_delay=8.0, jitter=0.0)
    chat = StreamingChat(settings=ChatSettings(delivery=slow))
    agent = pair.add("question budget asker three", chat)
    reply = await chat.ask(
        agent._build_context(), peer.address, "anyone?", timeout=TIMEOUT, idle_timeout=1.0
    )
    await asyncio.wait_for(reply.wait(), 6)  # not the 20 s of the resend budget
    assert reply.status == "lost"
    assert reply.ended_at is not None and reply.ended_at - reply.asked_at < 4.0
    (warning,) = [w for w in reply.warnings if w.code == WarningCode.QUESTION_UNACKNOWLEDGED]
    assert "local_resolver()" in warning.detail
