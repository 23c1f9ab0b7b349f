"""A reply when its agent stops (Outgoing.stop, agent_stream.uagents._shutdown): its ends are
posted once, no acknowledgement is awaited, and what is not posted by the agent's stop deadline
is given up. Driven through the pump's explicit dependencies (a send function), no agent."""

from __future__ import annotations

import asyncio
import time

from pump_wire import PEER, Wire

from agent_stream.adapters.chat import ChatEncoder
from agent_stream.uagents._clock import DrivenClock
from agent_stream.uagents._shutdown import StopDeadline
from agent_stream.uagents.responder._pump import Outgoing, PumpLimits
from agent_stream.writer import StreamWriter

# each stage's own bound, far beyond the stop deadline: a stop that waited it would show
LONG = 30.0


def reply(respond: object, wire: Wire, finished: list[Outgoing], *, acks: bool) -> Outgoing:
    return Outgoing(
        PEER,
        "conv",
        ChatEncoder("conv", tagged=True),
        respond=respond,  # type: ignore[arg-type]
        send=wire,
        limits=PumpLimits(drain_timeout=LONG, ack_timeout=LONG, max_coalesce=1),
        on_finished=finished.append,
        peer_acks=acks,
    )


async def streaming(out: StreamWriter, started: asyncio.Event) -> None:
    async with out.block("llm") as b, b.message("text") as m:
        await m.append("Complete sentence. Incomplete")
        started.set()
        await asyncio.sleep(LONG)


async def test_a_stop_posts_the_ends_and_awaits_no_acknowledgement() -> None:
    started, finished = asyncio.Event(), []  # type: ignore[var-annotated]
    wire = Wire()  # delivers; the peer's acknowledgements never come (the server is down)
    out = reply(lambda o: streaming(o, started), wire, finished, acks=True)
    task = out.start()
    await asyncio.wait_for(started.wait(), 5)
    began = time.monotonic()
    out.stop(LONG)
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), LONG)
    assert time.monotonic() - began < 5.0  # not the acknowledgements' 30 s
    t = wire.transcript()
    assert out.status == "cancelled" and t.status == "cancelled" and finished == [out]
    assert [m.content for m in t.messages] == ["Complete sentence. Incomplete"]


async def test_a_stop_gives_up_a_send_that_hangs_at_the_deadline() -> None:
    started, finished = asyncio.Event(), []  # type: ignore[var-annotated]
    wire = Wire()
    out = reply(lambda o: streaming(o, started), wire, finished, acks=False)
    task = out.start()
    await asyncio.wait_for(started.wait(), 5)
    wire.gate = asyncio.Event()  # from now on every send hangs
    began = time.monotonic()
    out.stop(0.3)
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), LONG)
    assert 0.25 <= time.monotonic() - began < 5.0  # the deadline, not drain_timeout's 30 s
    assert out.status == "cancelled" and finished == [out]


async def test_a_stop_bounds_a_reply_whose_responder_is_already_done() -> None:
    async def short(out: StreamWriter) -> None:
        await out.text("All written.")

    finished: list[Outgoing] = []
    wire = Wire()
    wire.gate = asyncio.Event()  # its sends hang: the reply waits on them with no bound of its own
    out = reply(short, wire, finished, acks=False)
    task = out.start()
    for _ in range(500):
        if out.status is not None:
            break
        await asyncio.sleep(0.01)
    assert out.status == "completed" and not task.done()
    began = time.monotonic()
    out.stop(0.3)
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), LONG)
    assert time.monotonic() - began < 5.0 and finished == [out]


def test_the_deadline_is_set_once_and_counts_down_to_zero() -> None:
    d = StopDeadline(budget=0.2)
    assert not d.stopping
    at = d.begin()
    assert d.stopping and d.begin() == at  # later stages share it
    assert 0.0 < d.left() <= 0.2 and d.left(0.05) == 0.05
    time.sleep(0.25)
    assert d.left() == 0.0 and d.left(5.0) == 0.0
    d.reset()
    assert not d.stopping


async def test_on_the_driven_clock_a_hanging_send_is_given_up_exactly_at_the_deadline() -> None:
    clock = DrivenClock(start=0.0)
    started, finished = asyncio.Event(), []  # type: ignore[var-annotated]
    wire = Wire()
    out = Outgoing(
        PEER,
        "conv",
        ChatEncoder("conv", tagged=True),
        respond=lambda o: streaming(o, started),
        send=wire,
        limits=PumpLimits(drain_timeout=LONG, max_coalesce=1),
        on_finished=finished.append,
        clock=clock,
    )
    task = out.start()
    await asyncio.wait_for(started.wait(), 5)
    wire.gate = asyncio.Event()  # from now on every send hangs
    out.stop(1.5)
    await clock.advance(1.49)
    assert not task.done()  # still posting its ends: the deadline has not come
    await clock.advance(0.02)
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 5)
    assert out.status == "cancelled" and finished == [out]
