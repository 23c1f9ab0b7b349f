"""The HTTP edge admits a trusted sender (a gateway asking for many users) at its own rate,
over real signed HTTP on 127.0.0.1, while other senders keep the per-sender rate."""

from __future__ import annotations

import asyncio

from hostile_peer import CHAT, envelope, post, valid_question
from inprocess_agents import Pair
from uagents_core.identity import Identity

from agent_stream.uagents import ChatRequest, StreamingChat
from agent_stream.uagents._protection import Protection, protect
from agent_stream.uagents.local._agents import endpoint_for
from agent_stream.uagents.transport._guard import GuardSettings
from agent_stream.writer import StreamWriter


async def test_a_trusted_sender_has_its_own_rate(pair: Pair) -> None:
    trusted = Identity.from_seed("edge trusted gateway seed", 0)
    other = Identity.from_seed("edge ordinary sender seed", 0)
    server = pair.add("edge trusting server", StreamingChat())
    protect(
        server,
        Protection(
            guard=GuardSettings(
                sender_envelopes_per_second=2.0, trusted_senders=frozenset({trusted.address})
            )
        ),
    )
    pair.tasks.add(asyncio.create_task(server.start_server()))
    assert await server.listening() and server.local_port is not None
    endpoint = endpoint_for(server.local_port)
    loop = asyncio.get_running_loop()

    async def statuses(identity: Identity) -> list[int]:
        out = []
        for i in range(20):
            body = envelope(server.address, CHAT, valid_question(f"q{i}"), identity=identity)
            out.append(await loop.run_in_executor(None, post, endpoint, body))
        return out

    assert await statuses(trusted) == [200] * 20
    theirs = await statuses(other)
    assert theirs[0] == 200 and theirs.count(429) >= 10  # a burst of 4, then 2 a second


async def test_an_agent_answering_our_question_is_admitted_at_the_trusted_rate(pair: Pair) -> None:
    """An asker (a gateway) takes the replies it asked for at the trusted rate, without naming
    the agents beforehand; another sender keeps the per-sender rate."""

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        await out.text("an answer")

    answerer_seed = "edge answering agent seed"
    answerer = pair.add(answerer_seed, StreamingChat(respond))
    chat = StreamingChat()
    asker = pair.add("edge asking agent seed", chat)
    protect(asker, Protection(guard=GuardSettings(sender_envelopes_per_second=2.0)))
    pair.tasks.add(asyncio.create_task(asker.start_server()))
    assert await asker.listening() and asker.local_port is not None
    reply = await chat.ask(asker._build_context(), answerer.address, "hi", timeout=5)
    await asyncio.wait_for(reply.wait(), 6)
    assert reply.completed and reply.tagged
    endpoint = endpoint_for(asker.local_port)
    loop = asyncio.get_running_loop()

    async def statuses(identity: Identity) -> list[int]:
        out = []
        for i in range(20):
            body = envelope(asker.address, CHAT, valid_question(f"q{i}"), identity=identity)
            out.append(await loop.run_in_executor(None, post, endpoint, body))
        return out

    assert await statuses(Identity.from_seed(answerer_seed, 0)) == [200] * 20
    assert (await statuses(Identity.from_seed("edge stranger seed", 0))).count(429) >= 10
