"""LangGraph graphs with LangChain's own fake chat models, streamed through the source."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Send, interrupt
from source_helpers import block_starts, contents, of_type, request, run, stream_end

from agent_stream.message import Message
from agent_stream.sources import responder_for
from agent_stream.sources.approvals import thread_id
from agent_stream.sources.langgraph import responder
from agent_stream.writer import StreamWriter

SEEN: list[list[BaseMessage]] = []  # what the fake models were asked, in order


class ToolFake(FakeMessagesListChatModel):
    """The fake model with tools bound (the base class raises NotImplementedError)."""

    def bind_tools(self, tools: Any, **kw: Any) -> ToolFake:
        return self

    async def _agenerate(self, messages: list[BaseMessage], *a: Any, **kw: Any) -> Any:
        SEEN.append(list(messages))
        return await super()._agenerate(messages, *a, **kw)


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    get_stream_writer()({"progress": f"Looking up {city}"})
    return f"sunny in {city}"


def weather_graph(sub_live: list[bool] | None = None, checkpointer: Any = None) -> Any:
    model = ToolFake(
        responses=[
            AIMessage(
                content="",
                tool_calls=[
                    {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}},
                    {"id": "c2", "name": "get_weather", "args": {"city": "Rome"}},
                ],
                usage_metadata={"input_tokens": 10, "output_tokens": 4, "total_tokens": 14},
            ),
            AIMessage(
                content="Sunny in both.",
                usage_metadata={"input_tokens": 30, "output_tokens": 5, "total_tokens": 35},
            ),
        ]
    )
    helper_model = GenericFakeChatModel(messages=iter(["The research says it is summer"]))

    async def helper(state: MessagesState) -> dict[str, Any]:
        reply = await helper_model.ainvoke(state["messages"])
        if sub_live is not None:
            sub_live.append(True)  # the helper's model has finished
        return {"messages": [reply]}

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    sub = StateGraph(MessagesState)
    sub.add_node("helper", helper)
    sub.add_edge(START, "helper")
    g = StateGraph(MessagesState)
    g.add_node("research", sub.compile())
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([get_weather]))
    g.add_edge(START, "research")
    g.add_edge("research", "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


async def test_transcript_equals_the_graphs_final_state() -> None:
    graph = weather_graph(checkpointer=InMemorySaver())
    req = request("Weather?", session="s1")
    msgs, t = await run(responder_for(graph), req)
    thread = {"configurable": {"thread_id": thread_id(req)}}  # of (sender, session)
    final = (await graph.aget_state(thread)).values["messages"]
    ais = [m for m in final if m.type == "ai"]
    tools = [m for m in final if m.type == "tool"]
    assert t.text() == "".join(str(m.content) for m in ais)
    calls = of_type(t, "tool_call")
    assert [(c.props["id"], c.props["name"], json.loads(c.props["arguments"])) for c in calls] == [
        (c["id"], c["name"], c["args"]) for c in ais[1].tool_calls
    ]
    results = of_type(t, "tool_result")
    assert [(r.props["call_id"], r.props["name"], r.props["content"]) for r in results] == [
        (m.tool_call_id, m.name, m.content) for m in tools
    ]
    assert [m.props["message"] for m in of_type(t, "loading")] == [
        "Looking up Paris",
        "Looking up Rome",
    ]
    starts = block_starts(msgs)
    agent = next(b for b in starts if b["type"] == "agent")
    assert agent["label"] == agent["agent_name"] == "research"
    inner = next(b for b in starts if b.get("parent_block_id") == agent["block_id"])
    assert (inner["type"], inner["label"]) == ("llm", "helper")
    assert [b["label"] for b in starts if b["type"] == "llm"] == ["helper", "agent", "agent"]
    usage = stream_end(msgs)["usage"]
    assert usage["prompt_tokens"] == sum(
        m.usage_metadata["input_tokens"] for m in ais if m.usage_metadata
    )
    assert usage["total_tokens"] == sum(
        m.usage_metadata["total_tokens"] for m in ais if m.usage_metadata
    )
    assert stream_end(msgs)["status"] == "completed"


async def test_subgraph_text_streams_live() -> None:
    done: list[bool] = []
    seen_while_running: list[bool] = []

    async def sink(m: Message) -> None:
        if m.type == "text" and m.delta and not seen_while_running:
            seen_while_running.append(not done)

    async with StreamWriter(sink) as out:
        await responder(weather_graph(done))(request("q"), out)
    assert seen_while_running == [True]


async def test_history_reaches_the_messages_state() -> None:
    SEEN.clear()
    model = ToolFake(responses=[AIMessage(content="You said hi.")])

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    _, t = await run(
        responder(g.compile()),
        request("What did I say?", history=(("user", "hi"), ("assistant", "hello"))),
    )
    assert t.text() == "You said hi."
    assert [(m.type, m.content) for m in SEEN[0]] == [
        ("human", "hi"),
        ("ai", "hello"),
        ("human", "What did I say?"),
    ]


async def test_three_turns_remember_through_the_checkpointer() -> None:
    async def echo(state: MessagesState) -> dict[str, Any]:
        said = [m.content for m in state["messages"] if m.type == "human"]
        return {"messages": [AIMessage(content=" | ".join(str(s) for s in said))]}

    g = StateGraph(MessagesState)
    g.add_node("echo", echo)
    g.add_edge(START, "echo")
    graph = g.compile(checkpointer=InMemorySaver())
    texts = []
    for q in ("one", "two", "three"):
        _, t = await run(responder(graph), request(q, session="conv"))
        texts.append(t.text())
    assert texts[-1] == "one | two | three"


async def test_interrupt_asks_and_the_next_message_resumes() -> None:
    async def approve(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"question": "Send the email?"})
        return {"messages": [AIMessage(content=f"You answered {answer}.")]}

    g = StateGraph(MessagesState)
    g.add_node("approve", approve)
    g.add_edge(START, "approve")
    graph = g.compile(checkpointer=InMemorySaver())
    msgs, t = await run(responder(graph), request("email Bob", session="hitl"))
    [asked] = of_type(t, "user_input")
    assert json.loads(asked.props["content"]) == {"question": "Send the email?"}
    assert stream_end(msgs)["status"] == "completed" and t.text() == ""
    msgs, t = await run(responder(graph), request("yes", session="hitl"))
    assert t.text() == "You answered yes."


async def test_model_error_mid_stream_is_an_error_message() -> None:
    model = FakeListChatModel(responses=["alpha beta gamma delta"], error_on_chunk_number=3)

    async def agent(state: MessagesState) -> dict[str, Any]:
        chunks = [c async for c in model.astream(state["messages"])]
        return {"messages": [AIMessage(content="".join(str(c.content) for c in chunks))]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    msgs, t = await run(responder(g.compile()), request("q"))
    assert stream_end(msgs)["status"] == "error"
    assert t.text() == "alp" and of_type(t, "error")
    assert all(b.status == "error" for b in t.blocks)


async def test_cancel_reaches_the_running_node() -> None:
    cancelled = asyncio.Event()
    started = asyncio.Event()

    async def slow(state: MessagesState) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    g = StateGraph(MessagesState)
    g.add_node("slow", slow)
    g.add_edge(START, "slow")
    got: list[Message] = []

    async def sink(m: Message) -> None:
        got.append(m)

    async def body() -> None:
        async with StreamWriter(sink) as out:
            await responder(g.compile())(request("q"), out)

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
        server = pair.add("langgraph source server", StreamingChat(responder_for(weather_graph())))
        client_chat = StreamingChat()
        client = pair.add("langgraph source client", client_chat)
        reply = await client_chat.ask(client._build_context(), server.address, "Weather?")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed
        assert t.text() == "The research says it is summerSunny in both."
        assert [b.label for b in t.blocks if b.type == "agent"] == ["research"]
        assert [m.props["name"] for m in t.messages if m.type == "tool_result"] == [
            "get_weather",
            "get_weather",
        ]
    finally:
        await pair.close()


class StreamingToolModel(GenericFakeChatModel):
    """A chat model streaming reasoning, text and two parallel tool calls chunk by chunk, usage on
    its last chunk: the shapes a real provider's LangChain integration streams."""

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        from langchain_core.messages import AIMessageChunk
        from langchain_core.outputs import ChatGenerationChunk

        if any(m.type == "tool" for m in messages):
            parts: list[AIMessageChunk] = [AIMessageChunk(content=w) for w in ("Both ", "sunny.")]
            parts[-1].usage_metadata = {"input_tokens": 50, "output_tokens": 2, "total_tokens": 52}
        else:
            parts = [
                AIMessageChunk(content=[{"type": "reasoning", "reasoning": "Two cities, "}]),
                AIMessageChunk(content=[{"type": "reasoning", "reasoning": "two calls."}]),
                AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {"index": 0, "id": "c1", "name": "get_weather", "args": '{"city":'}
                    ],
                ),
                AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {"index": 1, "id": "c2", "name": "get_weather", "args": '{"city": "Rome"}'}
                    ],
                ),
                AIMessageChunk(
                    content="",
                    tool_call_chunks=[{"index": 0, "id": None, "name": None, "args": ' "Paris"}'}],
                ),
                AIMessageChunk(
                    content="",
                    usage_metadata={"input_tokens": 20, "output_tokens": 9, "total_tokens": 29},
                ),
            ]
        for p in parts:
            p.id = f"run-{len(messages)}"  # one id per model call
            chunk = ChatGenerationChunk(message=p)
            if run_manager is not None:
                await run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk

    def bind_tools(self, tools: Any, **kw: Any) -> StreamingToolModel:
        return self


