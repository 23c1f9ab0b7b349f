"""The ``a2a-sdk`` client reading A2AEncoder's stream over real HTTP on 127.0.0.1, served in
5-byte pieces: the task it ends up with is the transcript's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCapabilities, AgentCard, Message, Part, Role, TaskState, TextPart
from aiohttp import web
from wire_corpus import corpus

from agent_stream.adapters.a2a import A2AEncoder
from agent_stream.adapters.a2a.encoder import frame_sse
from agent_stream.adapters.framing import run_encoder
from agent_stream.assemble import assemble


@pytest.fixture
async def server() -> AsyncIterator[str]:
    streams = corpus()

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        assert body["method"] == "message/stream"
        data = "".join(
            frame_sse(e, body["id"])
            for e in run_encoder(A2AEncoder(), streams[request.match_info["name"]])
        )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        raw = data.encode()
        for i in range(0, len(raw), 5):
            await resp.write(raw[i : i + 5])
            await asyncio.sleep(0)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/{name}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def read_task(url: str) -> Any:
    card = AgentCard(
        name="t",
        description="t",
        version="1",
        url=url,
        skills=[],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
    )
    task = None
    async with httpx.AsyncClient(timeout=30) as http:
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        msg = Message(
            role=Role.user, message_id=str(uuid4()), parts=[Part(root=TextPart(text="hi"))]
        )
        async for item in client.send_message(msg):
            if isinstance(item, tuple):
                task = item[0]
    return task


@pytest.mark.integration
@pytest.mark.parametrize(
    "name",
    [
        "parallel_threads",
        "error_mid_thread",
        "cancelled",
        "rewrites_retypes",
        "unicode_emoji",
        "cut_stream",
    ],
)
async def test_the_sdk_client_ends_with_the_transcript(server: str, name: str, caplog: Any) -> None:
    caplog.set_level(logging.WARNING, logger="a2a")
    task = await read_task(f"{server}/{name}")
    t = assemble(corpus()[name])
    texts = [
        "".join(p.root.text for p in a.parts)  # type: ignore[union-attr]
        for a in task.artifacts or []
        if a.name == "text"
    ]
    assert texts == [m.content for m in t.messages if m.type == "text"]
    want = {
        "completed": TaskState.completed,
        "error": TaskState.failed,
        "cancelled": TaskState.canceled,
        "streaming": TaskState.failed,
    }[t.status or ""]
    assert task.status.state == want
    if t.status == "error":
        assert task.status.message.parts[0].root.text == t.stream_data["error"]
    assert not caplog.records, [r.getMessage() for r in caplog.records]
