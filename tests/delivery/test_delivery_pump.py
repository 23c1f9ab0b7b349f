"""One reply's pump with redelivery, driven through its explicit dependencies (no agent): a peer
that acknowledges only the second copy of each ChatMessage, a dead peer, keepalives while a
responder is slow, the replay buffer and cancel."""

from __future__ import annotations

import asyncio

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
from agent_stream.adapters.chat.delivery import DeliveryPolicy, ReplayBuffer
from agent_stream.adapters.chat.wire import control_of, seq_span
from agent_stream.assemble import assemble
from agent_stream.uagents._chat_json import chat_from_json
from agent_stream.uagents.responder._pump import Outgoing, PumpLimits
from agent_stream.writer import StreamWriter

FAST = DeliveryPolicy(ack_timeout=0.05, retry_delay=0.02, max_delay=0.2, within=2.0, keepalive=0.1)


class Peer:
    """Receives ChatMessages; acknowledges (through the pump) only copies it saw before."""

    def __init__(self, ack_first: bool = False, fail: bool = False) -> None:
        self.out: Outgoing | None = None
        self.seen: dict[str, int] = {}
        self.chats: list[ChatMessage] = []
        self.keepalives = 0
        self.ack_first = ack_first
        self.fail = fail

    async def __call__(self, chat: ChatMessage) -> tuple[bool, str]:
        if self.fail:
            return False, "refused"
        op = next((i.metadata.get("op") for i in chat.content if hasattr(i, "metadata")), None)
        if op == "keepalive" and seq_span(chat) is None:
            self.keepalives += 1
            return True, "delivered"
        key = str(chat.msg_id)
        self.seen[key] = self.seen.get(key, 0) + 1
        self.chats.append(chat)
        if (self.ack_first or self.seen[key] > 1) and self.out is not None:
            asyncio.get_running_loop().call_soon(self.out.acknowledged, key)
        return True, "delivered"


def pump(
    peer: Peer,
    respond: object,
    replay: ReplayBuffer[str] | None = None,
    peer_acks: bool = True,
) -> Outgoing:
    out = Outgoing(
        "agent1peer",
        "conv",
        ChatEncoder("conv", tagged=True),
        respond=respond,
        send=peer,
        limits=PumpLimits(),  # type: ignore[arg-type]
        delivery=FAST,
        peer_acks=peer_acks,
        replay=replay,
        keepalive=True,
    )
    peer.out = out
    return out


async def words(out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b, b.message("text") as m:
        for i in range(5):
            await m.append(f"Sentence {i}. ")
            await asyncio.sleep(0.01)


async def test_unacknowledged_chat_messages_are_resent_until_acknowledged() -> None:
    peer = Peer()
    out = pump(peer, words)
    await asyncio.wait_for(out.start(), 5)
    assert out.status == "completed" and not out.unacked
    distinct = set(peer.seen)
    assert all(n >= 2 for n in peer.seen.values())  # each went again, once unacknowledged
    assert out.redelivery.resends >= len(distinct) and out.at_risk() > 0
    dec = ChatDecoder()
    msgs = [m for c in peer.chats for m in dec.feed("S", c, 0.0)]
    assert dec.whole("S", "conv")
    assert assemble(msgs).text() == "".join(f"Sentence {i}. " for i in range(5))


async def test_a_peer_not_known_to_acknowledge_is_sent_to_once() -> None:
    peer = Peer()
    out = pump(peer, words, peer_acks=False)
    await asyncio.wait_for(out.start(), 5)
    assert all(n == 1 for n in peer.seen.values()) and out.redelivery.resends == 0


async def endless(out: StreamWriter) -> None:
    async with out.block("llm") as b, b.message("text") as m:
        while True:
            await m.append("word ")
            await asyncio.sleep(0.005)


async def test_a_dead_peer_is_abandoned_and_the_responder_stopped() -> None:
    peer = Peer(fail=True)
    out = pump(peer, endless)
    await asyncio.wait_for(asyncio.gather(out.start(), return_exceptions=True), 5)
    assert out.dead and out.status == "cancelled"


async def test_a_slow_responder_sends_keepalives_and_keeps_its_replay_buffer() -> None:
    async def slow(out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("Before. ")
            await asyncio.sleep(0.45)
            await m.append("After.")

    peer = Peer(ack_first=True)
    buf: ReplayBuffer[str] = ReplayBuffer(100, 1 << 20)
    out = pump(peer, slow, replay=buf)
    await asyncio.wait_for(out.start(), 5)
    assert peer.keepalives >= 2 and out.keepalive is not None and out.keepalive.sent >= 2
    kept = [chat_from_json(text) for text in buf.covering(1)]
    assert [str(c.msg_id) for c in kept] == list(peer.seen)
    first_sends = {str(c.msg_id): c for c in reversed(peer.chats)}
    assert kept == [first_sends[str(c.msg_id)] for c in kept]  # each as it was sent


async def test_cancel_ends_every_stream_cancelled() -> None:
    peer = Peer(ack_first=True)
    out = pump(peer, endless)
    task = out.start()
    await asyncio.sleep(0.1)
    assert out.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert out.status == "cancelled" and not out.cancel()
    dec = ChatDecoder()
    msgs = [m for c in peer.chats if control_of(c) is None for m in dec.feed("S", c, 0.0)]
    t = assemble(msgs)
    assert t.messages and all(m.status == "cancelled" for m in t.messages)
