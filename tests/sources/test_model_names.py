"""Each source names the model of its llm blocks (``gen_ai.request.model`` in telemetry): the
block_start's ``model``, and the reply's usage ``model`` when one model answered."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from source_helpers import block_starts, request, run, stream_end

from agent_stream.sources import responder_for


def llm_models(msgs: list[Any]) -> list[Any]:
    return [b.get("model") for b in block_starts(msgs) if b["type"] == "llm"]


async def test_anthropic_model_from_message_start() -> None:
    async def ask(req: Any) -> AsyncIterator[dict[str, Any]]:
        for ev in (
            {
                "type": "message_start",
                "message": {"model": "claude-x-1", "usage": {"input_tokens": 3}},
            },
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "hi"},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 1}},
            {"type": "message_stop"},
        ):
            yield ev

    msgs, _ = await run(responder_for(ask), request("q"))
    assert llm_models(msgs) == ["claude-x-1"]
    assert stream_end(msgs)["usage"]["model"] == "claude-x-1"


async def test_responses_model_from_response_created() -> None:
    async def ask(req: Any) -> AsyncIterator[dict[str, Any]]:
        for ev in (
            {"type": "response.created", "response": {"model": "gpt-x-2"}},
            {"type": "response.output_text.delta", "output_index": 0, "delta": "hi"},
            {
                "type": "response.completed",
                "response": {"model": "gpt-x-2", "usage": {"input_tokens": 2, "output_tokens": 1}},
            },
        ):
            yield ev

    msgs, _ = await run(responder_for(ask), request("q"))
    assert llm_models(msgs) == ["gpt-x-2"]
    assert stream_end(msgs)["usage"]["model"] == "gpt-x-2"


async def test_pydantic_ai_model_name() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    agent = Agent(TestModel(model_name="tiny-3"), name="named")
    msgs, _ = await run(responder_for(agent), request("q"))
    assert llm_models(msgs) == ["tiny-3"]
    assert stream_end(msgs)["usage"]["model"] == "tiny-3"
    # a run option's model wins over the agent's
    from agent_stream.sources.pydantic_ai import responder

    msgs, _ = await run(responder(agent, model=TestModel(model_name="other-4")), request("q"))
    assert llm_models(msgs) == ["other-4"]


async def test_langgraph_model_from_the_chat_models_own_name() -> None:
    pytest.importorskip("langgraph")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.graph import START, MessagesState, StateGraph

    class Named(GenericFakeChatModel):
        def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
            return {**super()._get_ls_params(stop=stop, **kwargs), "ls_model_name": "lc-5"}

    model = Named(messages=iter(["hello there"]))

    async def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("model", node)
    g.add_edge(START, "model")
    msgs, _ = await run(responder_for(g.compile()), request("q"))
    assert llm_models(msgs) == ["lc-5"]


async def test_several_models_leave_the_replys_usage_unnamed() -> None:
    async def ask(req: Any) -> AsyncIterator[dict[str, Any]]:
        for model in ("claude-a", "claude-b"):
            for ev in (
                {"type": "message_start", "message": {"model": model, "usage": {}}},
                {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 1}},
                {"type": "message_stop"},
            ):
                yield ev

    msgs, _ = await run(responder_for(ask), request("q"))
    assert llm_models(msgs) == ["claude-a", "claude-b"]
    assert "model" not in stream_end(msgs)["usage"]


async def test_the_model_is_the_chat_spans_gen_ai_request_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from inprocess_agents import Pair
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agent_stream import telemetry
    from agent_stream.uagents import StreamingChat

    async def ask(req: Any) -> AsyncIterator[dict[str, Any]]:
        for ev in (
            {"type": "response.created", "response": {"model": "gpt-x-6"}},
            {"type": "response.output_text.delta", "output_index": 0, "delta": "hi"},
            {
                "type": "response.completed",
                "response": {"usage": {"input_tokens": 2, "output_tokens": 1}},
            },
        ):
            yield ev

    monkeypatch.delenv(telemetry.CAPTURE_ENV, raising=False)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry._reset_for_tests()
    telemetry.configure(tracer_provider=provider)
    pair = Pair()
    try:
        server = pair.add("model name server", StreamingChat(responder_for(ask)), name="named")
        client_chat = StreamingChat()
        client = pair.add("model name client", client_chat)
        reply = await client_chat.ask(client._build_context(), server.address, "q")
        await asyncio.wait_for(reply.wait(), 10)
        for _ in range(200):
            spans = exporter.get_finished_spans()
            if any(s.name.startswith("invoke_agent named") for s in spans):
                break
            await asyncio.sleep(0.02)
        [chat] = [s for s in spans if s.name.startswith("chat ")]
        [root] = [s for s in spans if s.name.startswith("invoke_agent named")]
        assert (chat.attributes or {})["gen_ai.request.model"] == "gpt-x-6"
        assert (root.attributes or {})["gen_ai.request.model"] == "gpt-x-6"
    finally:
        await pair.close()
        telemetry._reset_for_tests()
