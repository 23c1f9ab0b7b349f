"""pydantic-ai agents on its own FunctionModel / TestModel, streamed through the source."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingPart,
    DeltaToolCall,
    FunctionModel,
)
from pydantic_ai.models.test import TestModel
from source_helpers import block_starts, contents, of_type, request, run, stream_end

from agent_stream.message import Message
from agent_stream.sources import responder_for
from agent_stream.sources.pydantic_ai import responder, run_sub_agent
from agent_stream.writer import StreamWriter

RESULTS: list[Any] = []


def weather_agent(sub_done: list[bool] | None = None) -> Agent[None, str]:
    async def stream_fn(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaThinkingPart(content="I need the weather")}
            yield {1: DeltaToolCall(name="get_weather", json_args='{"city":', tool_call_id="c1")}
            yield {
                2: DeltaToolCall(
                    name="get_weather", json_args='{"city": "Rome"}', tool_call_id="c2"
                )
            }
            yield {1: DeltaToolCall(json_args=' "Paris"}')}
        else:
            for w in ("Sunny ", "in ", "both."):
                yield w

    agent = Agent(FunctionModel(stream_function=stream_fn), name="weather")
    helper = Agent(TestModel(custom_output_text="it is summer everywhere"), name="helper")

    @agent.tool_plain
    async def get_weather(city: str) -> str:
        r = await run_sub_agent(helper, f"season in {city}?")
        if sub_done is not None:
            sub_done.append(True)
        return f"sunny in {city} ({r.output})"

    return agent


async def test_transcript_equals_the_run_result() -> None:
    agent = weather_agent()
    msgs, t = await run(responder_for(agent), request("Weather?"))
    # the same run, as the framework itself reports it
    async with agent.run_stream_events("Weather?") as events:
        result = [e async for e in events][-1].result
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    parts = [p for r in responses for p in r.parts]
    assert contents(t, "thinking") == [p.content for p in parts if p.part_kind == "thinking"]
    assert t.text() == "it is summer everywhere" * 2 + result.output  # sub-agents first
    calls = [p for p in parts if p.part_kind == "tool-call"]
    assert [
        (c.props["id"], c.props["name"], json.loads(c.props["arguments"]))
        for c in of_type(t, "tool_call")
    ] == [(p.tool_call_id, p.tool_name, p.args_as_dict()) for p in calls]
    returns = [p for m in result.all_messages() for p in m.parts if p.part_kind == "tool-return"]
    assert [(r.props["call_id"], r.props["content"]) for r in of_type(t, "tool_result")] == [
        (p.tool_call_id, p.content) for p in returns
    ]
    subs = [b for b in block_starts(msgs) if b["type"] == "agent"]
    assert [(b["label"], b["agent_name"]) for b in subs] == [("helper", "helper")] * 2
    first_llm = block_starts(msgs)[0]
    assert all(b["parent_block_id"] == first_llm["block_id"] for b in subs)
    # usage: the run's own (its model requests) plus the sub-agents' runs
    u = stream_end(msgs)["usage"]
    sub_usage = (
        await Agent(TestModel(custom_output_text="it is summer everywhere")).run("season in Paris?")
    ).usage
    assert u["prompt_tokens"] == result.usage.input_tokens + 2 * sub_usage.input_tokens
    assert u["completion_tokens"] == result.usage.output_tokens + 2 * sub_usage.output_tokens


async def test_sub_agent_streams_live() -> None:
    done: list[bool] = []
    live: list[bool] = []

    async def sink(m: Message) -> None:
        if m.type == "text" and m.delta and not live:
            live.append(not done)

    async with StreamWriter(sink) as out:
        await responder(weather_agent(done))(request("q"), out)
    assert live == [True]


async def test_history_reaches_message_history() -> None:
    seen: list[list[ModelMessage]] = []

    async def stream_fn(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        seen.append(messages)
        yield "ok"

    agent = Agent(FunctionModel(stream_function=stream_fn))
    _, t = await run(
        responder(agent), request("third", history=(("user", "first"), ("assistant", "second")))
    )
    assert t.text() == "ok"
    kinds = [(type(m).__name__, m.parts[0].content) for m in seen[0]]
    assert kinds == [
        ("ModelRequest", "first"),
        ("ModelResponse", "second"),
        ("ModelRequest", "third"),
    ]


async def test_model_error_mid_stream() -> None:
    async def stream_fn(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        yield "partial "
        raise RuntimeError("the model fell over")

    msgs, t = await run(responder(Agent(FunctionModel(stream_function=stream_fn))), request("q"))
    assert t.text() == "partial " and stream_end(msgs)["status"] == "error"
    assert "the model fell over" in of_type(t, "error")[0].props["message"]


async def test_cancel_reaches_the_tool() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()
    agent = Agent(TestModel(call_tools=["wait"]))

    @agent.tool_plain
    async def wait() -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    got: list[Message] = []

    async def sink(m: Message) -> None:
        got.append(m)

    async def body() -> None:
        async with StreamWriter(sink) as out:
            await responder(agent)(request("q"), out)

    task = asyncio.create_task(body())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    await asyncio.wait_for(cancelled.wait(), 1)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert got[-1].event_data["status"] == "cancelled"


async def test_over_real_agents() -> None:
    from inprocess_agents import Pair

    from agent_stream.uagents import StreamingChat

    pair = Pair()
    try:
        server = pair.add(
            "pydantic-ai source server", StreamingChat(responder_for(weather_agent()))
        )
        client_chat = StreamingChat()
        client = pair.add("pydantic-ai source client", client_chat)
        reply = await client_chat.ask(client._build_context(), server.address, "Weather?")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed and t.text().endswith("Sunny in both.")
        assert [b.label for b in t.blocks if b.type == "agent"] == ["helper", "helper"]
    finally:
        await pair.close()


async def test_three_turns_remember_over_real_agents() -> None:
    from inprocess_agents import Pair

    from agent_stream.uagents import StreamingChat

    async def recall(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        said = [
            p.content
            for m in messages
            for p in m.parts
            if getattr(p, "part_kind", "") == "user-prompt"
        ]
        yield " | ".join(str(s) for s in said)

    pair = Pair()
    try:
        server = pair.add(
            "pydantic-ai memory server",
            StreamingChat(responder_for(Agent(FunctionModel(stream_function=recall)))),
        )
        client_chat = StreamingChat()
        client = pair.add("pydantic-ai memory client", client_chat)
        ctx = client._build_context()  # one context: one session
        texts = []
        for q in ("one", "two", "three"):
            reply = await client_chat.ask(ctx, server.address, q)
            texts.append((await asyncio.wait_for(reply.wait(), 20)).text())
        assert texts == ["one", "one | two", "one | two | three"]
    finally:
        await pair.close()


async def test_a_failing_sub_agent_ends_its_block_with_error() -> None:
    async def broken(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        yield "half "
        raise RuntimeError("sub-agent model down")

    helper = Agent(FunctionModel(stream_function=broken), name="helper")
    agent = Agent(TestModel(call_tools=["ask_helper"]), name="lead")

    @agent.tool_plain
    async def ask_helper() -> str:
        return str((await run_sub_agent(helper, "help")).output)

    msgs, t = await run(responder(agent), request("q"))
    [sub] = [b for b in t.blocks if b.type == "agent"]
    assert sub.label == "helper" and sub.status == "error"
    assert "half " in t.text() and stream_end(msgs)["status"] == "error"
    assert "sub-agent model down" in of_type(t, "error")[0].props["message"]


async def test_structured_output_is_also_the_answer_text() -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        population: int

    agent = Agent(TestModel(), output_type=City)
    _, t = await run(responder(agent), request("q"))
    result = await agent.run("q")
    [call] = of_type(t, "tool_call")
    assert json.loads(call.props["arguments"]) == result.output.model_dump()
    assert json.loads(t.text()) == result.output.model_dump()


def approval_agent(ran: list[str]) -> Agent[None, Any]:
    from pydantic_ai import DeferredToolRequests

    agent: Agent[None, Any] = Agent(
        TestModel(), output_type=[str, DeferredToolRequests], name="ops"
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    return agent


async def test_a_call_waiting_for_approval_asks_and_a_yes_resumes_it() -> None:
    ran: list[str] = []
    respond = responder(approval_agent(ran))
    msgs, t = await run(respond, request("delete a", session="ops1"))
    [asked] = of_type(t, "user_input")
    [call] = of_type(t, "tool_call")
    assert (asked.props["kind"], asked.props["name"]) == ("approval", "delete_file")
    assert asked.props["call_id"] == call.props["id"]
    assert json.loads(asked.props["arguments"]) == json.loads(call.props["arguments"])
    assert "Approve delete_file" in asked.props["content"]
    assert stream_end(msgs)["status"] == "completed" and ran == []
    msgs, t = await run(respond, request("yes", session="ops1"))
    assert ran == ["a"]
    [result] = of_type(t, "tool_result")
    assert (result.props["call_id"], result.props["content"]) == (call.props["id"], "deleted a")
    assert "deleted a" in t.text() and stream_end(msgs)["status"] == "completed"
    # answered: the session's next message is a new question again
    _, t = await run(respond, request("delete b", session="ops1"))
    assert of_type(t, "user_input") and ran == ["a"]


async def test_anything_but_yes_refuses_the_call_with_its_text() -> None:
    ran: list[str] = []
    respond = responder(approval_agent(ran))
    await run(respond, request("delete a", session="ops2"))
    _, t = await run(respond, request("no, keep it", session="ops2"))
    assert ran == []
    [result] = of_type(t, "tool_result")
    assert result.props["content"] == "The user refused: no, keep it"


async def test_a_waiting_call_without_a_session_is_asked_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []
    with caplog.at_level("WARNING", logger="agent_stream.sources"):
        msgs, t = await run(responder(approval_agent(ran)), request("delete a"))
    assert of_type(t, "user_input") and stream_end(msgs)["status"] == "completed"
    assert "pydantic-ai deferred tool calls not mapped" in caplog.text


async def test_approval_and_resume_over_real_agents() -> None:
    from inprocess_agents import Pair

    from agent_stream.uagents import StreamingChat

    ran: list[str] = []
    pair = Pair()
    try:
        server = pair.add(
            "pydantic-ai approval server", StreamingChat(responder(approval_agent(ran)))
        )
        client_chat = StreamingChat()
        client = pair.add("pydantic-ai approval client", client_chat)
        ctx = client._build_context()  # one context: one session
        reply = await client_chat.ask(ctx, server.address, "delete a")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed and ran == []
        [asked] = [m for m in t.messages if m.type == "user_input"]
        assert asked.props["name"] == "delete_file" and asked.props["kind"] == "approval"
        reply = await client_chat.ask(ctx, server.address, "yes")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed and ran == ["a"] and "deleted a" in t.text()
    finally:
        await pair.close()
