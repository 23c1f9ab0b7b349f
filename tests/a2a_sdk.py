"""a2a-sdk 1.x's own client, as the tests drive it: at A2A 1.0, or at 0.3 (the SDK's own
compatibility transport, chosen by a card that lists only the 0.3 interface), and the SDK's
task manager to build a task from the events a stream carried."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.compat.v0_3.conversions import to_compat_task
from a2a.compat.v0_3.types import Task as Task03
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.server.tasks.task_manager import TaskManager
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest, StreamResponse, Task

from agent_stream.adapters.a2a.versions import to_core


async def card_of(http: httpx.AsyncClient, base: str) -> AgentCard:
    """The agent card at ``base`` (its well-known path), as a 1.x client reads it."""
    return await A2ACardResolver(http, base).get_agent_card()


def client_for(
    card: AgentCard, http: httpx.AsyncClient, version: str = "1.0", streaming: bool = True
) -> Client:
    """a2a-sdk's client for ``card`` at protocol ``version`` ("1.0" or "0.3")."""
    if version != "1.0":
        kept = AgentCard()
        kept.CopyFrom(card)
        del kept.supported_interfaces[:]
        kept.supported_interfaces.extend(
            i for i in card.supported_interfaces if i.protocol_version == version
        )
        card = kept
    return ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)


def ask(text: str, task_id: str = "", context_id: str = "") -> SendMessageRequest:
    """A SendMessageRequest whose user message says ``text``."""
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=str(uuid4()),
            parts=[Part(text=text)],
            task_id=task_id,
            context_id=context_id,
        )
    )


class Built:
    """The events of one stream, and the task a2a-sdk's task manager builds from them."""

    def __init__(self) -> None:
        self.events: list[StreamResponse] = []
        self.states: list[int] = []
        self.message: Message | None = None
        self._mgr = TaskManager(InMemoryTaskStore(), ServerCallContext(), None, None, None)

    async def add(self, item: StreamResponse) -> None:
        """One stream event."""
        self.events.append(item)
        which = item.WhichOneof("payload")
        event = getattr(item, which)
        if which == "message":
            self.message = event
            return
        if which in ("task", "status_update"):
            self.states.append(event.status.state)
        await self._mgr.process(event)

    async def task(self) -> Task | None:
        """The task as the events built it."""
        return await self._mgr.get_task()


async def collect(stream: AsyncIterator[StreamResponse]) -> Built:
    """Every event of ``stream``, and the task they build."""
    built = Built()
    async for item in stream:
        await built.add(item)
    return built


async def sdk_task(events: list[Any]) -> Task03:
    """The task a2a-sdk's task manager builds from the codec's 0.3 events (as 1.0), as 0.3."""
    mgr = TaskManager(InMemoryTaskStore(), ServerCallContext(), None, None, None)
    for ev in events:
        await mgr.process(to_core(ev))
    task = await mgr.get_task()
    assert task is not None
    return to_compat_task(task)


def texts(task: Task | None) -> list[str]:
    """The text of each ``text`` artifact of a 1.0 task."""
    if task is None:
        return []
    return [
        "".join(p.text for p in a.parts if p.HasField("text"))
        for a in task.artifacts
        if a.name == "text"
    ]