async def test_streamed_parallel_tool_calls_reasoning_and_usage() -> None:
    model = StreamingToolModel(messages=iter(()))

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([get_weather]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=InMemorySaver())
    req = request("Paris and Rome?", session="p")
    msgs, t = await run(responder(graph), req)
    final = (await graph.aget_state({"configurable": {"thread_id": thread_id(req)}})).values[
        "messages"
    ]
    ais = [m for m in final if m.type == "ai"]
    assert contents(t, "thinking") == ["Two cities, two calls."]
    calls = of_type(t, "tool_call")
    assert [(c.props["id"], json.loads(c.props["arguments"])) for c in calls] == [
        (c["id"], c["args"]) for c in ais[0].tool_calls
    ]
    # the first call's arguments streamed in two deltas, interleaved with the second call
    first_args = [
        m for m in msgs if m.type == "tool_call" and m.delta and m.message_id == calls[0].message_id
    ]
    assert [m.props["arguments"] for m in first_args] == [' "Paris"}']
    assert t.text() == "Both sunny."
    u = stream_end(msgs)["usage"]
    assert u["total_tokens"] == sum(m.usage_metadata["total_tokens"] for m in ais) == 81


async def test_what_is_not_mapped_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    async def odd(state: MessagesState) -> dict[str, Any]:
        get_stream_writer()({"step": 1, "of": 3})  # not a progress line: an event message
        return {
            "messages": [
                AIMessage(
                    content=[
                        {"type": "image_url", "image_url": "x"},
                        {"type": "text", "text": "done"},
                    ]
                )
            ]
        }

    g = StateGraph(MessagesState)
    g.add_node("odd", odd)
    g.add_edge(START, "odd")
    with caplog.at_level("WARNING", logger="agent_stream.sources"):
        _, t = await run(responder(g.compile()), request("q"))
    assert t.text() == "done"
    [ev] = [m for m in t.messages if m.type == "event"]
    assert ev.props["data"] == {"step": 1, "of": 3}
    assert "langgraph content block 'image_url' not mapped" in caplog.text


