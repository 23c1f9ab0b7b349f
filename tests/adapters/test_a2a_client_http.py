"""The ``a2a-sdk`` client reading A2AEncoder's stream over real HTTP on 127.0.0.1, served in
5-byte pieces, as A2A 0.3 (the encoder's own frames, read by the SDK's 0.3 transport) and as
A2A 1.0 (the same events through ``versions.core_json``): the task it ends up with is the
transcript's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, TaskState
from a2a_sdk import ask, client_for, collect, texts
from aiohttp import web
from wire_corpus import corpus

from agent_stream import jsontext
from agent_stream.adapters.a2a import A2AEncoder
from agent_stream.adapters.a2a.encoder import frame_sse
from agent_stream.adapters.a2a.versions import core_json
from agent_stream.adapters.framing import run_encoder
from agent_stream.assemble import assemble


@pytest.fixture
async def server() -> AsyncIterator[str]:
    streams = corpus()

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        events = run_encoder(A2AEncoder(), streams[request.match_info["name"]])
        if body["method"] == "message/stream":
            data = "".join(frame_sse(e, body["id"]) for e in events)
        else:
            assert body["method"] == "SendStreamingMessage"
            assert request.headers["A2A-Version"] == "1.0"
            data = "".join(
                "data: "
                + jsontext.dumps({"jsonrpc": "2.0", "id": body["id"], "result": core_json(e)})
                + "\n\n"
                for e in events
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


async def read_task(url: str, version: str) -> Any:
    card = AgentCard(
        name="t",
        description="t",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=version)
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
    )
    async with httpx.AsyncClient(timeout=30) as http:
        built = await collect(client_for(card, http, version).send_message(ask("hi")))
    return await built.task()


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
@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_the_sdk_client_ends_with_the_transcript(
    server: str, name: str, version: str, caplog: Any
) -> None:
    caplog.set_level(logging.WARNING, logger="a2a")
    task = await read_task(f"{server}/{name}", version)
    t = assemble(corpus()[name])
    assert texts(task) == [m.content for m in t.messages if m.type == "text"]
    want = {
        "completed": TaskState.TASK_STATE_COMPLETED,
        "error": TaskState.TASK_STATE_FAILED,
        "cancelled": TaskState.TASK_STATE_CANCELED,
        "streaming": TaskState.TASK_STATE_FAILED,
    }[t.status or ""]
    assert task is not None and task.status.state == want
    if t.status == "error":
        assert task.status.message.parts[0].text == t.stream_data["error"]
    assert not caplog.records, [r.getMessage() for r in caplog.records]
