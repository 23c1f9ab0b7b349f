"""One reply's pump (agent_stream.uagents.responder._pump), driven through its explicit dependencies:
a responder, a send function recording what it delivers, a lane, an in-flight registry. No
agent, no plugin: what reaches ``send`` is decoded with the real ChatDecoder."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from pump_wire import PEER, Wire

from agent_stream.adapters.chat import ChatEncoder
from agent_stream.uagents.responder._pump import Outgoing, PumpLimits
from agent_stream.writer import StreamWriter


def pump(
    respond: Callable[[StreamWriter], Awaitable[None]],
    wire: Wire,
    *,
    conversation: str = "conv",
    finished: list[Outgoing] | None = None,
    serial: asyncio.Lock | None = None,
    in_flight: dict[str, Outgoing] | None = None,
    **limits: float | int | None,
) -> Outgoing:
    return Outgoing(
        PEER,
        conversation,
        ChatEncoder(conversation, tagged=True),
        respond=respond,
        send=wire,
        limits=PumpLimits(**limits),  # type: ignore[arg-type]
        serial=serial,
        in_flight=in_flight,
        on_finished=finished.append if finished is not None else None,
    )


async def sentences(out: StreamWriter) -> None:
    async with out.block("llm") as b, b.message("text") as m:
        for w in ["One", "sentence", "here.", "And", "a", "second", "one."]:
            await m.append(w + " ")


async def test_the_reply_is_sent_in_order_and_decodes_to_what_was_written() -> None:
    wire, finished = Wire(), []  # type: ignore[var-annotated]
    out = pump(sentences, wire, finished=finished)
    await out.start()
    t = wire.transcript()
    assert t.text() == "One sentence here. And a second one. "
    assert t.status == "completed" and out.status == "completed"
    assert finished == [out] and out.sent == len(wire.sent) and out.failed == 0


async def test_a_raising_responder_delivers_the_error_then_ends_every_stream() -> None:
    async def respond(out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("Half a sentence")
            raise KeyError("gone")

    wire = Wire()
    out = pump(respond, wire)
    await out.start()
    t = wire.transcript()
    assert out.status == "error" and t.status == "error"
    assert [m.status for m in t.messages if m.type == "text"] == ["error"]
    (err,) = [m for m in t.messages if m.type == "error"]
    assert err.props["message"] == "KeyError: 'gone'"


async def test_after_max_failures_the_reply_is_abandoned_and_the_responder_stopped() -> None:
    stopped = asyncio.Event()

    async def endless(out: StreamWriter) -> None:
        try:
            for i in range(10_000):
                await out.text(f"Sentence {i}.")
                await asyncio.sleep(0.001)
        finally:
            stopped.set()

    wire, finished = Wire(fail=True), []  # type: ignore[var-annotated]
    out = pump(endless, wire, finished=finished, max_failures=2, max_coalesce=1, drain_timeout=0.5)
    task = out.start()
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 5)
    assert stopped.is_set() and out.dead and out.status == "cancelled"
    assert out.failed == 2 and wire.attempts == 2 and finished == [out]


async def test_flow_control_waits_for_acknowledgements() -> None:
    registry: dict[str, Outgoing] = {}

    async def respond(out: StreamWriter) -> None:
        for i in range(4):
            await out.text(f"Part {i}.")

    wire = Wire()
    out = pump(respond, wire, in_flight=registry, max_in_flight=1, max_coalesce=1, ack_timeout=5.0)
    task = out.start()
    for _ in range(200):  # acknowledge each ChatMessage as it arrives, the way a peer does
        await asyncio.sleep(0.005)
        assert len(out.unacked) <= 1
        for key in list(out.unacked):
            registry.pop(key, None)
            out.acknowledged(key)
        if task.done():
            break
    await task
    assert out.peak_in_flight == 1 and len(wire.sent) >= 4 and not registry


async def test_a_peer_that_never_acknowledges_turns_flow_control_off() -> None:
    registry: dict[str, Outgoing] = {}

    async def respond(out: StreamWriter) -> None:
        for i in range(3):
            await out.text(f"Part {i}.")

    wire = Wire()
    out = pump(respond, wire, in_flight=registry, max_in_flight=1, max_coalesce=1, ack_timeout=0.05)
    await asyncio.wait_for(out.start(), 5)
    assert out.peak_in_flight > 1
    assert not registry  # what was never acknowledged leaves the registry with the reply


async def test_what_queues_behind_a_slow_send_goes_as_one_chat_message() -> None:
    async def respond(out: StreamWriter) -> None:
        for i in range(20):
            await out.text(f"Part {i}.")

    slow, fast = Wire(delay=0.02), Wire()
    await pump(respond, slow).start()
    await pump(respond, fast, max_coalesce=1).start()
    assert slow.transcript().text() == fast.transcript().text()
    assert len(slow.sent) < len(fast.sent) / 2


async def test_a_full_queue_makes_the_responder_wait() -> None:
    written: list[int] = []

    async def respond(out: StreamWriter) -> None:
        for i in range(50):
            await out.text(f"Part {i}.")
            written.append(i)

    wire = Wire()
    wire.gate = asyncio.Event()  # the first send stalls
    out = pump(respond, wire, max_buffered=4, max_coalesce=1)
    task = out.start()
    await asyncio.sleep(0.1)
    assert len(written) < 50 and len(out.queue) <= 4 + 3
    wire.gate.set()
    await asyncio.wait_for(task, 5)
    assert written == list(range(50))


async def test_cancelling_sends_the_ends_and_reports_cancelled() -> None:
    started = asyncio.Event()

    async def respond(out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("Complete sentence. Incomplete")
            started.set()
            await asyncio.sleep(30)

    wire, finished = Wire(), []  # type: ignore[var-annotated]
    out = pump(respond, wire, finished=finished)
    task = out.start()
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    t = wire.transcript()
    assert out.status == "cancelled" and t.status == "cancelled" and finished == [out]
    assert [m.content for m in t.messages] == ["Complete sentence. Incomplete"]


async def test_replies_sharing_a_lane_run_one_after_the_other() -> None:
    lane = asyncio.Lock()
    order: list[str] = []

    def respond(name: str) -> Callable[[StreamWriter], Awaitable[None]]:
        async def run(out: StreamWriter) -> None:
            order.append(f"{name} start")
            await out.text(f"{name}.")
            await asyncio.sleep(0.05)
            order.append(f"{name} end")

        return run

    wire = Wire()
    a = pump(respond("a"), wire, conversation="a", serial=lane)
    b = pump(respond("b"), wire, conversation="b", serial=lane)
    await asyncio.gather(a.start(), b.start())
    assert order == ["a start", "a end", "b start", "b end"]
    assert not lane.locked()


async def test_a_coalesced_chat_message_stays_within_the_item_limit() -> None:
    async def respond(out: StreamWriter) -> None:
        for i in range(60):
            await out.text(f"Part {i}.")

    limited, unlimited = Wire(delay=0.02), Wire(delay=0.02)
    await pump(respond, limited, max_coalesce_items=8).start()
    await pump(respond, unlimited, max_coalesce_items=10_000).start()
    assert limited.transcript().text() == unlimited.transcript().text()
    assert max(len(c.content) for c in limited.sent) <= 8
    assert max(len(c.content) for c in unlimited.sent) > 8
