"""A protected agent's own endpoint cuts off a client sending its request headers a byte at a
time (slowloris) within its guard's ``header_timeout``, over real HTTP on 127.0.0.1, and keeps
answering other clients meanwhile."""

from __future__ import annotations

import asyncio

from inprocess_agents import Pair
from slow_client import SLACK, drip_while_getting

from agent_stream.uagents._protection import Protection, protect
from agent_stream.uagents.transport._guard import GuardSettings


async def test_a_dripping_client_is_dropped_by_the_agents_endpoint(pair: Pair) -> None:
    agent = pair.add("edge slow headers agent seed")
    protect(agent, Protection(guard=GuardSettings(header_timeout=1.0)))
    pair.tasks.add(asyncio.create_task(agent.start_server()))
    assert await agent.listening() and agent.local_port is not None
    port = agent.local_port

    took, _, statuses = await drip_while_getting(port)
    assert took is not None, "the dripping client was never cut off"
    assert 0.9 <= took <= 1.0 + SLACK, took
    # uagents answers a plain GET (whatever its status): the server kept answering
    assert len(statuses) >= 3 and all(100 <= s < 600 for s in statuses), statuses
