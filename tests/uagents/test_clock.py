"""The runtime's one clock (agent_stream.uagents._clock): the DrivenClock's own contract, then the
timing behaviours of the runtime on it — question resends, a reply's liveness and overall
timeout, a responder's keepalives and resends — each asserted as an exact schedule, with no real
sleep. (A few real-time end-to-end tests of each behaviour stay in tests/integration/ and
tests/delivery/.)"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat import ChatEncoder
from agent_stream.adapters.chat.wire import OP_KEEPALIVE, control, seq_span, tagged_items
from agent_stream.uagents import ChatSettings, DeliveryPolicy, DrivenClock, PumpLimits
from agent_stream.uagents.asker._client import ChatClient, Reply
from agent_stream.uagents.asker._delivery import resend_question
from agent_stream.uagents.responder._pump import Outgoing
from agent_stream.writer import StreamWriter

PEER = "agent1peer"
EXACT = DeliveryPolicy(jitter=0.0)  # no spread: every wait is the policy's own number


def _backoff(policy: DeliveryPolicy, first: float) -> list[float]:
    """The waits the policy documents: ``first``, doubled each time, capped at max_delay."""
    waits, wait = [], first
    for _ in range(policy.tries - 1):
        waits.append(min(wait, policy.max_delay))
        wait *= policy.backoff
    return waits


def _schedule(policy: DeliveryPolicy) -> list[float]:
    """The send times the policy documents for a ChatMessage nobody acknowledges: each wait the
    backoff's, cut to an even share of what is left of ``within`` for the tries left."""
    times = [0.0]
    for tries, wait in enumerate(_backoff(policy, policy.ack_timeout), start=1):
        left = policy.tries - tries
        now = times[-1]
        times.append(now + min(wait, (policy.within - now) / (left + 1)))
    return times


def _offsets(times: list[float]) -> list[float]:
    return [round(t - times[0], 6) for t in times]


# -- the clock ------------------------------------------------------------------------------------
async def test_sleeps_and_timers_fire_in_time_order_at_their_exact_times() -> None:
    clock = DrivenClock(start=0.0)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.now()))

    tasks = [asyncio.create_task(sleeper(n, s)) for n, s in (("b", 2.0), ("a", 0.5), ("c", 7.0))]
    clock.call_later(1.0, lambda: woke.append(("timer", clock.now())))
    cancelled = clock.call_later(1.5, lambda: woke.append(("cancelled", clock.now())))
    cancelled.cancel()
    await clock.advance(3.0)
    assert woke == [("a", 0.5), ("timer", 1.0), ("b", 2.0)]
    assert clock.now() == 3.0 and clock.pending == [7.0]
    await clock.advance(10.0)
    assert woke[-1] == ("c", 7.0)
    await asyncio.gather(*tasks)


async def test_wait_for_times_out_at_its_timeout_and_not_before() -> None:
    clock = DrivenClock(start=0.0)
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(clock.wait_for(never, 4.0))
    await clock.advance(3.75)
    assert not waiting.done()
    await clock.advance(0.25)
    with pytest.raises(asyncio.TimeoutError):
        await waiting
    assert never.cancelled()  # what was waited for is not left behind


async def test_wait_for_returns_what_finished_in_time() -> None:
    clock = DrivenClock(start=0.0)
    fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(clock.wait_for(fut, 4.0))
    await clock.advance(1.0)
    fut.set_result("in time")
    assert await waiting == "in time"
    assert clock.pending == []  # its timer went with it


async def test_run_until_gives_up_after_its_limit() -> None:
    clock = DrivenClock()
    with pytest.raises(asyncio.TimeoutError):
        await clock.run_until(lambda: False, step=1.0, limit=5.0)


# -- the asker ------------------------------------------------------------------------------------
def _question() -> ChatMessage:
    return ChatMessage(msg_id=uuid.uuid4(), content=[TextContent(text="hello?")])


async def test_an_unacknowledged_question_is_resent_on_the_policys_backoff_then_given_up() -> None:
    clock = DrivenClock(start=0.0)
    sent_at: list[float] = [clock.now()]  # the first send, made by the caller

    async def send(chat: ChatMessage) -> tuple[bool, str]:
        sent_at.append(clock.now())
        return True, "delivered"

    task = asyncio.create_task(
        resend_question(send, _question(), lambda: False, EXACT, lambda: None, clock=clock)
    )
    await clock.advance(EXACT.within + EXACT.max_delay * 2)
    assert task.done() and task.result() is True  # the budget ran out, still unanswered
    assert _offsets(sent_at) == [round(t, 6) for t in _schedule(EXACT)]
    assert len(sent_at) == EXACT.tries and sent_at[-1] - sent_at[0] <= EXACT.within


async def test_a_question_answered_meanwhile_is_not_resent_again() -> None:
    clock = DrivenClock(start=0.0)
    sends = 0
    answered = False

    async def send(chat: ChatMessage) -> tuple[bool, str]:
        nonlocal sends
        sends += 1
        return True, "delivered"

    task = asyncio.create_task(
        resend_question(send, _question(), lambda: answered, EXACT, lambda: None, clock=clock)
    )
    await clock.advance(EXACT.ack_timeout)  # the first resend goes at the ack timeout
    assert sends == 1
    answered = True
    await clock.advance(60.0)
    assert task.done() and task.result() is False and sends == 1


