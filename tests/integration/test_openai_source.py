"""OpenAIModel against a real HTTP server on 127.0.0.1 streaming recorded-shaped chunks.

The server (aiohttp) picks its behaviour from the requested model name: plain text, reasoning
then text, parallel tool calls, index-0 tool calls, a connection cut mid-stream, HTTP 500,
a malformed chunk, an error event, a stall (timeout) and a clean close without finish_reason.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from agent_stream.assemble import assemble
from agent_stream.message import ERROR, Message
from agent_stream.sources.openai import ModelError, OpenAIModel
from agent_stream.writer import StreamWriter

pytestmark = pytest.mark.integration

CID = "chatcmpl-rec1"
REQUESTS = web.AppKey("requests", list)


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
    choices: bool = True,
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "id": CID,
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "rec",
        "system_fingerprint": "fp_1",
    }
    c["choices"] = (
        [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
        if choices
        else []
    )
    if usage is not None:
        c["usage"] = usage
    return c


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}

SCRIPTS: dict[str, list[Any]] = {
    "text": [
        chunk({"role": "assistant", "content": "", "refusal": None}),
        chunk({"content": "Hello"}),
        chunk({"content": ", wor"}),
        chunk({"content": "ld!"}),
        chunk(finish="stop"),
        chunk(choices=False, usage=USAGE),
        "[DONE]",
    ],
    "reasoning": [
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chunk({"reasoning_content": "The user "}),
        chunk({"reasoning_content": "greets me."}),
        chunk({"content": "Hi "}),
        chunk({"content": "there."}),
        chunk(finish="stop"),
        "[DONE]",
    ],
    "tools": [
        chunk({"role": "assistant", "content": None}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_news", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"topic": "ai"}'}}]}),
        chunk(finish="tool_calls"),
        chunk(choices=False, usage=USAGE),
        "[DONE]",
    ],
    "tools-index0": [
        chunk({"role": "assistant"}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"x":'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "g", "arguments": '{"y":'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "2}"}}]}),
        chunk(finish="tool_calls"),
        "[DONE]",
    ],
    "cut": [chunk({"role": "assistant", "content": "Partial "}), chunk({"content": "answ"}), "CUT"],
    "malformed": [chunk({"content": "Before "}), "RAW:data: {not json\n\n"],
    "inband-error": [
        chunk({"content": "Start "}),
        {"error": {"message": "the model is overloaded", "code": "overloaded"}},
    ],
    "stall": [chunk({"content": "Slow "}), "STALL"],
    "no-finish": [chunk({"content": "Never "}), chunk({"content": "finished"})],
}


async def handler(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    request.app[REQUESTS].append(body)
    name = body.get("model")
    if name == "http-500":
        return web.json_response(
            {"error": {"message": "internal failure", "type": "server"}}, status=500
        )
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for item in SCRIPTS[name]:
        if item == "CUT":
            assert request.transport is not None
            request.transport.abort()
            return resp
        if item == "STALL":
            await asyncio.sleep(3)
            return resp
        if item == "[DONE]":
            await resp.write(b"data: [DONE]\n\n")
        elif isinstance(item, str) and item.startswith("RAW:"):
            await resp.write(item[4:].encode())
        else:
            await resp.write(f"data: {json.dumps(item)}\n\n".encode())
    await resp.write_eof()
    return resp


@pytest_asyncio.fixture
async def server() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    app = web.Application()
    app[REQUESTS] = []
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1", app[REQUESTS]
    finally:
        await runner.cleanup()


async def run(base: str, name: str, **kw: Any) -> list[Message]:
    out: list[Message] = []

    async def sink(m: Message) -> None:
        out.append(m)

    model = OpenAIModel(
        base_url=base,
        api_key="test",
        model=name,
        max_retries=0,
        timeout=kw.pop("timeout", 10.0),
        **kw,
    )
    async with StreamWriter(sink) as w:
        await model("hi", w)
    return out


def errors(msgs: list[Message]) -> list[dict[str, Any]]:
    return [m.props or {} for m in msgs if m.type == ERROR]


async def test_text_stream_becomes_one_text_message_with_usage_and_finish_reason(server):
    base, requests = server
    msgs = await run(base, "text")
    t = assemble(msgs)
    assert t.text() == "Hello, world!"
    [m] = t.messages
    assert (m.type, m.status, m.chunk_count) == ("text", "completed", 3)
    assert t.status == "completed"
    assert t.stream_data["usage"] == USAGE
    assert t.stream_data["finish_reason"] == "stop"
    assert [b.status for b in t.blocks] == ["completed"]
    assert requests[0]["stream"] is True
    assert requests[0]["stream_options"] == {"include_usage": True}
    assert requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert not t.warnings


async def test_reasoning_content_is_a_thinking_message_before_the_text(server):
    base, _ = server
    t = assemble(await run(base, "reasoning"))
    assert [(m.type, m.props["content"]) for m in t.messages] == [
        ("thinking", "The user greets me."),
        ("text", "Hi there."),
    ]
    assert len({m.message_id for m in t.messages}) == 2
    assert all(m.status == "completed" for m in t.messages)


async def test_parallel_tool_calls_become_one_message_each_with_full_arguments(server):
    base, _ = server
    t = assemble(await run(base, "tools"))
    calls = [m.props for m in t.messages]
    assert calls == [
        {"id": "call_a", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"id": "call_b", "name": "get_news", "arguments": '{"topic": "ai"}'},
    ]
    assert t.stream_data["finish_reason"] == "tool_calls"
    assert all(json.loads(c["arguments"]) for c in calls)


async def test_tool_calls_reusing_index_zero_are_kept_apart_by_id(server):
    base, _ = server
    t = assemble(await run(base, "tools-index0"))
    assert [(m.props["id"], m.props["name"], m.props["arguments"]) for m in t.messages] == [
        ("call_a", "f", '{"x":1}'),
        ("call_b", "g", '{"y":2}'),
    ]


@pytest.mark.parametrize(
    "name, code, keeps",
    [
        ("cut", "connection_lost", "Partial answ"),
        ("malformed", "malformed_chunk", "Before "),
        ("inband-error", "overloaded", "Start "),
        ("no-finish", "incomplete", "Never finished"),
    ],
)
async def test_a_failure_mid_stream_keeps_the_text_and_ends_with_a_readable_error(
    server, name, code, keeps
):
    base, _ = server
    msgs = await run(base, name)
    t = assemble(msgs)
    assert t.text() == keeps
    [text] = [m for m in t.messages if m.type == "text"]
    assert text.status == "error"
    [err] = errors(msgs)
    assert err["code"] == code
    assert err["message"] and len(err["message"]) > 20
    assert [b.status for b in t.blocks] == ["error"]


async def test_http_500_gives_an_error_message_naming_the_status(server):
    base, _ = server
    msgs = await run(base, "http-500")
    [err] = errors(msgs)
    assert err["code"] == "http_500"
    assert "HTTP 500" in err["message"] and "internal failure" in err["message"]
    assert not [m for m in assemble(msgs).messages if m.type == "text"]


async def test_a_stalled_server_times_out_and_keeps_what_arrived(server):
    base, _ = server
    msgs = await run(base, "stall", timeout=0.3)
    t = assemble(msgs)
    assert t.text() == "Slow "
    [err] = errors(msgs)
    assert err["code"] == "timeout"
    assert "did not answer within 0.3 s" in err["message"]


async def test_no_server_listening_is_a_connection_error():
    msgs = await run("http://127.0.0.1:9/v1", "text", timeout=2.0)
    [err] = errors(msgs)
    assert err["code"] == "connection"
    assert "Could not connect" in err["message"]


async def test_raise_errors_raises_after_the_error_message_and_ends_the_stream_with_error(server):
    base, _ = server
    out: list[Message] = []

    async def sink(m: Message) -> None:
        out.append(m)

    model = OpenAIModel(
        base_url=base, api_key="k", model="http-500", max_retries=0, raise_errors=True
    )
    with pytest.raises(ModelError):
        async with StreamWriter(sink) as w:
            await model("hi", w)
    assert errors(out)
    assert assemble(out).status == "error"


async def test_environment_variables_configure_the_model(server, monkeypatch):
    base, requests = server
    monkeypatch.setenv("OPENAI_BASE_URL", base)
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    monkeypatch.setenv("OPENAI_MODEL", "text")
    model = OpenAIModel(max_retries=0, system="Be brief.")
    out: list[Message] = []

    async def sink(m: Message) -> None:
        out.append(m)

    async with StreamWriter(sink) as w:
        await model("hi", w)
    assert assemble(out).text() == "Hello, world!"
    assert requests[-1]["model"] == "text"
    assert requests[-1]["messages"][0] == {"role": "system", "content": "Be brief."}


async def test_cancelling_the_call_ends_its_message_and_block_as_cancelled(server):
    base, _ = server
    out: list[Message] = []
    got_text = asyncio.Event()

    async def sink(m: Message) -> None:
        out.append(m)
        if m.type == "text":
            got_text.set()

    model = OpenAIModel(base_url=base, api_key="k", model="stall", max_retries=0, timeout=10)
    async with StreamWriter(sink) as w:
        task = asyncio.create_task(model("hi", w))
        await asyncio.wait_for(got_text.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    t = assemble(out)
    assert t.text() == "Slow "
    assert [m.status for m in t.messages] == ["cancelled"]
    assert [b.status for b in t.blocks] == ["cancelled"]
