"""Agents running inside the test's event loop (no HTTP server, no signing).

Agents in one process reach each other through uagents' in-process dispatcher. :class:`Pair`
starts each agent's outgoing dispenser and inbox with the Agent's public ``start_*`` methods and
stops exactly the tasks they created; :func:`unprotected` adds to a Pair an agent that nobody
protected (no inbox guard).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from uagents import Agent, Protocol
from uagents.dispatch import dispatcher

from agent_stream.uagents import local_agent
from agent_stream.uagents.local._agents import LocalAgent, NoRegistration, endpoint_for, free_port

A = TypeVar("A", bound=Agent)


class Pair:
    """Running agents (typically a ``server`` with the plugin under test and a ``client``)."""

    def __init__(self) -> None:
        self.agents: list[Agent] = []
        self.tasks: set[asyncio.Task[Any]] = set()

    def add(self, seed: str, chat: Protocol | None = None, **options: Any) -> Agent:
        if len(seed) < 16:  # a throwaway test seed, long enough not to be warned about
            seed = f"{seed} (in-process test agent)"
        agent = local_agent(seed, free_port(), directory=None, **options)
        if chat is not None:
            agent.include(chat, publish_manifest=True)
        return self.run(agent)

    def run(self, agent: A) -> A:
        """Start ``agent``'s outgoing dispenser and inbox; :meth:`close` stops them."""
        before = asyncio.all_tasks()
        agent.start_message_dispenser()
        agent.start_message_receivers()
        self.tasks |= asyncio.all_tasks() - before
        self.agents.append(agent)
        return agent

    async def close(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for a in self.agents:
            dispatcher.unregister(a.address, a)


def unprotected(pair: Pair, seed: str, chat: Protocol) -> LocalAgent:
    """A local agent (no internet) that nobody protected, run like Pair's agents."""
    port = free_port()
    agent = LocalAgent(
        name=None,
        seed=seed,
        port=port,
        endpoint=[endpoint_for(port)],
        registration_policy=NoRegistration(),
        enable_agent_inspector=False,
        report_events=False,
        mark_inactive_on_shutdown=False,
        loop=asyncio.get_running_loop(),
    )
    agent.local_port = port
    agent.include(chat, publish_manifest=True)
    return pair.run(agent)