async def test_a_silent_tagged_reply_is_lost_exactly_its_idle_timeout_after_the_last_word() -> None:
    clock = DrivenClock(start=0.0)
    client = ChatClient(clock=clock)
    reply = Reply(PEER, _question(), idle_timeout=6.0, watch_idle=True, clock=clock)
    client.add(reply)
    await clock.advance(3.0)
    word = control(OP_KEEPALIVE, reply.conversation, high="0")
    routed = client.route(PEER, word, None)  # the responder's keepalive, heard at 3.0
    assert routed is reply
    routed.feed(word)
    await clock.advance(5.75)
    assert not reply.done
    await clock.advance(0.25)
    assert reply.done and reply.status == "lost"
    assert reply.ended_at == 9.0


async def test_a_reply_that_never_ends_stops_at_its_overall_timeout() -> None:
    clock = DrivenClock(start=0.0)
    client = ChatClient(clock=clock)
    reply = Reply(PEER, _question(), timeout=120.0, watch_idle=False, clock=clock)
    client.add(reply)
    await clock.advance(119.5)
    assert not reply.done
    await clock.advance(0.5)
    assert reply.status == "timeout" and reply.ended_at == 120.0
    transcript = await reply.wait(timeout=1.0)  # over: waiting returns at once
    assert transcript is reply.transcript


# -- the responder --------------------------------------------------------------------------------
class Wire:
    """Delivers every ChatMessage and records the driven time it went at."""

    def __init__(self, clock: DrivenClock) -> None:
        self.clock = clock
        self.sent: list[tuple[float, ChatMessage]] = []

    async def __call__(self, chat: ChatMessage) -> tuple[bool, str]:
        self.sent.append((self.clock.now(), chat))
        return True, "delivered"

    def keepalives(self) -> list[float]:
        return [t for t, c in self.sent if next(tagged_items(c), {}).get("op") == OP_KEEPALIVE]

    def data(self) -> list[tuple[float, ChatMessage]]:
        return [(t, c) for t, c in self.sent if seq_span(c) is not None]


async def test_an_open_reply_with_nothing_to_say_sends_a_keepalive_every_period() -> None:
    clock = DrivenClock(start=0.0)
    wire = Wire(clock)
    go_on = asyncio.Event()

    async def thinking(out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("A first sentence. ")
            await go_on.wait()  # the model thinks for a long time

    out = Outgoing(
        PEER,
        "conv",
        ChatEncoder("conv", tagged=True),
        respond=thinking,
        send=wire,
        limits=PumpLimits(),
        delivery=EXACT,
        keepalive=True,
        clock=clock,
    )
    task = out.start()
    await clock.advance(EXACT.keepalive * 3 + 0.5)
    last_data = max(t for t, _ in wire.data())
    period = EXACT.keepalive
    assert wire.keepalives() == [last_data + period * k for k in (1, 2, 3)]
    go_on.set()
    await clock.run_until(task.done, step=0.1)


async def test_a_chat_message_a_peer_never_acknowledges_is_resent_on_the_backoff() -> None:
    clock = DrivenClock(start=0.0)
    wire = Wire(clock)

    async def one_sentence(out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("Only this. ")

    out = Outgoing(
        PEER,
        "conv",
        ChatEncoder("conv", tagged=True),
        respond=one_sentence,
        send=wire,
        limits=PumpLimits(),
        delivery=EXACT,
        peer_acks=True,  # this peer acknowledges: silence is loss
        clock=clock,
    )
    task = out.start()
    await clock.run_until(task.done, step=0.25, limit=EXACT.within * 3)
    firsts: dict[tuple[int, int], list[float]] = {}
    for t, chat in wire.data():
        span = seq_span(chat)
        assert span is not None
        firsts.setdefault(span, []).append(t)
    first = [round(t, 6) for t in _schedule(EXACT)]
    for times in firsts.values():
        sent = _offsets(times)
        # the documented backoff; then, sent one at a time to a peer whose question came (a sign
        # of life), one second budget of as many sends, from the first's end within ``within``
        assert sent[: EXACT.tries] == first
        assert len(sent) == 2 * EXACT.tries
        assert sent[EXACT.tries] == EXACT.within
        assert sent == sorted(set(sent))  # strictly later each time
        assert sent[-1] <= 2 * EXACT.within
    assert out.status is not None


async def test_the_settings_clock_reaches_every_room_of_a_streaming_chat() -> None:
    from agent_stream.uagents import StreamingChat

    clock = DrivenClock()

    async def respond(request: object, out: StreamWriter) -> None:
        return None

    chat = StreamingChat(respond, settings=ChatSettings(clock=clock))
    assert chat.clock is clock
    assert chat.client.clock is clock
    assert chat.delivery.clock is clock
