"""A reply to a plain question goes one ChatMessage at a time (the next waits for the previous
one's acknowledgement). When every acknowledgement of one of them is lost for a whole budget
(five sends in 20 s) while the asker reads each copy, the asker is there: the ChatMessage gets
its second budget and the reply is delivered whole. Before, the reply was abandoned, and an
asker of a plain question, which gets no keepalives, waited out its whole timeout for the rest
(test_delivery_faults' fifty replies: one in three runs on a loaded machine ended ``timeout``).

Driven through the pump's explicit dependencies (a send function) on a DrivenClock."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.assemble import assemble
from agent_stream.uagents import DrivenClock
from agent_stream.uagents.responder._pump import Outgoing, PumpLimits
from agent_stream.writer import StreamWriter

PEER = "agent1plainasker"
POLICY = DeliveryPolicy(jitter=0.0)  # five sends within 20 s, a second budget once
SENTENCES = ["First sentence. ", "Second sentence. ", "Third sentence. "]


class Asker:
    """Reads every copy it is sent and acknowledges it 10 ms later, but the first ``lose``
    acknowledgements of the ``nth`` ChatMessage (1: the first) are lost on their way."""

    def __init__(self, clock: DrivenClock, nth: int, lose: int) -> None:
        self.clock = clock
        self.nth, self.lose = nth, lose
        self.out: Outgoing | None = None
        self.order: list[str] = []  # distinct msg_ids, as first read
        self.copies: list[ChatMessage] = []

    async def __call__(self, chat: ChatMessage) -> tuple[bool, str]:
        key = str(chat.msg_id)
        if key not in self.order:
            self.order.append(key)
        self.copies.append(chat)
        if self.order.index(key) + 1 == self.nth and self.lose > 0:
            self.lose -= 1  # read, but its acknowledgement never arrives
        else:
            assert self.out is not None
            self.clock.call_later(0.01, self.out.acknowledged, key)
        return True, "delivered"

    def transcript(self) -> object:
        dec = ChatDecoder()
        msgs = [m for c in self.copies for m in dec.feed(PEER, c, 0.0)]
        return assemble(msgs + dec.close())


def responder(clock: DrivenClock) -> Callable[[StreamWriter], Awaitable[None]]:
    async def respond(out: StreamWriter) -> None:
        async with out.block("llm", label="Answer") as b, b.message("text") as m:
            for s in SENTENCES:
                await m.append(s)
                await clock.sleep(1.0)  # the chunker lets it go: one ChatMessage each

    return respond


@pytest.mark.parametrize("nth", [1, 2])
async def test_a_plain_reply_whose_acknowledgements_are_lost_for_a_whole_budget_is_delivered(
    nth: int,
) -> None:
    clock = DrivenClock(start=0.0)
    asker = Asker(clock, nth=nth, lose=POLICY.tries)
    out = Outgoing(
        PEER,
        "conv",
        ChatEncoder("conv", tagged=False),  # a plain question: an untagged reply
        respond=responder(clock),
        send=asker,
        limits=PumpLimits(max_coalesce=1),
        delivery=POLICY,
        peer_acks=True,  # the asker acknowledges (it did the ones before)
        keepalive=False,  # a plain question gets none: one ChatMessage at a time
        clock=clock,
    )
    asker.out = out
    task = out.start()
    took = await clock.run_until(task.done, step=0.05, limit=200.0)
    assert len(asker.order) >= 2  # the reply took several ChatMessages
    assert not out.dead, "the reply was abandoned though its asker read every copy"
    assert (out.redelivery.given_up, out.redelivery.extended) == (0, 1)
    assert not out.unacked and out.status == "completed"
    t = asker.transcript()
    assert t.status == "completed" and t.text() == "".join(SENTENCES)  # type: ignore[attr-defined]
    assert POLICY.within < took < 2 * POLICY.within  # within the second budget
