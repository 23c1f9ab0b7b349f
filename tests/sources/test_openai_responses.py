"""OpenAI Responses streams (and chat-completion chunks) through the real ``openai`` SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from source_helpers import block_starts, contents, of_type, request, run, stream_end  # noqa: E402
from sse_replay import Script, SSEServer, responses_frames, serve  # noqa: E402

from agent_stream.sources import responder_for  # noqa: E402
from agent_stream.sources.openai_responses import responder  # noqa: E402


@pytest.fixture
async def server(request: pytest.FixtureRequest) -> AsyncIterator[SSEServer]:
    async for s in serve(request.param):
        yield s


@pytest.mark.parametrize(
    "server",
    [
        [
            Script(
                responses_frames(
                    reasoning="Need the weather",
                    call=("call_9", "get_weather", '{"city": "Paris"}'),
                )
            ),
            Script(responses_frames(text="Sunny in Paris.", usage=(40, 5))),
        ]
    ],
    indirect=True,
)
async def test_transcript_equals_the_final_responses(server: SSEServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x")
    finals: list[Any] = []

    async def ask(req: Any) -> AsyncIterator[Any]:
        for _ in range(2):
            stream = await client.responses.create(model="gpt-test", input=req.text, stream=True)
            async for ev in stream:
                if ev.type == "response.completed":
                    finals.append(ev.response)
                yield ev

    msgs, t = await run(responder_for(ask), request("Weather?"))
    first, second = finals
    assert contents(t, "thinking") == [first.output[0].summary[0].text]
    [call] = of_type(t, "tool_call")
    fc = first.output[1]
    assert (call.props["id"], call.props["name"]) == (fc.call_id, fc.name)
    assert json.loads(call.props["arguments"]) == json.loads(fc.arguments)
    assert t.text() == second.output_text
    assert [b["label"] for b in block_starts(msgs)] == ["gpt-test", "gpt-test"]
    u = stream_end(msgs)["usage"]
    assert u["prompt_tokens"] == first.usage.input_tokens + second.usage.input_tokens
    assert u["total_tokens"] == first.usage.total_tokens + second.usage.total_tokens


@pytest.mark.parametrize("server", [[Script(responses_frames(text="x y z"))]], indirect=True)
async def test_responder_module_and_failed_response(server: SSEServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x")

    async def ask(req: Any) -> Any:
        return await client.responses.create(model="gpt-test", input=req.text, stream=True)

    msgs, t = await run(responder(ask, label="writer"), request("q"))
    assert t.text() == "x y z" and block_starts(msgs)[0]["label"] == "writer"

    async def failing(req: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "response.created", "response": {"model": "m"}}
        yield {"type": "response.output_text.delta", "item_id": "i", "delta": "half"}
        yield {
            "type": "response.failed",
            "response": {"error": {"code": "server_error", "message": "boom"}},
        }

    msgs, t = await run(responder(failing), request("q"))
    assert t.text() == "half" and stream_end(msgs)["status"] == "error"
    assert of_type(t, "error")[0].props["code"] == "server_error"


async def test_chat_completion_and_litellm_shaped_chunks() -> None:
    class LiteLLMChunk:  # LiteLLM's ModelResponseStream is a pydantic model with model_dump
        def __init__(self, d: dict[str, Any]) -> None:
            self.d = d

        def model_dump(self) -> dict[str, Any]:
            return self.d

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "llama",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    async def ask(req: Any) -> AsyncIterator[Any]:
        yield LiteLLMChunk(chunk({"role": "assistant", "reasoning_content": "hmm"}))
        yield LiteLLMChunk(chunk({"content": "Hello "}))
        yield LiteLLMChunk(chunk({"content": "there"}, "stop"))
        yield LiteLLMChunk(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "llama",
                "choices": [],
                "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7},
            }
        )

    msgs, t = await run(responder_for(ask), request("q"))
    assert t.text() == "Hello there" and contents(t, "thinking") == ["hmm"]
    assert stream_end(msgs)["usage"]["total_tokens"] == 7
    assert block_starts(msgs)[0]["label"] == "llama"


async def test_unknown_stream_is_an_error_naming_it() -> None:
    async def ask(req: Any) -> AsyncIterator[Any]:
        yield 42

    msgs, t = await run(responder_for(ask), request("q"))
    assert stream_end(msgs)["status"] == "error"
    assert "first event" in of_type(t, "error")[0].props["message"]


def test_unknown_app_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="a int"):
        responder_for(42)
    with pytest.raises(TypeError, match="the class"):
        responder_for(dict)


@pytest.mark.parametrize(
    "server", [[Script(responses_frames(reasoning="Think", text="Done."))]], indirect=True
)
async def test_over_real_agents_reasoning_shared_when_asked(server: SSEServer) -> None:
    import asyncio

    from inprocess_agents import Pair

    from agent_stream.uagents import StreamingChat

    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x")

    async def ask(req: Any) -> Any:
        return await client.responses.create(model="gpt-test", input=req.text, stream=True)

    pair = Pair()
    try:
        srv = pair.add(
            "responses source server", StreamingChat(responder_for(ask), channels={"reasoning"})
        )
        client_chat = StreamingChat()
        asker = pair.add("responses source client", client_chat)
        reply = await client_chat.ask(
            asker._build_context(), srv.address, "go", channels={"reasoning"}
        )
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed and t.text() == "Done."
        assert contents(t, "thinking") == ["Think"]
    finally:
        await pair.close()
