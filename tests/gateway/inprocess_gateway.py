"""The gateway's own app on uvicorn, 127.0.0.1, in the test's event loop, in front of agents
whose replies are given Messages: the gateway's transport seam (``AgentLink``) answered from a
list, so each test picks the agents (a real local directory in a temporary folder) and what
they say, in milliseconds."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import uvicorn

from agent_stream.gateway.app import Gateway, build_app
from agent_stream.gateway.config import GatewayConfig
from agent_stream.gateway.link import Agents
from agent_stream.message import Message
from agent_stream.uagents import LocalDirectory
from agent_stream.uagents.local._agents import free_port

__all__ = ["GivenReplies", "address_of", "serve_gateway"]


def address_of(name: str) -> str:
    """A stable agent-shaped address for ``name``."""
    return "agent1q" + hashlib.sha256(name.encode()).hexdigest()[:52]


class _Reply:
    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = list(messages)
        self.status: str | None = None
        self.chat_messages = 0
        self.cancelled = False

    async def __aiter__(self) -> AsyncIterator[Message]:
        for m in self.messages:
            if self.cancelled:
                self.status = "cancelled"
                return
            self.chat_messages += 1
            yield m
            await asyncio.sleep(0)
        self.status = "completed"

    def cancel(self) -> None:
        self.cancelled = True


class GivenReplies:
    """An AgentLink whose every reply is ``messages``; ``questions`` records what was asked,
    ``asked`` each question's history, session and card response too."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = list(messages)
        self.questions: list[tuple[str, str]] = []
        self.asked: list[dict[str, Any]] = []

    async def ask(
        self,
        address: str,
        question: str,
        *,
        reasoning: bool = True,
        timeout: float = 120.0,
        history: Any = None,
        session: Any = None,
        card_response: Any = None,
    ) -> Any:
        self.questions.append((address, question))
        self.asked.append(
            {
                "question": question,
                "history": history,
                "session": session,
                "card_response": card_response,
            }
        )
        return _Reply(self.messages)


@contextlib.asynccontextmanager
async def serve_gateway(
    tmp: Path, names: Sequence[str], messages: Sequence[Message], **config: Any
) -> AsyncIterator[tuple[str, GivenReplies]]:
    """(base URL, the link) of a gateway serving the agents ``names`` (listed in a local
    directory under ``tmp``), each answering ``messages``."""
    directory = LocalDirectory(tmp / "agents.json")
    for n in names:
        directory.register(address_of(n), f"http://127.0.0.1:1/{n}", name=n)
    link = GivenReplies(messages)
    gw = Gateway(GatewayConfig(**config), Agents([], directory), link)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(gw),
            host="127.0.0.1",
            port=port,
            log_config=None,
            access_log=False,
            lifespan="off",
        )
    )
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}", link
    finally:
        server.should_exit = True
        await gw.close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
