"""A reply's liveness is measured when its ChatMessages arrive, not when the asker's inbox gets
to them: real agents in one process, the asker's inbox held up by a slow handler of its own
for twice the reply's idle timeout while the responder streams."""

from __future__ import annotations

import asyncio

from inprocess_agents import Pair
from uagents import Context, Model, Protocol

from agent_stream.uagents import ChatRequest, StreamingChat
from agent_stream.writer import StreamWriter

SENTENCES = [f"Sentence number {i} of the answer." for i in range(12)]


class Stall(Model):  # type: ignore[misc]
    seconds: float


async def test_a_reply_waiting_in_a_backed_up_inbox_is_not_lost(pair: Pair) -> None:
    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            for s in SENTENCES:  # a sentence every 0.25 s: the responder is never silent
                await m.append(s + " ")
                await asyncio.sleep(0.25)

    # no gather window: a ChatMessage at least every chunker deadline (0.5 s), well within the
    # idle timeout, so only the inbox's backlog could make the reply look silent (the default
    # window, 1.75 s, is within the 5 s keepalive and 15 s idle timeout, not this test's 1.5 s)
    answerer = pair.add("backed-up inbox answerer", StreamingChat(respond, lean_gather=0.0))
    chat = StreamingChat()
    asker = pair.add("backed-up inbox asker", chat)
    stalls: list[float] = []
    slow = Protocol(name="slow", version="1.0.0")

    @slow.on_message(Stall)  # type: ignore[untyped-decorator]
    async def stall(ctx: Context, sender: str, msg: Stall) -> None:
        stalls.append(msg.seconds)
        await asyncio.sleep(msg.seconds)  # the asker's inbox waits meanwhile

    asker.include(slow)
    staller = pair.add("backed-up inbox staller")
    reply = await chat.ask(
        asker._build_context(), answerer.address, "hi", timeout=30, idle_timeout=1.5
    )
    for _ in range(100):  # bounded: the reply has begun (its text is being handled)
        if reply.first_text_at is not None:
            break
        await asyncio.sleep(0.05)
    assert reply.first_text_at is not None and reply.status is None
    await staller._build_context().send(asker.address, Stall(seconds=3.0))
    await asyncio.wait_for(reply.wait(), 30)
    assert stalls == [3.0]  # the inbox was held up for twice the idle timeout
    assert reply.status == "completed", reply.status
    assert reply.text() == " ".join(SENTENCES) + " "
