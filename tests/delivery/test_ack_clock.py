"""An asker waits for a peer's acknowledgement as long as that peer has lately needed (RFC 6298's
estimator) before sending a question again, and still sends it again when it was lost."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat.ack_clock import AckClock
from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.uagents.asker._delivery import resend_question


def test_the_estimate_follows_rfc_6298() -> None:
    clock = AckClock()
    assert clock.patience("p") == 0.0  # nothing known: the policy's own timeout
    clock.sample("p", 0.8)
    assert abs(clock.patience("p") - (0.8 + 4 * 0.4)) < 1e-9
    clock.sample("p", 0.8)  # the same again: the variation shrinks by a quarter
    assert abs(clock.patience("p") - (0.8 + 4 * 0.3)) < 1e-9
    for _ in range(100):
        clock.sample("p", 0.05)  # a peer that became quick is trusted quick again
    assert clock.patience("p") < 0.1
    assert clock.patience("q") == 0.0  # per peer


def test_bad_samples_are_ignored_and_peers_are_bounded() -> None:
    clock = AckClock(max_peers=3)
    for bad in (-1.0, float("nan"), float("inf"), 1e9):
        clock.sample("p", bad)
    assert clock.patience("p") == 0.0
    for i in range(10):
        clock.sample(f"p{i}", 0.1)
    assert [clock.patience(f"p{i}") > 0 for i in range(10)] == [False] * 7 + [True] * 3


def _question() -> ChatMessage:
    return ChatMessage(msg_id=uuid.uuid4(), content=[TextContent(text="hi")])


async def _resends(
    patience: Callable[[], float] | None, answer_after: float | None, run_for: float
) -> list[float]:
    policy = DeliveryPolicy(ack_timeout=0.1, jitter=0.0, max_delay=2.0, within=5.0)
    start = time.monotonic()
    times: list[float] = []

    async def send(chat: ChatMessage) -> tuple[bool, str]:
        times.append(time.monotonic() - start)
        return True, "delivered"

    def answered() -> bool:
        return answer_after is not None and time.monotonic() - start >= answer_after

    task = asyncio.ensure_future(
        resend_question(send, _question(), answered, policy, lambda: None, patience)
    )
    await asyncio.sleep(run_for)
    task.cancel()
    return times


async def test_a_slow_peer_is_given_its_time_before_the_question_goes_again() -> None:
    quick = await _resends(None, answer_after=0.5, run_for=0.6)
    assert quick and quick[0] < 0.2  # the policy alone: again after ~0.1 s
    patient = await _resends(lambda: 0.6, answer_after=0.5, run_for=0.7)
    assert patient == []  # acknowledged at 0.5 s, within the peer's usual 0.6 s


async def test_a_lost_question_still_goes_again_after_the_peers_time() -> None:
    times = await _resends(lambda: 0.3, answer_after=None, run_for=0.5)
    assert times and 0.28 <= times[0] < 0.45


async def test_acknowledgements_that_slow_meanwhile_postpone_a_due_resend() -> None:
    start = time.monotonic()

    def slower() -> float:  # the peer's acknowledgements grew slow while we waited
        return 0.0 if time.monotonic() - start < 0.05 else 0.5

    times = await _resends(slower, answer_after=None, run_for=0.7)
    assert times and times[0] >= 0.45


async def test_a_send_that_failed_is_retried_on_the_policys_schedule_not_the_peers() -> None:
    policy = DeliveryPolicy(ack_timeout=0.1, retry_delay=0.1, jitter=0.0, within=5.0)
    start = time.monotonic()
    times: list[float] = []

    calls = 0

    async def flaky(chat: ChatMessage) -> tuple[bool, str]:
        nonlocal calls
        calls += 1
        times.append(time.monotonic() - start)
        return calls > 1, "delivered" if calls > 1 else "503"

    task = asyncio.ensure_future(
        resend_question(flaky, _question(), lambda: False, policy, lambda: None, lambda: 1.0)
    )
    await asyncio.sleep(1.6)
    task.cancel()
    # first resend after the peer's 1 s; it failed, so the next goes ~0.1 s later, not 1 s
    assert len(times) >= 2 and times[1] - times[0] < 0.4, times


async def test_an_askers_acknowledged_questions_teach_its_clock_resent_ones_do_not() -> None:
    import types
    from typing import Any

    from agent_stream.uagents.asker._client import ChatClient, ask_with

    peer = "agent1" + "k" * 59

    async def sender(ctx: Any, destination: str, chat: ChatMessage) -> tuple[bool, str]:
        return True, "delivered"

    ctx = types.SimpleNamespace(session=None, agent=types.SimpleNamespace(name="asker"))
    client = ChatClient()
    once = await ask_with(sender, ctx, peer, "first", client, timeout=2.0)
    again = await ask_with(sender, ctx, peer, "second", client, timeout=2.0)
    again.question_resends = 1  # sent twice: which send the ack answers is unknown (Karn)
    await asyncio.sleep(0.05)
    assert client.acknowledged(peer, again.conversation)
    assert client.ack_clock.patience(peer) == 0.0
    assert client.acknowledged(peer, once.conversation)
    assert 0.05 * 3 <= client.ack_clock.patience(peer) < 1.0  # one sample of ~0.05 s: 3x it
    for r in (once, again):
        r.cancel()
