"""One reply's pump under a peer quota, driven through its explicit dependencies (no agent): the
ceiling spaces its sends, what waits for the next slot goes as one ChatMessage while the
envelope stays under the size limit, and the text is the same; the quota's ack_timeout holds
resends back."""

from __future__ import annotations

import asyncio
import itertools
import time

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat import ChatEncoder
from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.adapters.chat.quota import PeerQuota, envelope_bytes
from agent_stream.adapters.chat.wire import seq_span
from agent_stream.uagents._chat_json import chat_json
from agent_stream.uagents.responder._pump import Outgoing, PumpLimits
from agent_stream.uagents.responder._quotas import PeerPace, PeerTerms
from agent_stream.writer import StreamWriter

TEXT = "".join(f"Sentence {i}: some words — ünïcödé included. " for i in range(120))


class Peer:
    """Takes every ChatMessage, noting when, and acknowledges it ``ack_delay`` seconds later (a
    mailbox peer reads what it is sent only at its next poll)."""

    def __init__(self, ack_delay: float = 0.0) -> None:
        self.out: Outgoing | None = None
        self.sent: list[tuple[float, ChatMessage]] = []
        self.ack_delay = ack_delay

    async def __call__(self, chat: ChatMessage) -> tuple[bool, str]:
        self.sent.append((time.monotonic(), chat))
        await asyncio.sleep(0.002)  # a post takes a little while
        if self.out is not None:
            asyncio.get_running_loop().call_later(
                self.ack_delay, self.out.acknowledged, str(chat.msg_id)
            )
        return True, "delivered"

    def text(self) -> str:
        seen: set[str] = set()
        out = []
        for _, chat in self.sent:
            if str(chat.msg_id) in seen:
                continue
            seen.add(str(chat.msg_id))
            out.extend(i.text for i in chat.content if isinstance(i, TextContent))
        return "".join(out)


async def fast_writer(out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b, b.message("text") as m:
        for i in range(0, len(TEXT), 7):
            await m.append(TEXT[i : i + 7])
            await asyncio.sleep(0.001)


def pumped(peer: Peer, quota: PeerQuota, policy: DeliveryPolicy | None = None) -> Outgoing:
    rate = quota.messages_per_second
    pace = PeerPace(rate) if rate is not None else None

    async def terms() -> PeerTerms:
        return PeerTerms(quota, pace, True)

    out = Outgoing(
        "agent1peer",
        "conv",
        ChatEncoder("conv", tagged=True),
        respond=fast_writer,
        send=peer,
        limits=PumpLimits(agent_rate=0),
        delivery=policy,
        peer_acks=True,
        terms=terms,
    )
    peer.out = out
    return out


async def test_a_ceiling_spaces_the_sends_and_coalesces_what_waits_with_the_same_text() -> None:
    free, paced = Peer(), Peer()
    await asyncio.wait_for(pumped(free, PeerQuota()).start(), 20)
    await asyncio.wait_for(pumped(paced, PeerQuota(messages_per_second=10)).start(), 20)
    assert paced.text() == free.text() == TEXT
    assert len(paced.sent) < len(free.sent) / 2  # fewer, larger ChatMessages
    times = [t for t, _ in paced.sent]
    assert all(b - a >= 0.1 - 0.003 for a, b in itertools.pairwise(times))


async def test_coalescing_stops_before_the_envelope_limit() -> None:
    limit = 4096
    unlimited, capped = Peer(), Peer()
    await asyncio.wait_for(pumped(unlimited, PeerQuota(messages_per_second=4)).start(), 30)
    quota = PeerQuota(messages_per_second=4, max_envelope_bytes=limit)
    await asyncio.wait_for(pumped(capped, quota).start(), 30)
    assert capped.text() == TEXT
    over = [c for _, c in capped.sent if size(c) > limit]
    # only one ChatMessage goes over it: the one whose message_end repeats the whole text,
    # alone, as the encoder made it (nothing was coalesced with it)
    assert len(over) == 1 and alone(over[0]), [size(c) for _, c in capped.sent]
    # without the limit, what waited went as one, over it
    assert any(size(c) > limit and not alone(c) for _, c in unlimited.sent)
    assert len(capped.sent) > len(unlimited.sent)


def size(chat: ChatMessage) -> int:
    return envelope_bytes(len(chat_json(chat).encode()))


def alone(chat: ChatMessage) -> bool:
    span = seq_span(chat)
    return span is not None and span[0] == span[1]


async def test_the_quotas_ack_timeout_holds_resends_back() -> None:
    """Acknowledgements come 0.3 s late: with the policy's 0.05 s every ChatMessage is sent
    again; with a quota's 0.6 s, none is."""
    policy = DeliveryPolicy(ack_timeout=0.05, retry_delay=0.02, max_delay=0.2, within=5.0)
    hasty, patient = Peer(ack_delay=0.3), Peer(ack_delay=0.3)
    await asyncio.wait_for(pumped(hasty, PeerQuota(), policy).start(), 20)
    await asyncio.wait_for(pumped(patient, PeerQuota(ack_timeout=0.6), policy).start(), 20)
    assert len({str(c.msg_id) for _, c in patient.sent}) == len(patient.sent)  # none again
    assert len({str(c.msg_id) for _, c in hasty.sent}) < len(hasty.sent)
