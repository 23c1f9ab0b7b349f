"""Raw Anthropic streams through the real ``anthropic`` SDK, replayed by a local server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")

from source_helpers import block_starts, contents, of_type, request, run, stream_end  # noqa: E402
from sse_replay import Script, SSEServer, anthropic_frames, serve  # noqa: E402

from agent_stream.sources import responder_for  # noqa: E402
from agent_stream.sources.anthropic import responder  # noqa: E402


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[SSEServer]:
    async for s in serve(request.param):
        yield s


TWO = [
    Script(
        anthropic_frames(
            thinking="I should look it up",
            tool=("toolu_1", "get_weather", '{"city": "Paris"}'),
            input_tokens=30,
            output_tokens=11,
        )
    ),
    Script(
        anthropic_frames(
            text="It is sunny in Paris.", input_tokens=55, output_tokens=8, msg_id="msg_2"
        )
    ),
]


@pytest.mark.parametrize("server", [TWO], indirect=True)
async def test_transcript_equals_what_the_sdk_accumulates(server: SSEServer) -> None:
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="x")
    finals: list[Any] = []

    async def ask(req: Any) -> AsyncIterator[Any]:
        # two model calls: the tool use, then the answer; the SDK's helper stream also yields
        # its convenience events (text, thinking, input_json...) beside the raw ones
        for _ in range(2):
            async with client.messages.stream(
                model="claude-test",
                max_tokens=100,
                messages=[{"role": "user", "content": req.text}],
            ) as s:
                async for ev in s:
                    yield ev
                finals.append(await s.get_final_message())

    msgs, t = await run(responder_for(ask), request("Weather in Paris?"))
    first, second = finals
    assert contents(t, "thinking") == [first.content[0].thinking]
    [thinking] = of_type(t, "thinking")
    assert thinking.props["metadata"] == {"signature": first.content[0].signature}
    [call] = of_type(t, "tool_call")
    assert (call.props["id"], call.props["name"]) == (first.content[1].id, first.content[1].name)
    assert json.loads(call.props["arguments"]) == first.content[1].input
    assert t.text() == second.content[0].text
    blocks = block_starts(msgs)
    assert [(b["type"], b["label"]) for b in blocks] == [("llm", "claude-test")] * 2
    usage = stream_end(msgs)["usage"]
    assert usage["prompt_tokens"] == first.usage.input_tokens + second.usage.input_tokens
    assert usage["completion_tokens"] == first.usage.output_tokens + second.usage.output_tokens
    assert stream_end(msgs)["status"] == "completed"
    # the tool call's arguments streamed as deltas after its id and name
    deltas = [m for m in msgs if m.type == "tool_call" and m.delta]
    assert len(deltas) > 1


@pytest.mark.parametrize(
    "server", [[Script(anthropic_frames(text="one two three"))]], indirect=True
)
async def test_raw_create_stream_and_request_reaches_the_callable(server: SSEServer) -> None:
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="x")

    async def ask(req: Any) -> Any:
        history = [{"role": tr.role, "content": tr.text} for tr in req.history]
        return await client.messages.create(
            model="claude-test",
            max_tokens=100,
            stream=True,
            messages=[*history, {"role": "user", "content": req.text}],
        )

    _, t = await run(
        responder(ask), request("and now?", history=(("user", "hi"), ("assistant", "hello")))
    )
    assert t.text() == "one two three"
    assert server.requests[0]["messages"][:2] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


@pytest.mark.parametrize(
    "server", [[Script(anthropic_frames(text="a b c d e f"), cut_after=5)]], indirect=True
)
async def test_connection_lost_mid_stream_is_an_error(server: SSEServer) -> None:
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="x", max_retries=0)

    async def ask(req: Any) -> Any:
        return await client.messages.create(
            model="claude-test",
            max_tokens=10,
            stream=True,
            messages=[{"role": "user", "content": req.text}],
        )

    msgs, t = await run(responder(ask), request("q"))
    assert stream_end(msgs)["status"] == "error"
    assert of_type(t, "error") and t.text().startswith("a b")
    assert all(b.status == "error" for b in t.blocks)


async def test_error_event_and_redacted_thinking() -> None:
    events = [
        {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "ENCRYPTED"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "partial"},
        },
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]

    async def ask(req: Any) -> AsyncIterator[dict[str, Any]]:
        for e in events:
            yield e

    msgs, t = await run(responder(ask), request("q"))
    assert "ENCRYPTED" not in t.text() and not of_type(t, "thinking")
    ends = [m.event_data for m in msgs if m.event == "block_end"]
    assert ends[0]["metadata"] == {"redacted_thinking": ["ENCRYPTED"]}
    [err] = of_type(t, "error")
    assert err.props["code"] == "overloaded_error" and "Overloaded" in err.props["message"]
    assert stream_end(msgs)["status"] == "error"


@pytest.mark.parametrize(
    "server", [[Script(anthropic_frames(text=" ".join(["w"] * 200)), delay=0.02)]], indirect=True
)
async def test_cancel_closes_the_model_stream(server: SSEServer) -> None:
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="x")

    async def ask(req: Any) -> Any:
        return await client.messages.create(
            model="claude-test",
            max_tokens=10,
            stream=True,
            messages=[{"role": "user", "content": req.text}],
        )

    got: list[Any] = []

    async def sink(m: Any) -> None:
        got.append(m)

    from agent_stream.writer import StreamWriter

    async def body() -> None:
        async with StreamWriter(sink) as out:
            await responder(ask)(request("q"), out)

    task = asyncio.create_task(body())
    while not any(m.type == "text" for m in got):
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(server.cancelled.wait(), 1)
    assert got[-1].event_data["status"] == "cancelled"


async def test_citations_stay_on_their_text() -> None:
    async def ask(req: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 1}}}
        yield {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        yield {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Paris"},
        }
        for c in ("x", "y"):
            yield {
                "type": "content_block_delta",
                "index": 0,
                "delta": {
                    "type": "citations_delta",
                    "citation": {"cited_text": c, "type": "char_location"},
                },
            }
        yield {"type": "content_block_stop", "index": 0}
        yield {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 2},
        }
        yield {"type": "message_stop"}

    msgs, t = await run(responder(ask), request("q"))
    [m] = t.messages
    assert m.props["content"] == "Paris"
    assert [c["cited_text"] for c in m.props["citations"]] == ["x", "y"]
    assert stream_end(msgs)["usage"]["total_tokens"] == 3


async def test_cached_input_counts_and_a_plain_list_is_a_stream() -> None:
    events = [
        {
            "type": "message_start",
            "message": {
                "model": "m",
                "usage": {
                    "input_tokens": 5,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 20,
                    "output_tokens": 1,
                },
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": "hi"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    msgs, t = await run(responder(lambda req: events), request("q"))
    assert t.text() == "hi"
    assert stream_end(msgs)["usage"] == {
        "prompt_tokens": 125,
        "completion_tokens": 3,
        "total_tokens": 128,
        "model": "m",  # the one model that answered
    }


@pytest.mark.parametrize(
    "server",
    [
        [
            Script(anthropic_frames(thinking="hmm", text="Hi there.")),
            Script(anthropic_frames(text="Again.")),
        ]
    ],
    indirect=True,
)
async def test_over_real_agents_with_history(server: SSEServer) -> None:
    from inprocess_agents import Pair

    from agent_stream.uagents import StreamingChat

    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="x")

    async def ask(req: Any) -> Any:
        history = [{"role": tr.role, "content": tr.text} for tr in req.history]
        return await client.messages.create(
            model="claude-test",
            max_tokens=100,
            stream=True,
            messages=[*history, {"role": "user", "content": req.text}],
        )

    pair = Pair()
    try:
        srv = pair.add("anthropic source server", StreamingChat(responder_for(ask)))
        client_chat = StreamingChat()
        asker = pair.add("anthropic source client", client_chat)
        ctx = asker._build_context()
        reply = await client_chat.ask(ctx, srv.address, "hello")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed and t.text() == "Hi there."
        assert not [m for m in t.messages if m.type == "thinking"]  # reasoning: not asked for
        reply = await client_chat.ask(ctx, srv.address, "again")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert t.text() == "Again."
        assert server.requests[1]["messages"] == [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "Hi there."},
            {"role": "user", "content": "again"},
        ]
    finally:
        await pair.close()
