"""ChatClient.route (agent_stream.uagents.asker._client): a tagged ChatMessage finds its reply by
(peer, conversation) whatever the number of open replies; untagged ones are scored against
their sender's replies only; ended replies are forgotten when they end."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.adapters.chat.wire import OP_KEEPALIVE, control
from agent_stream.uagents.asker._client import ChatClient, Reply

PEERS = [f"agent1peer{i:03d}" for i in range(50)]


def question() -> ChatMessage:
    return ChatMessage(content=[TextContent(text="q")])


async def test_a_tagged_message_is_routed_in_constant_time_among_thousands() -> None:
    client = ChatClient()
    replies = [Reply(PEERS[i % len(PEERS)], question(), timeout=600) for i in range(3000)]
    for r in replies:
        client.add(r)
    try:
        assert client.open == 3000
        messages = [(r.peer, control(OP_KEEPALIVE, r.conversation), r) for r in replies[::3]]
        started = time.process_time()
        for peer, chat, r in messages:
            assert client.route(peer, chat, None) is r
        spent = time.process_time() - started
        # 1,000 lookups: scanning 3,000 open replies for each took seconds; a lookup, microseconds
        assert spent < 0.5, spent
        stranger = control(OP_KEEPALIVE, str(uuid.uuid4()))
        assert client.route(PEERS[0], stranger, None) is None
        wrong_peer = control(OP_KEEPALIVE, replies[1].conversation)
        assert client.route(PEERS[0], wrong_peer, None) is None  # not that peer's conversation
    finally:
        client.cancel_all()
    assert client.open == 0


async def test_an_untagged_message_goes_to_its_senders_oldest_open_reply() -> None:
    client = ChatClient()
    first, second = Reply(PEERS[0], question()), Reply(PEERS[0], question())
    other = Reply(PEERS[1], question())
    for r in (first, second, other):
        client.add(r)
    try:
        plain = ChatMessage(content=[TextContent(text="an answer")])
        assert client.route(PEERS[0], plain, None) is first
        assert client.route(PEERS[1], plain, None) is other
        assert client.route(PEERS[2], plain, None) is None
        first._finish("completed")
        await asyncio.sleep(0)  # the reply's end is noted on the next loop turn
        assert client.open == 2
        assert client.route(PEERS[0], plain, None) is second
        assert client.route(PEERS[0], control(OP_KEEPALIVE, first.conversation), None) is None
        assert client.acknowledged(PEERS[0], second.conversation)
        assert second.acknowledged and not client.acknowledged(PEERS[1], second.conversation)
    finally:
        client.cancel_all()


async def test_an_ended_reply_makes_late_untagged_traffic_late() -> None:
    client = ChatClient(late_window=10.0)
    r = Reply(PEERS[3], question())
    client.add(r)
    r._finish("completed")
    await asyncio.sleep(0)
    plain = ChatMessage(content=[TextContent(text="tail of the reply")])
    assert client.route(PEERS[3], plain, None) is None
    assert client.is_late(PEERS[3], plain)
    assert not client.is_late(PEERS[4], plain)


async def test_a_reply_that_ends_leaves_without_looking_at_the_other_open_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A gateway has a thousand replies open with one agent: each that ended scanned them all.
    client = ChatClient()
    replies = [Reply(PEERS[0], question(), timeout=600) for _ in range(2000)]
    for r in replies:
        client.add(r)
    looked: list[Reply] = []
    done = Reply.done

    def counted(self: Reply) -> bool:
        looked.append(self)
        return bool(done.fget(self))  # type: ignore[attr-defined]

    monkeypatch.setattr(Reply, "done", property(counted))
    try:
        await asyncio.sleep(0)  # each reply's watch starts (and looks at its own reply)
        looked.clear()
        for r in replies[:1000]:
            r._finish("completed")
        await asyncio.sleep(0)  # the ends are noted on the next loop turn
        assert client.open == 1000
        # scanning looked at every open reply at each end: a million looks here
        assert sum(1 for r in looked if r.status is None) == 0
        later = replies[1500]
        assert client.route(PEERS[0], control(OP_KEEPALIVE, later.conversation), None) is later
        ended = control(OP_KEEPALIVE, replies[10].conversation)
        assert client.route(PEERS[0], ended, None) is None
        plain = ChatMessage(content=[TextContent(text="an answer")])
        assert client.route(PEERS[0], plain, None) is replies[1000]  # the oldest still open
    finally:
        client.cancel_all()
    assert client.open == 0