async def test_interrupt_and_resume_over_real_agents() -> None:
    from inprocess_agents import Pair

    from agent_stream.uagents import StreamingChat

    async def approve(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("Send the email to Bob?")
        return {"messages": [AIMessage(content=f"Done: you said {answer}.")]}

    g = StateGraph(MessagesState)
    g.add_node("approve", approve)
    g.add_edge(START, "approve")
    pair = Pair()
    try:
        server = pair.add(
            "langgraph hitl server",
            StreamingChat(responder_for(g.compile(checkpointer=InMemorySaver()))),
        )
        client_chat = StreamingChat()
        client = pair.add("langgraph hitl client", client_chat)
        ctx = client._build_context()  # one context: one session, one LangGraph thread
        reply = await client_chat.ask(ctx, server.address, "email Bob")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed
        assert [m.props["content"] for m in t.messages if m.type == "user_input"] == [
            "Send the email to Bob?"
        ]
        reply = await client_chat.ask(ctx, server.address, "yes")
        t = await asyncio.wait_for(reply.wait(), 20)
        assert reply.completed and t.text() == "Done: you said yes."
    finally:
        await pair.close()


async def test_parallel_interrupts_are_all_asked_and_all_resumed() -> None:
    async def ask_one(state: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt(f"Approve {state['item']}?")
        return {"messages": [AIMessage(content=f"{state['item']}: {answer}. ")]}

    def fan_out(state: MessagesState) -> list[Send]:
        return [Send("ask_one", {"item": i}) for i in ("A", "B")]

    g = StateGraph(MessagesState)
    g.add_node("ask_one", ask_one)
    g.add_conditional_edges(START, fan_out, ["ask_one"])
    graph = g.compile(checkpointer=InMemorySaver())
    _, t = await run(responder(graph), request("go", session="fan"))
    assert sorted(m.props["content"] for m in of_type(t, "user_input")) == [
        "Approve A?",
        "Approve B?",
    ]
    _, t = await run(responder(graph), request("ok", session="fan"))
    assert sorted(contents(t, "text")) == ["A: ok. ", "B: ok. "]
