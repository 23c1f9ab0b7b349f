"""The official ``openai`` client reads our OpenAI wire over real HTTP on 127.0.0.1.

A small aiohttp server streams a StreamWriter reply through ``sink_for("standard", ...)``;
``AsyncOpenAI(...).chat.completions.create(stream=True)`` reads it like any model server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import openai
import pytest
import pytest_asyncio
from aiohttp import web
from openai_fixtures import USAGE, reply

from agent_stream.adapters.routing import sink_for
from agent_stream.assemble import assemble
from agent_stream.message import Message
from agent_stream.writer import StreamWriter

Body = Callable[[StreamWriter], Awaitable[None]]
BODY = web.AppKey("body", dict)


async def failing(out: StreamWriter) -> None:
    async with out.message("text") as m:
        await m.append("Half ")
        raise RuntimeError("the tool crashed")


async def handler(request: web.Request) -> web.StreamResponse:
    req = await request.json()
    body: Body = request.app[BODY][req["model"]]
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    seen: list[Message] = request.app[BODY]["seen"]

    async def write(text: str) -> None:
        await resp.write(text.encode())

    include = bool((req.get("stream_options") or {}).get("include_usage"))
    # a client that declares tools gets the agent's calls as tool_calls; others as progress
    policy = "client" if req.get("tools") else "agent"
    sink = sink_for("standard", write, include_usage=include, model=req["model"], tool_calls=policy)

    async def tee(m: Message) -> None:
        seen.append(m)
        await sink(m)

    try:
        async with StreamWriter(tee, request_id="r1") as w:
            await body(w)
    except RuntimeError:
        pass
    await resp.write_eof()
    return resp


@pytest_asyncio.fixture
async def base() -> AsyncIterator[tuple[str, list[Message]]]:
    app = web.Application()
    seen: list[Message] = []
    app[BODY] = {"reply": reply, "failing": failing, "seen": seen}
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1", seen
    finally:
        await runner.cleanup()


async def _read(url: str, **kw: Any) -> dict[str, Any]:
    """What AsyncOpenAI accumulates from one streamed reply."""
    got: dict[str, Any] = {
        "content": "",
        "reasoning": "",
        "finish": [],
        "ids": set(),
        "usage": None,
        "tools": {},
    }
    async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as client:
        stream = await client.chat.completions.create(
            model="reply",
            messages=[{"role": "user", "content": "weather?"}],
            stream=True,
            stream_options={"include_usage": True},
            **kw,
        )
        async for chunk in stream:
            got["ids"].add(chunk.id)
            if chunk.usage is not None:
                got["usage"] = chunk.usage
            for c in chunk.choices:
                got["content"] += c.delta.content or ""
                got["reasoning"] += (c.delta.model_extra or {}).get("reasoning_content") or ""
                for t in c.delta.tool_calls or []:
                    slot = got["tools"].setdefault(t.index, {"id": "", "name": "", "args": ""})
                    slot["id"] += t.id or ""
                    slot["name"] += (t.function.name if t.function else None) or ""
                    slot["args"] += (t.function.arguments if t.function else None) or ""
                if c.finish_reason:
                    got["finish"].append(c.finish_reason)
    return got


async def test_the_openai_client_accumulates_exactly_the_transcript(base) -> None:
    url, seen = base
    got = await _read(url)
    t = assemble(seen)
    assert got["content"] == t.text()
    assert got["content"].startswith("Weather: sunny, 25°C. News: all quiet. word0 ")
    assert got["reasoning"] == 'Let me check.\n⚙ search({"q": "weather"})\n'
    assert got["tools"] == {}  # the agent ran its tool: progress, not a request
    assert got["finish"] == ["stop"]
    assert got["ids"] == {"chatcmpl-r1"}
    assert got["usage"] is not None and got["usage"].total_tokens == USAGE["total_tokens"]


async def test_a_client_that_declares_tools_gets_tool_calls(base) -> None:
    url, _ = base
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    got = await _read(url, tools=tools)
    assert got["reasoning"] == "Let me check."
    assert got["tools"] == {0: {"id": "call_1", "name": "search", "args": '{"q": "weather"}'}}
    assert got["finish"] == ["stop"]


async def test_a_failed_stream_is_raised_by_the_client_after_the_text_it_sent(base) -> None:
    url, _ = base
    got = ""
    async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as client:
        stream = await client.chat.completions.create(
            model="failing", messages=[{"role": "user", "content": "x"}], stream=True
        )
        with pytest.raises(openai.APIError) as info:
            async for chunk in stream:
                for c in chunk.choices:
                    got += c.delta.content or ""
    assert got == "Half "
    assert "RuntimeError: the tool crashed" in info.value.message
