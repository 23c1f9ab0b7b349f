"""Who sends urgently: an asker's question, and a reply up to and with its first text, go ahead
of queued text (:func:`agent_stream.uagents.transport._lanes.urgent`); a reply's later ChatMessages do not.

The replies run on a driven clock (their model's pauses and slow posts are driven seconds), so
what goes before what does not depend on how busy the machine is."""

from __future__ import annotations

import asyncio
import types
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat import ChatEncoder
from agent_stream.uagents import DrivenClock
from agent_stream.uagents.asker._client import ChatClient, ask_with
from agent_stream.uagents.responder._pump import Outgoing, PumpLimits
from agent_stream.uagents.transport import _lanes as lanes
from agent_stream.writer import StreamWriter

PEER = "agent1" + "q" * 59


async def _pump(respond: Any, send: Any, clock: DrivenClock, **kw: Any) -> None:
    """One reply to PEER through an Outgoing (sentence-sized chunks, no rate limit) on
    ``clock``, driven to its end."""
    out = Outgoing(
        PEER,
        "conv",
        ChatEncoder("conv", tagged=True, chunker={"min_chars": 1, "max_delay": 0.05}),
        respond=respond,
        send=send,
        limits=PumpLimits(agent_rate=0),
        clock=clock,
        **kw,
    )
    task = asyncio.ensure_future(out.start())
    await clock.run_until(task.done, step=0.01, limit=30.0)
    await task


def _has_text(chat: ChatMessage) -> bool:
    return any(getattr(i, "text", "") for i in chat.content)


async def test_a_reply_is_sent_urgently_up_to_its_first_text_and_not_after() -> None:
    clock = DrivenClock()
    sent: list[tuple[bool, bool]] = []  # (urgent?, carries text?)

    async def send(chat: ChatMessage) -> tuple[bool, str]:
        sent.append((lanes._URGENT.get(), _has_text(chat)))
        return True, "delivered"

    async def respond(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await clock.sleep(0.2)  # the block's start goes first, alone
            async with b.message("text") as m:
                for s in ("One. ", "Two. ", "Three. "):
                    await m.append(s)
                    await clock.sleep(0.1)

    await _pump(respond, send, clock)
    first = next(i for i, (_, text) in enumerate(sent) if text)
    assert first > 0 and len(sent) > first + 1  # something before it, and text after it
    assert [u for u, _ in sent] == [i <= first for i in range(len(sent))]
    assert not lanes._URGENT.get()  # and nothing leaks out of the send


async def test_a_question_is_sent_urgently() -> None:
    urgency: list[bool] = []

    async def sender(ctx: Any, destination: str, chat: ChatMessage) -> tuple[bool, str]:
        urgency.append(lanes._URGENT.get())
        return True, "delivered"

    ctx = types.SimpleNamespace(session=None, agent=types.SimpleNamespace(name="asker"))
    reply = await ask_with(sender, ctx, PEER, "hello", ChatClient(), timeout=1.0)
    assert urgency == [True]
    reply.cancel()


async def _overlaps(pipelined: bool) -> tuple[list[str], bool]:
    """A reply whose first send (its start) takes 0.5 s to post, and whose first text comes
    meanwhile: the events of its sends, and whether the text went while the start was posting."""
    clock = DrivenClock()
    events: list[str] = []

    async def send(chat: ChatMessage) -> tuple[bool, str]:
        kind = "text" if _has_text(chat) else "start"
        events.append(f"{kind} sent")
        if len(events) == 1:
            await clock.sleep(0.5)
        events.append(f"{kind} done")
        return True, "delivered"

    async def respond(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await clock.sleep(0.2)  # the start goes first, alone, and is slow to post
            async with b.message("text") as m:
                await m.append("The first text. ")

    await _pump(respond, send, clock, pipelined=pipelined)
    text_sent = events.index("text sent")
    return events, text_sent < events.index("start done")


async def test_to_an_asker_that_restores_order_the_first_text_does_not_wait_for_the_start() -> None:
    events, overlapped = await _overlaps(pipelined=True)
    assert overlapped, events
    assert events.count("start done") == 1 and events.count("text done") >= 1


async def test_to_a_plain_asker_each_send_waits_for_the_one_before() -> None:
    events, overlapped = await _overlaps(pipelined=False)
    assert not overlapped, events


async def test_the_first_text_is_posted_from_the_pump_not_from_a_task_of_its_own() -> None:
    """To an asker that restores order, what goes before the first text is posted beside it
    (tasks of their own); the first text itself is posted from the pump's sender, like the
    text after it: a task of its own began it a loop turn later, a third of a second at a
    thousand replies."""
    clock = DrivenClock()
    sends: list[tuple[bool, asyncio.Task[Any] | None]] = []  # (carries text?, posting task)

    async def send(chat: ChatMessage) -> tuple[bool, str]:
        sends.append((_has_text(chat), asyncio.current_task()))
        return True, "delivered"

    async def respond(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await clock.sleep(0.2)
            async with b.message("text") as m:
                for s in ("One. ", "Two. ", "Three. "):
                    await m.append(s)
                    await clock.sleep(0.1)

    await _pump(respond, send, clock, pipelined=True)
    first = next(i for i, (text, _) in enumerate(sends) if text)
    sender = sends[first][1]
    assert first > 0 and len(sends) > first + 1
    assert all(task is not sender for _, task in sends[:first])  # beside: tasks of their own
    assert all(task is sender for _, task in sends[first:])


async def _keepalive_urgency(pipelined: bool) -> list[bool]:
    """Whether each keepalive of a reply that goes quiet was sent urgently."""
    from agent_stream.adapters.chat.delivery import DeliveryPolicy
    from agent_stream.adapters.chat.wire import OP_KEEPALIVE, tagged_items

    clock = DrivenClock()
    urgency: list[bool] = []

    async def send(chat: ChatMessage) -> tuple[bool, str]:
        head = next(tagged_items(chat), None)
        if head is not None and head.get("op") == OP_KEEPALIVE:
            urgency.append(lanes._URGENT.get())
        return True, "delivered"

    async def respond(out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("Thinking about it. ")
            await clock.sleep(0.5)  # quiet: keepalives go meanwhile
            await m.append("Done.")

    await _pump(
        respond,
        send,
        clock,
        delivery=DeliveryPolicy(keepalive=0.1),
        keepalive=True,
        pipelined=pipelined,
    )
    return urgency


async def test_keepalives_go_ahead_of_queued_text_to_an_asker_that_restores_order() -> None:
    """A keepalive is how an asker tells a busy responder from a dead one: queued behind a
    thousand replies' text to one gateway, keepalives came late and replies went ``lost``."""
    pipelined = await _keepalive_urgency(pipelined=True)
    assert len(pipelined) >= 2 and all(pipelined)
    plain = await _keepalive_urgency(pipelined=False)
    assert len(plain) >= 2 and not any(plain)  # a plain asker gets everything in order
