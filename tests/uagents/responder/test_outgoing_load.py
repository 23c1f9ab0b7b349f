"""Load-shaped batching in one reply's pump: with many replies open, a reply's ChatMessages carry
more text each (fewer envelopes and acknowledgements for the agent), never losing or reordering
text, and with few open nothing waits. Driven through the pump's explicit dependencies (a send
function recording what it delivers); what it delivered is decoded with the real ChatDecoder."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
from agent_stream.assemble import assemble
from agent_stream.message import tool_call
from agent_stream.uagents.responder._pump import Outgoing, PumpLimits
from agent_stream.writer import StreamWriter

PEER = "agent1peer"
WORDS = [f"Sentence number {i} is here." for i in range(12)]


class Wire:
    def __init__(self) -> None:
        self.sent: list[tuple[float, ChatMessage]] = []

    async def __call__(self, chat: ChatMessage) -> tuple[bool, str]:
        self.sent.append((time.monotonic(), chat))
        return True, "delivered"

    def text(self) -> str:
        dec = ChatDecoder()
        msgs = [m for _, c in self.sent for m in dec.feed(PEER, c, 0.0)]
        return assemble(msgs + dec.close()).text()


async def spaced(out: StreamWriter) -> None:
    """Twelve sentences, 50 ms apart: the chunker releases each one on its own."""
    async with out.block("llm") as b, b.message("text") as m:
        for w in WORDS:
            await m.append(w + " ")
            await asyncio.sleep(0.05)


async def run(open_replies: int | None, **limits: float) -> tuple[Wire, Outgoing, float]:
    wire = Wire()
    out = Outgoing(
        PEER,
        "conv",
        ChatEncoder("conv", tagged=True, chunker={"min_chars": 1, "max_delay": 0.05}),
        respond=spaced,
        send=wire,
        limits=PumpLimits(**limits),  # type: ignore[arg-type]
        open_replies=(lambda: open_replies) if open_replies is not None else None,
    )
    t0 = time.monotonic()
    await asyncio.wait_for(out.start(), 10)
    return wire, out, time.monotonic() - t0


EXPECTED = " ".join(WORDS) + " "


async def busy(respond: Any, max_hold: float) -> tuple[Wire, Outgoing]:
    """``respond`` streamed by a pump of an agent with 1,000 replies open (holds of
    ``max_hold``); what it delivered."""
    wire = Wire()
    out = Outgoing(
        PEER,
        "conv",
        ChatEncoder("conv", tagged=True, chunker={"min_chars": 1, "max_delay": 0.05}),
        respond=respond,
        send=wire,
        limits=PumpLimits(max_hold=max_hold),
        open_replies=lambda: 1000,
    )
    await asyncio.wait_for(out.start(), 10)
    return wire, out


async def test_few_replies_open_nothing_waits() -> None:
    alone, out, _ = await run(1)  # 1 / 250 per second: a hold under min_hold
    unpaced, _, _ = await run(None)
    assert out.holds == 0
    assert alone.text() == unpaced.text() == EXPECTED
    assert abs(len(alone.sent) - len(unpaced.sent)) <= 1 and len(alone.sent) >= 8


async def test_many_replies_open_fewer_chat_messages_same_text() -> None:
    busy, out, took = await run(1000, max_hold=0.3)  # 1000 / 250 per second: capped at 0.3 s
    calm, _, _ = await run(1)
    assert busy.text() == calm.text() == EXPECTED  # same text, same order
    assert out.holds > 0
    assert len(busy.sent) * 2 <= len(calm.sent)  # at least halved
    gaps = [b[0] - a[0] for a, b in zip(busy.sent, busy.sent[1:], strict=False)]
    assert max(gaps) < 0.3 + 0.25  # never held past max_hold (and the chunker's delay)
    assert took < 0.6 * len(WORDS) * 0.05 + 2.0  # the reply is not made longer than that


async def test_enough_text_waiting_ends_a_hold_early() -> None:
    # a 5 s hold, but 60 characters waiting are enough: the reply does not wait it out
    busy, out, took = await run(1000, max_hold=5.0, hold_chars=60)
    assert busy.text() == EXPECTED
    assert out.holds > 0
    assert took < 3.0
    sizes = [sum(len(getattr(i, "text", "")) for i in c.content) for _, c in busy.sent]
    assert max(sizes) >= 60


async def test_the_end_of_a_reply_is_not_held() -> None:
    busy, _, took = await run(1000, max_hold=5.0)  # holds of 5 s, ended by the reply's end
    assert busy.text() == EXPECTED
    assert took < 0.6 * len(WORDS) * 0.05 + 2.0
    assert len(busy.sent) <= 3  # the start, then what waited, ends included


async def test_no_rate_no_batching_for_load() -> None:
    off, out, _ = await run(1000, agent_rate=0)
    calm, _, _ = await run(1)
    assert out.holds == 0
    assert abs(len(off.sent) - len(calm.sent)) <= 1  # (timing: one more or less)


async def test_the_first_text_is_not_held() -> None:
    wrote: list[float] = []

    async def late_text(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await asyncio.sleep(
                0.3
            )  # the block's start goes alone first (its metadata waits 0.1 s)
            async with b.message("text") as m:
                wrote.append(time.monotonic())
                await m.append("The first sentence. ")
                await asyncio.sleep(0.5)
                await m.append("A second one. ")
                await asyncio.sleep(0.5)
                await m.append("A third. ")

    wire, out = await busy(late_text, max_hold=2.0)
    assert wire.text() == "The first sentence. A second one. A third. "
    first_text = next(t for t, c in wire.sent if any(getattr(i, "text", "") for i in c.content))
    assert wire.sent[0][1].content and first_text > wire.sent[0][0]  # something went before it
    assert first_text - wrote[0] < 0.4  # at once, not after the 2 s hold
    assert out.holds > 0  # the next sentences were held (the end of the reply released them)


async def test_a_tool_call_just_before_the_first_text_goes_with_it() -> None:
    """Under load, what comes after a send waits a hold from when it came, not from the send:
    a tool call made shortly before the first text rides with it instead of going alone just
    before it (a thousand replies sent both, back to back)."""
    times: dict[str, float] = {}

    async def tool_then_text(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await asyncio.sleep(0.8)  # the reply's start went at once; a hold (1 s) began
            async with out.block("tool", label="search") as tb:
                times["tool"] = time.monotonic()
                await tb.send(tool_call("call_1", "search", '{"q": "x"}'))
            await asyncio.sleep(0.5)  # past the hold counted from the start's send
            async with b.message("text") as m:
                times["text"] = time.monotonic()
                await m.append("The first sentence. ")

    wire, _ = await busy(tool_then_text, max_hold=1.0)
    assert wire.text() == "The first sentence. "
    i = next(
        i for i, (_, c) in enumerate(wire.sent) if any(getattr(x, "text", "") for x in c.content)
    )
    sent_at, first = wire.sent[i]
    assert i == 1  # the start, then the first text with the tool call: nothing in between
    assert "tool_call" in str(first.content)
    assert sent_at - times["text"] < 0.4  # the first text was not held


async def test_a_hold_is_waited_once_not_once_per_chat_message_released_meanwhile() -> None:
    # twelve sentences released one by one during a 5 s hold: only the reply's end ends it
    busy, out, _ = await run(1000, max_hold=5.0)
    assert busy.text() == EXPECTED
    # woken by each sentence the encoder released, the sender held again twelve times
    assert 1 <= out.holds <= 3, out.holds  # (a slow machine: a resend may come due once)
