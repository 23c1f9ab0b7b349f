"""`POST /a2a/{agent}` read by a2a-sdk's own client: the agent card, message/stream, and
tasks/cancel of a running task (the task ends canceled at once)."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from uuid import uuid4

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TaskIdParams, TaskState, TextPart
from gateway_harness import Gateway, assert_echo_stopped

pytestmark = pytest.mark.integration


def _message(text: str) -> Message:
    return Message(role=Role.user, message_id=str(uuid4()), parts=[Part(root=TextPart(text=text))])


def _texts(task: Any) -> list[str]:
    return ["".join(p.root.text for p in a.parts if hasattr(p.root, "text"))
            for a in task.artifacts or [] if a.name == "text"]


async def test_card_and_message_stream(gateway: Gateway) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, f"{gateway.url}/a2a/llm").get_agent_card()
        assert card.name == "llm" and card.capabilities.streaming
        assert card.url == f"{gateway.url}/a2a/llm"
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        task, states = None, []
        async for item in client.send_message(_message("How do agents stream?")):
            if isinstance(item, tuple):
                task = item[0]
                states.append(task.status.state)
    assert task is not None and task.status.state == TaskState.completed
    assert TaskState.working in states
    texts = _texts(task)
    assert texts and "Streaming agent output" in texts[-1]


async def test_tasks_cancel_stops_a_running_task(gateway: Gateway,
                                                 gw_agents: dict[str, Any]) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, f"{gateway.url}/a2a/echo").get_agent_card()
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        seen: list[TaskState] = []
        cancel_at: float | None = None
        cancelled: Any = None

        async def read() -> Any:
            nonlocal cancel_at, cancelled
            last = None
            async for item in client.send_message(_message("[n=1000 rate=50] cancel me")):
                if not isinstance(item, tuple):
                    continue
                last = item[0]
                seen.append(last.status.state)
                if cancel_at is None and last.artifacts:
                    cancel_at = time.monotonic()
                    cancelled = await client.cancel_task(TaskIdParams(id=last.id))
            return last

        task = await asyncio.wait_for(read(), 20)
        ended = time.monotonic()
    assert cancel_at is not None and ended - cancel_at < 2.0
    assert cancelled.status.state == TaskState.canceled
    assert task.status.state == TaskState.canceled
    assert "w1000" not in "".join(_texts(task))
    # the cancel reached the agent: it stopped producing too
    echo = gw_agents["echo"][0]
    await asyncio.to_thread(assert_echo_stopped, echo, "cancel", cancel_at)
